package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config is one nemesis run.
type Config struct {
	Nodes       int
	Duration    time.Duration // of the faulty phase
	Seed        int64
	Dir         string // data, node logs
	Binary      string
	IP          string
	ExactlyOnce bool
	Workload    WorkloadConfig
	Log         *slog.Logger
	// Sampler, when set, is started with the cluster and stopped before the
	// read-back (the soak's resource sampling).
	Sampler func(ctx context.Context, c *Cluster, h *History, faults func() int)
	// Faults are the fault kinds scheduled (default: DefaultFaults).
	Faults []string
	// NoFaults runs the workload without the nemesis (a control run).
	NoFaults bool
}

// Result is what a run did and found.
type Result struct {
	Seed       int64
	Nodes      int
	Durability string
	Elapsed    time.Duration
	Faults     []FaultEvent
	FaultCount string
	Summary    Summary
	Check      *CheckReport
	LogScan    []string
	// Violations gathers every checker failure: during the run, at the
	// read-back, and in the node logs.
	Violations []string
}

// DefaultFaults is every fault kind the durability contract covers: a
// SIGKILL of every node at once only when acknowledged writes are
// persisted (durability = replicated acknowledges once a quorum holds a
// write in memory, which a simultaneous crash of all nodes loses by
// contract).
func DefaultFaults(durability string) []string {
	var out []string
	for _, k := range FaultKinds() {
		if k == "restart-all" && durability != "persisted" {
			continue
		}
		out = append(out, k)
	}
	return out
}

// DefaultWorkload is the mix for n nodes.
func DefaultWorkload(n int) WorkloadConfig {
	return WorkloadConfig{Partitions: 3, LeaderProducers: 3, SDKProducers: 2, Consumers: 2,
		BatchMessagesMax: 5, PayloadBytes: 64, Pace: 5 * time.Millisecond}
}

// Run starts a cluster, runs the workload under the nemesis for
// cfg.Duration, heals, lets the workload run healed for a moment, stops
// it, waits for the replicas to converge and checks everything. The
// cluster is always stopped before Run returns.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	log := cfg.Log
	start := time.Now()
	res := &Result{Seed: cfg.Seed, Nodes: cfg.Nodes, Durability: cfg.Workload.Durability}
	hist := NewHistory(cfg.Workload.PayloadBytes)
	c, err := StartCluster(ClusterConfig{N: cfg.Nodes, IP: cfg.IP, Dir: cfg.Dir, Binary: cfg.Binary, Seed: cfg.Seed, Log: log})
	if err != nil {
		return res, err
	}
	defer func() {
		c.Close()
		for _, n := range c.Nodes {
			n.CloseLog()
		}
	}()
	for _, n := range c.Nodes {
		n.OnUnexpectedExit = func(n *Node, err error) {
			hist.Violate("node %d exited on its own (incarnation %d): %v (log %s)", n.ID, n.Incarnation(), err, n.LogPath)
		}
	}
	cfg.Workload.ExactlyOnce = cfg.ExactlyOnce
	w := NewWorkload(cfg.Workload, c, hist, log)
	if err := w.Setup(ctx, 60*time.Second); err != nil {
		return res, err
	}
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	kinds := cfg.Faults
	if len(kinds) == 0 {
		kinds = DefaultFaults(cfg.Workload.Durability)
	}
	nem := NewNemesis(c, cfg.Seed, kinds, hist, log)
	samplerDone := make(chan struct{})
	if cfg.Sampler != nil {
		go func() {
			defer close(samplerDone)
			cfg.Sampler(sctx, c, hist, nem.Total)
		}()
	} else {
		close(samplerDone)
	}
	w.Start(wctx)

	if cfg.NoFaults {
		sleepCtx(ctx, cfg.Duration)
	} else {
		nem.Run(ctx, cfg.Duration)
	}
	nem.HealAll()
	log.Info("nemesis: healed; workload continues healed for a moment")
	sleepCtx(ctx, 5*time.Second)
	stopWorkload()
	w.Wait()
	stopSampler()
	<-samplerDone
	res.Faults, res.FaultCount = nem.Events(), nem.CountsString()
	res.Summary = hist.Summary()
	log.Info("nemesis: workload stopped", "summary", res.Summary.String(), "faults", res.FaultCount)

	// Every node running, links clear: converge, read back, check.
	nem.HealAll()
	converged, convErr := WaitConverged(c, cfg.Workload.Partitions, 90*time.Second)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	logs, readErr := ReadBack(rctx, c, hist, cfg.Workload.Partitions)
	offsets, offErr := finalOffsets(rctx, c, cfg.Workload.Partitions)
	res.Check = Check(hist, logs, offsets, cfg.Workload.Partitions, cfg.ExactlyOnce)
	res.Check.ConvergedAfter = converged
	res.LogScan = ScanLogs(c)
	res.Violations = append(res.Violations, hist.Violations()...)
	res.Violations = append(res.Violations, res.LogScan...)
	for _, e := range []error{convErr, readErr, offErr} {
		if e != nil {
			res.Violations = append(res.Violations, e.Error())
		}
	}
	res.Violations = append(res.Violations, res.Check.Violations...)
	res.Elapsed = time.Since(start)
	return res, nil
}

// Report is a human-readable account of a run.
func (r *Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis run: nodes=%d durability=%s seed=%d elapsed=%s %s\n", r.Nodes, r.Durability, r.Seed, r.Elapsed.Round(time.Second), r.FaultCount)
	fmt.Fprintf(&b, "  clients: %s\n", r.Summary)
	if r.Check != nil {
		fmt.Fprintf(&b, "  read-back: messages per partition %v, extra copies %d (each after a failed attempt), unacknowledged batches stored %d / not stored %d, converged after %s\n",
			r.Check.Messages, r.Check.Duplicates, r.Check.UnknownStored, r.Check.UnknownMissing, r.Check.ConvergedAfter.Round(100*time.Millisecond))
	}
	if len(r.Summary.CrossRestartOffsetDrops) > 0 {
		fmt.Fprintf(&b, "  consumer offset lower on a node after its restart than before (first %d): %v\n", len(r.Summary.CrossRestartOffsetDrops), r.Summary.CrossRestartOffsetDrops)
	}
	fmt.Fprintf(&b, "  violations: %d %s\n", len(r.Violations), categories(r.Violations))
	for i, v := range r.Violations {
		if i == 30 {
			fmt.Fprintf(&b, "    ... %d more\n", len(r.Violations)-30)
			break
		}
		fmt.Fprintf(&b, "    %s\n", v)
	}
	return b.String()
}

// Schedule is the fault schedule, one line per fault.
func (r *Result) Schedule() string {
	var b strings.Builder
	for _, e := range r.Faults {
		fmt.Fprintf(&b, "%s\n", e)
	}
	return b.String()
}

// categories counts violations by their leading words (up to the first
// colon), e.g. "acknowledged message lost=12".
func categories(vs []string) string {
	counts := map[string]int{}
	var order []string
	for _, v := range vs {
		k := v
		if i := strings.IndexAny(k, ":("); i > 0 {
			k = k[:i]
		}
		k = strings.TrimSpace(k)
		if len(k) > 48 {
			k = k[:48]
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("[%s]=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}
