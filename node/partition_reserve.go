package node

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

// Offset reservations in a cluster (issue 15 point 5): no offset is handed
// out twice, even after a power loss of a quorum.
//
// Under durability = replicated a batch is acknowledged once a quorum holds
// it in memory (the WAL's page cache). A power loss of a quorum may then
// lose acknowledged batches, and the rack election (consensus/amnesia.go)
// continues from a shorter log: stamping from the log's end would hand
// their offsets out again. So the primary stamps only below an offset
// reservation the group has ordered in its own log:
//
//   - the op partitionOpReserve [skip to u64][reserved up to u64] is always
//     synced before its PrepareOk (barrierNeeded), whatever the topic's
//     durability, and its WAL sync covers every op before it. A batch that
//     commits after it therefore finds the reservation durable on a quorum,
//     which survives any power loss (a rack election keeps synced ops);
//   - every replica applies it in log order: the reservation goes into the
//     partition marker (synced), the checkpoint and a state transfer;
//   - a batch stamped at or above the applied reservation is refused the
//     same way on every replica (appendCommitted), so no acknowledged
//     offset can lie above a durable reservation;
//   - a primary's first stamp in its view resumes at the reservation when
//     the log ends below it: the earlier view's offsets up to it may have
//     been acknowledged and lost. Its first reservation op carries the
//     skip, and every replica records the hole where it applies it
//     (partitions.Log.SkipTo, a .lost marker), so files stay identical.
//
// The cost: one synced op per reservation chunk, and after a primary
// change a hole of at most one chunk in the partition's offsets (polls step
// over it; an idle partition's chunk shrinks to reserveChunkMin before it
// rests, shrinkBeforeRest). The chunk adapts to the partition's rate: it
// grows eightfold when a chunk lasted under reserveChunkGrowMicros (8 s)
// and halves when one lasted over reserveChunkShrinkMicros (80 s), within
// [reserveChunkMin, reserveChunkMax], so a busy partition orders a
// reservation every 8-64 s. Each one syncs the log's staged batches and
// the WAL inside the group's write on every replica, and rewrites
// partition.meta on the loop where it applies: ordered once a second (the
// bound was 1 s / 10 s), they were the half-load p99 of a 3-node cluster
// (BENCHMARKS.md: 6.3-7.1 ms against 2.9-3.1 ms).
const (
	// partitionOpReserve is ours inside a partition group (the internal
	// band, 64–127, that no client sends).
	partitionOpReserve = wire.Operation(96)

	reserveChunkMin          = 64
	reserveChunkGrowth       = 8
	reserveChunkMax          = 1 << 20
	reserveChunkGrowMicros   = 8_000_000
	reserveChunkShrinkMicros = 80_000_000
	reserveOpBytes           = 16
)

func encodeReserveOp(skipTo, upTo uint64) []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, reserveOpBytes), skipTo)
	return binary.LittleEndian.AppendUint64(b, upTo)
}

func decodeReserveOp(b []byte) (skipTo, upTo uint64, ok bool) {
	if len(b) != reserveOpBytes {
		return 0, 0, false
	}
	skipTo, upTo = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	return skipTo, upTo, skipTo <= upTo
}

// reserves: the group stamps below an ordered reservation. A single node
// reserves in the log itself (partitions.Options.ReserveOffsets), and a
// persisted topic needs none: every batch is synced on a quorum before it
// is acknowledged, so a view change always keeps every acknowledged
// offset.
func (s *partitionShard) reserves(e *partitionEntry) bool { return s.replicaCount > 1 && !e.persisted }

// resyncReservation (primary, when the stamp re-syncs from the log at
// next) returns where stamping resumes. The first stamp of a view that
// has applied no reservation op of its own resumes at the reservation and
// owes the skip to its first reservation op.
func (s *partitionShard) resyncReservation(e *partitionEntry, next uint64, view uint32) uint64 {
	e.stampReserved, e.stampSkipTo = e.marker.OffsetsReserved, 0
	if !s.reserves(e) || e.reserveView == view+1 {
		return next
	}
	e.stampReserved = 0 // the view's first batch waits behind a reservation op of this view
	if e.marker.OffsetsReserved > next {
		next = e.marker.OffsetsReserved
		e.stampSkipTo = next
	}
	return next
}

// reserveFor (primary, before stamping count offsets at stampNext)
// proposes a reservation op when the batch would reach the reservation,
// or when the view owes its skip. The op precedes the batch in the log.
func (s *partitionShard) reserveFor(e *partitionEntry, count uint64) {
	if !s.reserves(e) {
		return
	}
	end := e.stampNext + count
	if end <= e.stampReserved && e.stampSkipTo == 0 {
		return
	}
	now := s.clock.NowMicros()
	chunk := max(e.reserveChunk, reserveChunkMin)
	if e.reserveAt != 0 && e.stampSkipTo == 0 {
		switch elapsed := now - min(now, e.reserveAt); {
		case elapsed < reserveChunkGrowMicros:
			chunk = min(reserveChunkGrowth*chunk, reserveChunkMax)
		case elapsed > reserveChunkShrinkMicros:
			chunk = max(chunk/2, reserveChunkMin)
		}
	}
	e.reserveChunk, e.reserveAt = chunk, now
	s.proposeReserve(e, e.stampSkipTo, end+chunk)
	e.stampSkipTo = 0
}

// proposeReserve (primary) proposes a reservation op; what it stamps next
// is bounded by upTo from here on.
func (s *partitionShard) proposeReserve(e *partitionEntry, skipTo, upTo uint64) {
	s.proposeNow(e, &partitionProposal{entry: e, op: partitionOpReserve, body: encodeReserveOp(skipTo, upTo)})
	e.stampReserved = upTo
}

// applyReserve carries out a committed reservation on this replica: the
// skip first (identical files everywhere), then the reservation, durably.
func (s *partitionShard) applyReserve(e *partitionEntry, p *consensus.Prepare) partitionOutcome {
	skipTo, upTo, ok := decodeReserveOp(p.Body)
	if !ok {
		return partitionOutcome{code: wire.ErrInvalidCommand}
	}
	if skipTo > e.appliedNext {
		if skipTo > e.log.NextOffset() { // else a replay: the log skipped it before
			if err := e.inlineAllRefs(); err != nil { // the skip cuts staged bytes (partition_stage.go)
				return e.storageFailure(wire.ErrCannotWriteToFile, p, err)
			}
			if err := e.log.SkipTo(skipTo); err != nil {
				s.log.Error("skip offsets after a primary change", "dir", e.dir, "to", skipTo, "err", err)
				return e.storageFailure(wire.ErrCannotWriteToFile, p, err)
			}
			s.log.Info("offsets skipped after a primary change: never handed out twice", "dir", e.dir,
				"resume_at", skipTo, "view", p.Header.View)
		}
		e.appliedNext = skipTo
	}
	e.reserveView = p.Header.View + 1
	if e.marker.OffsetsReserved != upTo {
		m := e.marker
		m.OffsetsReserved = upTo
		if err := s.recordMarker(e, m); err != nil {
			return e.storageFailure(wire.ErrCannotWriteToFile, p, fmt.Errorf("record the offset reservation: %w", err))
		}
	}
	return partitionOutcome{code: wire.OK}
}

// beyondReservation: a batch would take offsets the group has not reserved
// (a cluster replica only).
func (s *partitionShard) beyondReservation(e *partitionEntry, h wire.BatchHeader) bool {
	return s.reserves(e) && h.BaseOffset+uint64(h.MessageCount) > e.marker.OffsetsReserved
}

// handoverSettleMicros bounds how long a primary holds new writes while
// its reservation settles before a hand-over; past it the hand-over waits
// for the next alignment attempt.
const handoverSettleMicros = 1_000_000

// reservationSettled (primary, before an orderly hand-over) reports
// whether the group may hand over now without leaving a hole: its applied
// reservation is exactly where its log ends, so the next primary resumes
// there; or this view reserved nothing, so nothing was stamped in it and
// the next primary owes whatever skip this one owed. Otherwise it shrinks
// the reservation to the stamp (one op, while new writes wait in the
// backlog) and reports false until that applied, or gives up for this
// attempt after handoverSettleMicros. Shrinking is safe: nothing is
// stamped above it while it settles, and a later stamp orders a new
// reservation first.
func (s *partitionShard) reservationSettled(e *partitionEntry, nowTick time.Time) bool {
	if !s.reserves(e) || e.log == nil {
		return true
	}
	g := e.group
	if e.inflight == 0 && g.Op() == e.appliedOp &&
		(e.marker.OffsetsReserved == e.appliedNext || e.reserveView != g.View()+1) {
		return true
	}
	now := s.clock.NowMicros()
	switch {
	case e.handoverUntil == 0:
		if !s.stampReady(e) || e.stampSkipTo != 0 {
			return false // in flight from before this view, or a stamp still owes its skip
		}
		e.handoverUntil = now + handoverSettleMicros
		if e.stampReserved != e.stampNext {
			s.proposeReserve(e, 0, e.stampNext)
		}
	case now >= e.handoverUntil:
		e.handoverUntil = 0
		e.alignRetryAt = nowTick.Add(alignRetryAfter)
		s.promoteBacklog(e)
	}
	return false
}

// shrinkBeforeRest (primary, as its quiet group is about to rest): a
// reservation far above the log's end (a burst grew the chunk) shrinks to
// reserveChunkMin above it, so a failover of an idle partition skips at
// most that many offsets. It reports whether it proposed the op (the
// group then rests once that committed). Only after this view applied a
// reservation of its own: before that, the reservation may still guard
// offsets an earlier view handed out.
func (s *partitionShard) shrinkBeforeRest(e *partitionEntry) bool {
	if !e.primary.Load() || !s.reserves(e) || e.log == nil {
		return false
	}
	g := e.group
	if e.reserveView != g.View()+1 || !e.stampValid || e.stampView != g.View() || e.stampSkipTo != 0 || e.inflight > 0 {
		return false
	}
	next := e.appliedNext
	if e.stampNext != next || e.marker.OffsetsReserved <= next+reserveChunkMin {
		return false
	}
	s.proposeReserve(e, 0, next+reserveChunkMin)
	return true
}
