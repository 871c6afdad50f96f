package sim

import (
	"fmt"
	"io"
	"math"
	"runtime/debug"

	"github.com/lodestream/lodestream/consensus"
)

// Factory builds replicas; tests swap it to drive a deliberately broken core.
type Factory struct {
	New     func(cfg consensus.Config) (consensus.Group, error)
	Restart func(cfg consensus.Config, st consensus.Restored) (consensus.Group, error)
}

// RunOptions tune one run beyond what the seed decides.
type RunOptions struct {
	Factory    Factory
	FaultTicks int             // > 0 overrides the scenario's faulty-phase length
	Verbose    io.Writer       // non-nil: print the event trace
	Mutate     func(*Scenario) // adjust the scenario after it is drawn
	// SkipQuorumAudit turns off the commit-without-quorum audit so a test
	// can prove the end-to-end checks (agreement, acknowledgements) catch an
	// unsafe core on their own.
	SkipQuorumAudit bool
	// TickClock withholds the wall clock (SetNow) so the core stamps
	// prepares from its tick counter alone.
	TickClock bool
}

const violationsMax = 20 // stop collecting after this many

type groupSpec struct {
	name           string
	id             uint64
	clientTableMax uint32
}

type node struct {
	up          bool
	restartTick uint64
	replicas    []*replicaDriver // one per group
}

// world is one deterministic run: one goroutine, virtual ticks, one PRNG.
type world struct {
	scn     Scenario
	rng     *rng
	factory Factory
	now     uint64
	verbose io.Writer

	net      *network
	groups   []groupSpec
	nodes    []*node
	checkers []*groupChecker
	clients  []*simClient

	clientQueue []clientPacket
	clientSeq   uint64
	tagSeq      uint64

	// Each node has a wall clock (µs) with a fixed skew; the core stamps
	// prepare timestamps from it (SetNow), as the node does.
	clockSkewMicros []int64
	tickClock       bool // no wall clock: the core falls back to ticks

	healed   bool
	healTick uint64
	// livenessDeadline and settleDeadline are set at the heal and when
	// the workload settles (bounds.go); endTick is the run's last tick.
	livenessDeadline uint64
	settleDeadline   uint64
	settled          bool
	settleWindow     uint64
	endTick          uint64
	// storageOverTolerance: at the heal some group had more replicas
	// still lost than it tolerates (storagelost.go): liveness and
	// convergence are not required.
	storageOverTolerance bool

	violations []Violation
	crashes    uint64
	cov        Coverage
	traceHash  uint64
	events     uint64
}

func newWorld(scn Scenario, opts RunOptions) *world {
	w := &world{
		scn:       scn,
		rng:       newRNG(scn.Seed),
		factory:   opts.Factory,
		verbose:   opts.Verbose,
		traceHash: fnvOffset64,
	}
	w.net = newNetwork(scn.Replicas, scn.Network, w.rng)
	w.tickClock = opts.TickClock
	for i := 0; i < scn.Replicas; i++ {
		w.clockSkewMicros = append(w.clockSkewMicros, int64(w.rng.between(-clockSkewMaxMicros, clockSkewMaxMicros)))
	}
	w.net.onEvent = w.logf
	w.net.primary = func() int {
		for i, nd := range w.nodes {
			if g := nd.replicas[0].g; nd.up && g != nil && g.IsPrimary() {
				return i
			}
		}
		return -1
	}
	w.groups = []groupSpec{
		{name: "metadata", id: 1 << 63, clientTableMax: scn.ClientTableMax},
		{name: "partition", id: 7, clientTableMax: 0},
	}
	report := func(v Violation) {
		if len(w.violations) < violationsMax {
			w.violations = append(w.violations, v)
		}
		w.logf("VIOLATION %s", v)
	}
	cluster := consensus.Uint128{Lo: scn.Seed, Hi: 0xc1}
	for gi, gs := range w.groups {
		c := newGroupChecker(gs.name, scn.Replicas, gs.clientTableMax > 0, &w.now, report)
		c.replicationQuorum = consensus.ReplicationQuorum(scn.Replicas)
		if opts.SkipQuorumAudit {
			c.replicationQuorum = 0
		}
		c.durableCopies = func(op, checksum uint64) int {
			copies := 0
			for _, nd := range w.nodes {
				if st := &nd.replicas[gi].store; st.holds(op, checksum) || st.lostToFault(op, checksum) {
					copies++
				}
			}
			return copies
		}
		w.checkers = append(w.checkers, c)
	}
	for i := 0; i < scn.Replicas; i++ {
		nd := &node{}
		for gi, gs := range w.groups {
			nd.replicas = append(nd.replicas, &replicaDriver{
				w: w, group: gi, node: i,
				cfg: replicaConfig(scn, gs, uint8(i), cluster),
				// Only partition groups are `replicated`: the metadata WAL
				// syncs every append and is never amnesiac.
				store: storage{lazySync: scn.SyncEveryTicks > 0 && gs.clientTableMax == 0},
			})
		}
		w.nodes = append(w.nodes, nd)
	}
	for gi, gs := range w.groups {
		for k := 0; k < scn.ClientsPerGroup; k++ {
			idx := len(w.clients)
			w.clients = append(w.clients, &simClient{
				idx: idx, group: gi, dedup: gs.clientTableMax > 0,
				id:     consensus.Uint128{Lo: uint64(idx+1)<<8 | uint64(gi), Hi: scn.Seed},
				target: w.rng.intn(scn.Replicas),
			})
		}
	}
	return w
}

func replicaConfig(scn Scenario, gs groupSpec, id uint8, cluster consensus.Uint128) consensus.Config {
	return consensus.Config{
		ReplicaID:                 id,
		ReplicaCount:              uint8(scn.Replicas),
		GroupID:                   gs.id,
		Cluster:                   cluster,
		PrepareRetransmitTicks:    scn.Timing.PrepareRetransmit,
		CommitBroadcastTicks:      scn.Timing.CommitBroadcast,
		HeartbeatTimeoutTicks:     scn.Timing.HeartbeatTimeout,
		ViewChangeRetransmitTicks: scn.Timing.ViewChangeRetransmit,
		ViewChangeStatusTicks:     scn.Timing.ViewChangeStatus,
		RequestStartViewTicks:     scn.Timing.RequestStartView,
		ViewProbeAttemptsMax:      scn.Timing.ViewProbeAttemptsMax,
		RepairRetryTicks:          scn.Timing.RepairRetry,
		RepairGapDebounceTicks:    scn.Timing.RepairGapDebounce,
		RepairChunkMax:            scn.Timing.RepairChunkMax,
		PrepareQueueDepth:         scn.PrepareQueueDepth,
		JournalSlots:              scn.JournalSlots,
		ClientTableMax:            gs.clientTableMax,
		TestingReplicationQuorum:  scn.TestingReplicationQuorum,
	}
}

func (w *world) fail(group, replica int, check, format string, args ...any) {
	name := "-"
	if group >= 0 {
		name = w.groups[group].name
	}
	v := Violation{Tick: w.now, Group: name, Replica: replica, Check: check, Detail: fmt.Sprintf(format, args...)}
	if len(w.violations) < violationsMax {
		w.violations = append(w.violations, v)
	}
	w.logf("VIOLATION %s", v)
}

// Run executes one seed and returns what happened. A panic in the core is
// reported as a violation, not a crash of the test binary.
func Run(seed uint64, opts RunOptions) (res Result) {
	scn := NewScenario(seed)
	if opts.Mutate != nil {
		opts.Mutate(&scn)
	}
	if opts.FaultTicks > 0 {
		scn.FaultTicks = opts.FaultTicks
	}
	w := newWorld(scn, opts)
	defer func() {
		if r := recover(); r != nil {
			w.fail(-1, -1, "panic", "%v\n%s", r, debug.Stack())
		}
		res = w.result()
	}()
	w.logf("scenario seed=%d %s", seed, scn)
	w.boot()
	if len(w.violations) > 0 {
		return
	}
	w.endTick = math.MaxUint64
	for w.now = 1; w.now <= w.endTick; w.now++ {
		if w.now == uint64(scn.FaultTicks)+1 {
			w.heal()
		}
		w.step()
		if len(w.violations) > 0 {
			return
		}
		if w.healed {
			if w.now == w.livenessDeadline {
				w.checkLiveness()
			}
			if !w.settled && (w.allClientsDone() || w.now >= w.livenessDeadline) {
				// The workload settled: every replica must converge
				// within the convergence bound plus its catch-up.
				w.settled = true
				w.settleWindow = scn.convergenceBaseTicks() + scn.catchUpTicks(w.backlog())
				w.settleDeadline = w.now + w.settleWindow
				w.endTick = max(w.livenessDeadline, w.settleDeadline)
			}
			if w.allClientsDone() && w.converged() {
				w.checkClientTables()
				w.checkAnswered()
				return
			}
		}
	}
	w.now = w.endTick
	if !w.allClientsDone() {
		w.checkLiveness()
	} else {
		w.reportDivergence()
	}
	return
}

func (w *world) result() Result {
	r := Result{
		Seed: w.scn.Seed, Scenario: w.scn, Ticks: w.now, Crashes: w.crashes,
		Events: w.events, TraceHash: w.traceHash, Violations: w.violations,
	}
	for _, c := range w.checkers {
		w.cov.LostOps += c.lostOps
		r.CommittedOps += c.maxCommitted()
		maxView := uint32(0)
		for _, rw := range c.replicas {
			maxView = max(maxView, rw.view, rw.durable.View)
		}
		r.ViewChanges += uint64(maxView)
	}
	for _, c := range w.clients {
		r.Acks += c.acks
		w.cov.Abandoned += c.abandoned
	}
	st := w.net.stats
	w.cov.Partitions, w.cov.Clogs, w.cov.Filters = st.Partitions, st.Clogs, st.Filters
	w.cov.Dropped, w.cov.Duplicated, w.cov.Evicted = st.Dropped, st.Duplicated, st.Evicted
	for _, nd := range w.nodes {
		for _, d := range nd.replicas {
			w.cov.TornRecords += d.store.tornRecords
		}
	}
	r.Coverage = w.cov
	return r
}

func (w *world) boot() {
	for i, nd := range w.nodes {
		for _, d := range nd.replicas {
			if err := d.start(false); err != nil {
				w.fail(d.group, i, checkContract, "%v", err)
				return
			}
		}
		nd.up = true
	}
	for _, nd := range w.nodes {
		for _, d := range nd.replicas {
			if nd.up {
				d.drain()
			}
		}
	}
}

// heal ends the faulty phase: every fault off, every node up.
func (w *world) heal() {
	w.healed = true
	w.healTick = w.now
	if w.scn.RackPowerLossAtHeal {
		// Before the backlog is measured: every replica then has to
		// catch up from its synced state, and the bound must allow it.
		w.rackPowerLoss("rack power loss at the heal")
	}
	if w.storageOverToleranceAtHeal() {
		w.storageOverTolerance = true
		w.cov.StorageOverToleranceRuns++
		w.logf("heal: more replicas lost than a group tolerates; liveness and convergence not required")
	}
	// The backlog is measured before down nodes restart (a down node
	// counts as holding nothing): the worst case repair must cover.
	w.livenessDeadline = w.now + w.scn.livenessBaseTicks() + w.scn.catchUpTicks(w.backlog())
	w.net.heal()
	w.scn.ClientDropProbability = 0
	w.trace(evHeal, -1, -1, 0, 0)
	w.logf("heal: all faults off, restarting down nodes")
	for i, nd := range w.nodes {
		if !nd.up {
			w.restartNode(i)
		}
	}
}

// step runs one tick of the whole world.
func (w *world) step() {
	w.net.tick(w.now)
	for i, nd := range w.nodes {
		if !nd.up && nd.restartTick <= w.now {
			w.restartNode(i)
		}
	}
	w.syncDue()
	w.maybePowerLoss()
	if !w.healed && w.rng.chance(w.scn.CrashPerTick) {
		i := w.rng.intn(len(w.nodes))
		if w.canCrash(i) {
			w.crashNode(i, "between events")
		}
	}
	if !w.healed && w.scn.HandoverPerTick > 0 && w.rng.chance(w.scn.HandoverPerTick) {
		w.handOver(w.rng.intn(len(w.nodes)), w.rng.intn(len(w.nodes)))
	}
	for _, i := range w.rng.r.Perm(len(w.nodes)) {
		nd := w.nodes[i]
		for _, d := range nd.replicas {
			if nd.up && d.g != nil && d.tick() {
				d.drain()
			}
		}
	}
	for _, p := range w.net.deliverDue() {
		nd := w.nodes[p.msg.To]
		if !nd.up {
			continue
		}
		d := w.replicaFor(nd, p.msg.Group)
		if d == nil || d.g == nil {
			continue
		}
		if int(p.msg.Kind) < len(w.cov.Delivered) {
			w.cov.Delivered[p.msg.Kind]++
		}
		w.traceMessage(evDeliver, &p.msg)
		d.catchUp()
		d.g.Step(p.msg)
		d.drain()
	}
	w.deliverClientPackets()
	for _, c := range w.clients {
		c.step(w)
	}
	for gi, c := range w.checkers {
		for i, nd := range w.nodes {
			if nd.up && nd.replicas[gi].g != nil {
				c.observe(i, nd.replicas[gi].g)
			}
		}
	}
}

// handOver asks node i's primaries to hand their groups to replica to;
// with to == i, node i's backups suspect their primary instead (what a
// resting group's driver does when the primary's node is gone).
func (w *world) handOver(i, to int) {
	nd := w.nodes[i]
	if !nd.up {
		return
	}
	if i == to {
		probe := w.rng.chance(0.5)
		for _, d := range nd.replicas {
			if d.g == nil {
				continue
			}
			d.catchUp()
			if probe && d.g.ProbePrimary() {
				w.logf("node %d probes its group's primary (view %d)", i, d.g.View())
				d.drain()
			} else if !probe && d.g.SuspectPrimary() {
				w.logf("node %d suspects its group's primary (view %d)", i, d.g.View())
				d.drain()
			}
		}
		return
	}
	for _, d := range nd.replicas {
		if d.g != nil {
			d.catchUp()
		}
		if d.g != nil && d.g.IsPrimary() && d.g.HandOver(uint8(to)) {
			w.logf("node %d hands its group over to replica %d (view %d)", i, to, d.g.View())
			d.drain()
		}
	}
}

func (w *world) replicaFor(nd *node, group uint64) *replicaDriver {
	for gi, gs := range w.groups {
		if gs.id == group {
			return nd.replicas[gi]
		}
	}
	return nil
}

const (
	clockEpochMicros   = 1_767_225_600_000_000 // 2026-01-01T00:00:00Z
	clockSkewMaxMicros = 2_000_000
	microsPerTick      = 10_000
)

// wallClock is implemented by a core that takes the node's wall clock for
// prepare timestamps.
type wallClock interface{ SetNow(micros uint64) }

// setClock hands the replica its node's wall clock for this tick.
func (w *world) setClock(d *replicaDriver) {
	if w.tickClock {
		return
	}
	if c, ok := d.g.(wallClock); ok {
		c.SetNow(uint64(clockEpochMicros + int64(w.now)*microsPerTick + w.clockSkewMicros[d.node]))
	}
}
