package sim

import (
	"slices"

	"github.com/lodestream/lodestream/consensus"
)

// NetworkOptions shape the replica-to-replica network of one run.
type NetworkOptions struct {
	LatencyMinTicks      int
	LatencyMeanTicks     int     // mean of the exponential part above the minimum
	DropProbability      float64 // per packet, at send
	DuplicateProbability float64 // per packet: a second copy with its own latency
	ReorderProbability   float64 // per packet: extra jitter so later packets overtake it
	LinkCapacityMax      int     // packets queued per directed link; a full link evicts a random one

	// Partitions come and go. A partition lasts at least
	// PartitionStabilityTicks, and so does a healthy period.
	PartitionProbability    float64 // per tick, when healthy and stable
	UnpartitionProbability  float64 // per tick, when partitioned and stable
	PartitionStabilityTicks int
	AsymmetricProbability   float64 // chance a new partition blocks one direction only

	// Clogs hold every packet on one directed link until the clog clears.
	ClogProbability float64 // per tick: chance to clog one random link
	ClogMeanTicks   float64

	// Filters drop one message kind on one directed link for a while
	// (e.g. only PrepareOk, only commit heartbeats).
	FilterProbability float64 // per tick: chance to add a filter
	FilterMeanTicks   float64
}

// filtersMax bounds the kind filters active at once.
const filtersMax = 8

// filterKinds are the message kinds a filter may target.
var filterKinds = []consensus.MessageKind{
	consensus.MsgPrepare, consensus.MsgPrepareOk, consensus.MsgCommit, consensus.MsgStartViewChange,
	consensus.MsgDoViewChange, consensus.MsgStartView, consensus.MsgRequestStartView, consensus.MsgRequestPrepares,
	consensus.MsgRepairPrepare, consensus.MsgRequestStateTransfer, consensus.MsgStateChunk,
}

type kindFilter struct {
	link      int
	kind      consensus.MessageKind
	untilTick uint64
}

// partitionMode names how a partition splits the replicas.
type partitionMode uint8

const (
	partitionUniformSize    partitionMode = iota // a random-size random subset vs the rest
	partitionUniform                             // every replica picks a side at random
	partitionIsolateSingle                       // one replica vs the rest
	partitionIsolatePrimary                      // the current primary vs the rest
)

var partitionModeNames = [...]string{"uniform-size", "uniform", "isolate-single", "isolate-primary"}

// healedLinkCapacityMax bounds a link's queue after the heal, large
// enough that no burst the core sends (a repair chunk, a pipeline of
// prepares) is cut.
const healedLinkCapacityMax = 8192

type packet struct {
	deliverTick uint64
	seq         uint64 // global send order; breaks ties deterministically
	msg         consensus.Message
}

// network is a seeded, deterministic model of the replica message bus:
// per directed link queues with latency, loss, duplication, reordering,
// bounded capacity, partitions and clogs.
type network struct {
	opts NetworkOptions
	n    int
	rng  *rng
	now  uint64
	seq  uint64

	links     [][]packet // index from*n+to
	blocked   []bool     // partition: index from*n+to
	clogUntil []uint64   // index from*n+to; packets wait until this tick
	filters   []kindFilter

	partitioned     bool
	stableUntilTick uint64
	healed          bool // heal phase: no new faults
	due             []packet
	stats           networkStats
	onEvent         func(format string, args ...any)
	// primary names a replica that currently claims to be primary (-1:
	// none); the isolate-primary partition mode targets it.
	primary func() int
}

type networkStats struct {
	Sent, Delivered, Dropped, Duplicated, Evicted, Partitions, Clogs, Filters uint64
}

func newNetwork(n int, opts NetworkOptions, g *rng) *network {
	return &network{
		opts:      opts,
		n:         n,
		rng:       g,
		links:     make([][]packet, n*n),
		blocked:   make([]bool, n*n),
		clogUntil: make([]uint64, n*n),
		onEvent:   func(string, ...any) {},
	}
}

func (nw *network) link(from, to int) int { return from*nw.n + to }

// heal turns every fault off for the rest of the run: partitions and clogs
// clear, and no packet is dropped, duplicated or reordered any more.
// Latency stays.
func (nw *network) heal() {
	nw.healed = true
	nw.partitioned = false
	clear(nw.blocked)
	clear(nw.clogUntil)
	nw.filters = nw.filters[:0]
	nw.opts.DropProbability = 0
	nw.opts.DuplicateProbability = 0
	nw.opts.ReorderProbability = 0
	// A full link evicting packets is loss too; after the heal links only
	// bound memory.
	nw.opts.LinkCapacityMax = max(nw.opts.LinkCapacityMax, healedLinkCapacityMax)
	// Packets already delayed by a clog keep their delivery tick; pull them
	// in so the heal bound is not eaten by a past fault.
	for i := range nw.links {
		for j := range nw.links[i] {
			limit := nw.now + uint64(nw.opts.LatencyMinTicks+nw.opts.LatencyMeanTicks)
			if nw.links[i][j].deliverTick > limit {
				nw.links[i][j].deliverTick = limit
			}
		}
	}
}

// tick advances the network clock and evolves partitions and clogs.
func (nw *network) tick(now uint64) {
	nw.now = now
	if nw.healed || nw.n < 2 {
		return
	}
	if now >= nw.stableUntilTick {
		if !nw.partitioned && nw.rng.chance(nw.opts.PartitionProbability) {
			nw.startPartition()
		} else if nw.partitioned && nw.rng.chance(nw.opts.UnpartitionProbability) {
			nw.partitioned = false
			clear(nw.blocked)
			nw.stableUntilTick = now + uint64(nw.opts.PartitionStabilityTicks)
			nw.onEvent("net: partition healed")
		}
	}
	kept := nw.filters[:0]
	for _, f := range nw.filters {
		if f.untilTick > now {
			kept = append(kept, f)
		}
	}
	nw.filters = kept
	if len(nw.filters) < filtersMax && nw.rng.chance(nw.opts.FilterProbability) {
		from := nw.rng.intn(nw.n)
		to := nw.rng.intn(nw.n - 1)
		if to >= from {
			to++
		}
		kind := filterKinds[nw.rng.intn(len(filterKinds))]
		d := uint64(1 + nw.rng.expTicks(nw.opts.FilterMeanTicks, 20*int(nw.opts.FilterMeanTicks)+1))
		nw.filters = append(nw.filters, kindFilter{link: nw.link(from, to), kind: kind, untilTick: now + d})
		nw.stats.Filters++
		nw.onEvent("net: filter kind %d on %d->%d for %d ticks", kind, from, to, d)
	}
	if nw.rng.chance(nw.opts.ClogProbability) {
		from := nw.rng.intn(nw.n)
		to := nw.rng.intn(nw.n - 1)
		if to >= from {
			to++
		}
		d := uint64(1 + nw.rng.expTicks(nw.opts.ClogMeanTicks, 20*int(nw.opts.ClogMeanTicks)+1))
		nw.clogUntil[nw.link(from, to)] = now + d
		nw.stats.Clogs++
		nw.onEvent("net: clog %d->%d for %d ticks", from, to, d)
	}
}

func (nw *network) startPartition() {
	mode := partitionMode(nw.rng.intn(4))
	side := make([]bool, nw.n)
	if mode == partitionIsolatePrimary && (nw.primary == nil || nw.primary() < 0) {
		mode = partitionIsolateSingle
	}
	switch mode {
	case partitionUniformSize:
		size := nw.rng.between(1, nw.n-1)
		perm := nw.rng.r.Perm(nw.n)
		for _, i := range perm[:size] {
			side[i] = true
		}
	case partitionUniform:
		for i := range side {
			side[i] = nw.rng.chance(0.5)
		}
	case partitionIsolateSingle:
		side[nw.rng.intn(nw.n)] = true
	case partitionIsolatePrimary:
		side[nw.primary()] = true
	}
	asymmetric := nw.rng.chance(nw.opts.AsymmetricProbability)
	any := false
	for from := 0; from < nw.n; from++ {
		for to := 0; to < nw.n; to++ {
			if side[from] == side[to] {
				continue
			}
			// Asymmetric: only traffic leaving the marked side is cut.
			if asymmetric && !side[from] {
				continue
			}
			nw.blocked[nw.link(from, to)] = true
			any = true
		}
	}
	if !any {
		return
	}
	nw.partitioned = true
	nw.stats.Partitions++
	nw.stableUntilTick = nw.now + uint64(nw.opts.PartitionStabilityTicks)
	nw.onEvent("net: partition mode=%s asymmetric=%v side=%v", partitionModeNames[mode], asymmetric, side)
}

// send queues m on the link m.From -> m.To. The message is deep-copied:
// the real transport encodes at send time, so later mutation by the
// sender must not leak into a packet in flight.
func (nw *network) send(m consensus.Message) {
	from, to := int(m.From), int(m.To)
	if from >= nw.n || to >= nw.n || from == to {
		nw.stats.Dropped++
		return
	}
	nw.stats.Sent++
	l := nw.link(from, to)
	if nw.blocked[l] || nw.filtered(l, m.Kind) || nw.rng.chance(nw.opts.DropProbability) {
		nw.stats.Dropped++
		return
	}
	copies := 1
	if nw.rng.chance(nw.opts.DuplicateProbability) {
		copies = 2
		nw.stats.Duplicated++
	}
	for c := 0; c < copies; c++ {
		delay := nw.opts.LatencyMinTicks + nw.rng.expTicks(float64(nw.opts.LatencyMeanTicks), 50*nw.opts.LatencyMeanTicks+1)
		if nw.rng.chance(nw.opts.ReorderProbability) {
			delay += nw.rng.between(1, 4*nw.opts.LatencyMeanTicks+4)
		}
		at := nw.now + uint64(delay)
		if at <= nw.now {
			at = nw.now + 1 // never deliver in the tick it was sent
		}
		if cu := nw.clogUntil[l]; cu > at {
			at = cu
		}
		q := nw.links[l]
		if len(q) >= nw.opts.LinkCapacityMax {
			victim := nw.rng.intn(len(q))
			q = slices.Delete(q, victim, victim+1)
			nw.stats.Evicted++
		}
		nw.seq++
		nw.links[l] = append(q, packet{deliverTick: at, seq: nw.seq, msg: cloneMessage(m)})
	}
}

// deliverDue removes and returns the packets due at or before now, in
// (tick, send order). Packets on a link cut since they were sent are lost.
func (nw *network) deliverDue() []packet {
	nw.due = nw.due[:0]
	for l := range nw.links {
		q := nw.links[l]
		kept := q[:0]
		for _, p := range q {
			if p.deliverTick > nw.now {
				kept = append(kept, p)
				continue
			}
			if nw.blocked[l] {
				nw.stats.Dropped++
				continue
			}
			nw.due = append(nw.due, p)
		}
		clear(q[len(kept):])
		nw.links[l] = kept
	}
	slices.SortFunc(nw.due, func(a, b packet) int {
		if a.deliverTick != b.deliverTick {
			if a.deliverTick < b.deliverTick {
				return -1
			}
			return 1
		}
		if a.seq < b.seq {
			return -1
		}
		if a.seq > b.seq {
			return 1
		}
		return 0
	})
	nw.stats.Delivered += uint64(len(nw.due))
	return nw.due
}

// inFlight counts queued packets (for tests and the trace).
func (nw *network) inFlight() int {
	total := 0
	for _, q := range nw.links {
		total += len(q)
	}
	return total
}

// cloneMessage deep-copies the parts of a message that alias memory.
func cloneMessage(m consensus.Message) consensus.Message {
	if m.Prepare != nil {
		p := *m.Prepare
		p.Body = slices.Clone(p.Body)
		m.Prepare = &p
	}
	m.Suffix = slices.Clone(m.Suffix)
	m.ChunkData = slices.Clone(m.ChunkData)
	return m
}

func (nw *network) filtered(link int, kind consensus.MessageKind) bool {
	for _, f := range nw.filters {
		if f.link == link && f.kind == kind {
			return true
		}
	}
	return false
}
