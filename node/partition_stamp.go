package node

import (
	"sync/atomic"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/wire"
)

// Stamping on the primary (docs/partitions.md): a batch gets its partition
// id, base offset and base timestamp before it is proposed, so the prepare
// consensus seals, replicates and every replica appends carries the final
// bytes. The primary hands out offsets ahead of the log for the batches in
// flight; it may do so only while it knows where the log will be when they
// apply:
//
//   - it is the group's primary, in the view it last synced its stamp in;
//   - every op in its log is applied (after a view change, ops of earlier
//     views may still be on their way to the log), which is when the
//     stamp re-syncs from the log's next offset and last append time;
//   - no proposal of this view ended without committing (a hole in the
//     offsets handed out): that invalidates the stamp until all in flight
//     applied again.
//
// Until then writes wait in the group's backlog (bounded).

// stampReady reports whether the primary may stamp the next batch now,
// re-syncing the stamp from the log when it safely can.
func (s *partitionShard) stampReady(e *partitionEntry) bool {
	g := e.group
	if !g.IsPrimary() {
		return false
	}
	if e.handoverUntil != 0 && e.handoverUntil > s.clock.NowMicros() {
		return false // settling its reservation before a hand-over (partition_reserve.go)
	}
	if e.stampValid && e.stampView == g.View() {
		return true
	}
	if g.Op() != e.appliedOp || e.inflight > 0 || e.writing {
		// (While a write of the group is out, its log is the writer's: a
		// sync holds the log's lock, which the loop must never wait for.)
		return false
	}
	if e.log != nil && e.log.RollDue() {
		return false // a full segment rolls first (partition_roll.go)
	}
	e.stampValid, e.stampView = true, g.View()
	if e.log != nil {
		e.stampRoom = e.log.SegmentRoom()
	}
	e.stampNext, e.stampTimestamp = s.resyncReservation(e, e.appliedNext, g.View()), e.lastTimestamp
	return true
}

// stamp writes the partition id, the next base offset and a monotone base
// timestamp into a batch about to be proposed, and advances the stamp.
func (s *partitionShard) stamp(e *partitionEntry, batch []byte) wire.ErrorCode {
	h, err := wire.DecodeBatchHeader(batch)
	if err != nil {
		return wire.ErrorCodeOf(err)
	}
	s.reserveFor(e, uint64(h.MessageCount)) // a reservation op goes first when due (partition_reserve.go)
	ts := max(s.clock.NowMicros(), e.stampTimestamp)
	if err := wire.StampBatch(batch, e.key.partition, e.stampNext, ts); err != nil {
		return wire.ErrorCodeOf(err)
	}
	e.stampNext += uint64(h.MessageCount)
	e.stampTimestamp = ts
	e.noteStampedBytes(uint64(len(batch)))
	return wire.OK
}

// publishRole (shard goroutine) publishes whether this replica is the
// group's primary, for the connection goroutines' fast 58, and its view and
// commit numbers for metrics.
//
// Called for every awake group on every tick: a value is stored only when
// it changed (a store dirties the cache line other goroutines read).
func (e *partitionEntry) publishRole() {
	g := e.group
	storeIfChanged(&e.primary, g.IsPrimary())
	// For metrics (Observe): the group's view and commit numbers.
	storeIfChanged(&e.pubNormal, g.Status() == consensus.StatusNormal)
	storeIfChanged(&e.pubView, g.View())
	storeIfChanged(&e.pubCommitMin, g.CommitMin())
	storeIfChanged(&e.pubCommitMax, g.CommitMax())
}

// storeIfChanged stores v in an atomic only when it differs.
func storeIfChanged[T comparable, A interface {
	Load() T
	Store(T)
}](a A, v T) {
	if a.Load() != v {
		a.Store(v)
	}
}

// acceptsWrites reports (from any goroutine) whether this node is the
// partition's primary as last published by its shard.
func (e *partitionEntry) acceptsWrites() bool { return e.primary.Load() }

// peerBus hands partition groups' messages to the replica bus, which
// starts after the shards (nil until then and on a single node).
type peerBus struct {
	b atomic.Pointer[busRef]
	peerBusPending
}

type busRef struct {
	bus  bus.Bus
	self uint8 // this node's replica id, the From of what it sends
}

func (p *peerBus) set(b bus.Bus, self uint8) { p.b.Store(&busRef{bus: b, self: self}) }

// send queues each message for its replica; without a bus they are dropped
// (VSR retransmits).
func (p *peerBus) send(msgs []consensus.Message) {
	if len(msgs) == 0 || p == nil {
		return
	}
	ref := p.b.Load()
	if ref == nil {
		return
	}
	sendAll(ref.bus, msgs)
}
