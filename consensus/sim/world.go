package sim

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
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

// Coverage counts how often the faults and protocol paths a sweep is
// meant to exercise actually happened.
type Coverage struct {
	CrashesMidPersist uint64 // crash with a Ready partly durable
	TornRecords       uint64 // journal records left torn by a crash
	CrashesMidSend    uint64
	Restarts          uint64
	StateTransfers    uint64 // snapshots installed from Ready.Snapshot
	Checkpoints       uint64
	Partitions        uint64
	Clogs             uint64
	Filters           uint64
	Dropped           uint64 // packets lost (loss, partition, filter)
	Duplicated        uint64
	Evicted           uint64 // packets evicted from full links
	CachedReplies     uint64 // deduplicated retries answered from the reply ring
	Abandoned         uint64 // client requests given up (eviction, response budget)
}

func (c *Coverage) add(o Coverage) {
	c.CrashesMidPersist += o.CrashesMidPersist
	c.TornRecords += o.TornRecords
	c.CrashesMidSend += o.CrashesMidSend
	c.Restarts += o.Restarts
	c.StateTransfers += o.StateTransfers
	c.Checkpoints += o.Checkpoints
	c.Partitions += o.Partitions
	c.Clogs += o.Clogs
	c.Filters += o.Filters
	c.Dropped += o.Dropped
	c.Duplicated += o.Duplicated
	c.Evicted += o.Evicted
	c.CachedReplies += o.CachedReplies
	c.Abandoned += o.Abandoned
}

// Result summarises one run.
type Result struct {
	Seed         uint64
	Scenario     Scenario
	Ticks        uint64
	CommittedOps uint64 // over both groups
	ViewChanges  uint64 // highest view reached, summed over groups
	Crashes      uint64
	Coverage     Coverage
	Acks         uint64
	Events       uint64
	TraceHash    uint64
	Violations   []Violation
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

type clientPacket struct {
	deliverTick uint64
	seq         uint64
	client      int
	node        int // request: destination; reply: unused
	req         consensus.Request
	rep         consensus.Reply
	isReply     bool
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
				if nd.replicas[gi].store.holds(op, checksum) {
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
		PrepareRetransmitTicks:    25,
		CommitBroadcastTicks:      50,
		HeartbeatTimeoutTicks:     500,
		ViewChangeRetransmitTicks: 50,
		ViewChangeStatusTicks:     500,
		RequestStartViewTicks:     100,
		ViewProbeAttemptsMax:      5,
		RepairRetryTicks:          100,
		RepairGapDebounceTicks:    50,
		RepairChunkMax:            128,
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
	end := uint64(scn.FaultTicks + scn.LivenessTicks + scn.ConvergenceTicks)
	for w.now = 1; w.now <= end; w.now++ {
		if w.now == uint64(scn.FaultTicks)+1 {
			w.heal()
		}
		w.step()
		if len(w.violations) > 0 {
			return
		}
		if w.healed {
			if w.now == w.healTick+uint64(scn.LivenessTicks) {
				w.checkLiveness()
			}
			if w.allClientsDone() && w.converged() {
				w.checkClientTables()
				return
			}
		}
	}
	w.now = end
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
	if !w.healed && w.rng.chance(w.scn.CrashPerTick) {
		i := w.rng.intn(len(w.nodes))
		if w.canCrash(i) {
			w.crashNode(i, "between events")
		}
	}
	for _, i := range w.rng.r.Perm(len(w.nodes)) {
		nd := w.nodes[i]
		for _, d := range nd.replicas {
			if nd.up && d.g != nil {
				w.setClock(d)
				d.g.Tick()
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
		w.traceMessage(evDeliver, &p.msg)
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

func (w *world) replicaFor(nd *node, group uint64) *replicaDriver {
	for gi, gs := range w.groups {
		if gs.id == group {
			return nd.replicas[gi]
		}
	}
	return nil
}

func (w *world) canCrash(i int) bool {
	if w.healed || !w.nodes[i].up {
		return false
	}
	down := 0
	for _, nd := range w.nodes {
		if !nd.up {
			down++
		}
	}
	return down < w.scn.MaxDown
}

// faultyCrashFactor: nodes with faulty storage crash this much more often
// while carrying out a Ready, so torn tails and lost unsynced writes are
// common rather than rare.
const faultyCrashFactor = 4

// planCrash decides whether, and where, the node dies while carrying out
// the Ready it is about to process.
func (w *world) planCrash(i, writes, messages int) crashPlan {
	p := w.scn.CrashPerReady
	if w.scn.FaultyStorage[i] {
		p *= faultyCrashFactor
	}
	if p == 0 || !w.canCrash(i) || !w.rng.chance(p) {
		return crashPlan{}
	}
	if w.scn.FaultyStorage[i] && writes > 0 && w.rng.chance(0.6) {
		// Lost unsynced writes: a prefix of the Ready's writes survives, and
		// the next journal record may be torn.
		return crashPlan{point: crashMidPersist, at: w.rng.intn(writes), torn: w.rng.chance(0.5)}
	}
	switch w.rng.intn(4) {
	case 0:
		if writes == 0 {
			return crashPlan{point: crashBeforeSend}
		}
		return crashPlan{point: crashMidPersist, at: 0} // nothing of it durable
	case 1:
		return crashPlan{point: crashBeforeSend}
	case 2:
		if messages == 0 {
			return crashPlan{point: crashBeforeAdvance}
		}
		return crashPlan{point: crashMidSend, at: w.rng.intn(messages)}
	default:
		return crashPlan{point: crashBeforeAdvance}
	}
}

func (w *world) crashNode(i int, why string) {
	nd := w.nodes[i]
	nd.up = false
	for gi, d := range nd.replicas {
		d.g = nil
		d.pending = nil
		w.checkers[gi].onCrash(i)
	}
	nd.restartTick = w.now + 1 + uint64(w.rng.expTicks(w.scn.DownTicksMean, 20*int(w.scn.DownTicksMean)))
	w.crashes++
	w.trace(evCrash, i, -1, nd.restartTick, 0)
	w.logf("crash node %d (%s), restart at %d", i, why, nd.restartTick)
}

func (w *world) restartNode(i int) {
	nd := w.nodes[i]
	for _, d := range nd.replicas {
		if err := d.start(true); err != nil {
			w.fail(d.group, i, checkContract, "%v", err)
			return
		}
	}
	nd.up = true
	w.cov.Restarts++
	w.trace(evRestart, i, -1, 0, 0)
	w.logf("restart node %d", i)
	for _, d := range nd.replicas {
		if nd.up && d.g != nil {
			d.drain()
		}
	}
}

// findPrimary is the client's leader lookup: usually someone claiming to
// be primary (possibly a stale one), sometimes any node.
func (w *world) findPrimary(group int) int {
	var claim []int
	for i, nd := range w.nodes {
		if nd.up && nd.replicas[group].g != nil && nd.replicas[group].g.IsPrimary() {
			claim = append(claim, i)
		}
	}
	if len(claim) > 0 && w.rng.chance(0.8) {
		return claim[w.rng.intn(len(claim))]
	}
	return w.rng.intn(len(w.nodes))
}

func (w *world) clientLatency() uint64 { return uint64(w.rng.between(1, 3)) }

func (w *world) sendRequest(c *simClient, to int, req consensus.Request) {
	if w.rng.chance(w.scn.ClientDropProbability) {
		return
	}
	w.clientSeq++
	w.clientQueue = append(w.clientQueue, clientPacket{deliverTick: w.now + w.clientLatency(), seq: w.clientSeq, client: c.idx, node: to, req: req})
}

func (w *world) sendReply(client int, rep consensus.Reply) {
	if w.rng.chance(w.scn.ClientDropProbability) {
		return
	}
	w.clientSeq++
	w.clientQueue = append(w.clientQueue, clientPacket{deliverTick: w.now + w.clientLatency(), seq: w.clientSeq, client: client, rep: rep, isReply: true})
}

func (w *world) deliverClientPackets() {
	var due []clientPacket
	kept := w.clientQueue[:0]
	for _, p := range w.clientQueue {
		if p.deliverTick <= w.now {
			due = append(due, p)
		} else {
			kept = append(kept, p)
		}
	}
	w.clientQueue = kept
	slices.SortFunc(due, func(a, b clientPacket) int {
		if a.deliverTick != b.deliverTick {
			return int(a.deliverTick) - int(b.deliverTick)
		}
		return int(a.seq) - int(b.seq)
	})
	for _, p := range due {
		c := w.clients[p.client]
		if p.isReply {
			c.onReply(w, p.rep)
			continue
		}
		nd := w.nodes[p.node]
		d := nd.replicas[c.group]
		if !nd.up || d.g == nil {
			continue
		}
		d.pending[p.req.Tag] = proposal{client: c.idx, clientID: c.id, request: p.req.Request, op: p.req.Operation, bodySum: xxh3.Hash(p.req.Body)}
		w.trace(evPropose, p.node, c.group, p.req.Tag, p.req.Request)
		d.g.Propose(p.req)
		d.drain()
	}
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
