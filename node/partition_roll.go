package node

import (
	"errors"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

// A full segment rolls off the shard loop (issue 9 point 3). The append
// that fills a group's active segment runs in apply, on the loop; with
// partitions.Options.DeferRoll it leaves the segment active, and once the
// Ready is done the group's roll leaves as a durable write of its own
// (after a persisted topic's barrier): the sealing fdatasync and the next
// segment's creation run there, and the group's next Ready waits for it,
// as it waits for any write of the group. Every replica rolls right after
// the Ready that applied the filling op, so the segment files stay the
// same on every replica; the write then stages the sends a pipeline left
// inline meanwhile (stagePending), so apply adopts them in the new segment
// instead of appending them on the loop.
//
// The primary stops stamping at the batch that fills the segment
// (stampRoom): the batches after it wait in the backlog until it applied
// and the roll is done, so no Ready applies a send past a full segment
// before its roll. A cluster replica that still commits the filling op
// and later ones in one Ready (a lagging backup) stops apply there and
// resumes after the roll (below). What rolls on the loop is the failure
// fallback: an append that finds a roll due (a roll that failed), and an
// op that moves segments (purge, cut, reservation) applied then
// (rollFirst).

// holdForRoll (after a Ready) queues the group's roll when its log has a
// full active segment; false when none is due.
func (s *partitionShard) holdForRoll(e *partitionEntry) bool {
	if e.log == nil || e.writing || !e.fence.mayCarryOut(time.UnixMicro(int64(s.clock.NowMicros()))) || !e.log.RollDue() {
		return false
	}
	e.writing = true
	s.rolls = append(s.rolls, e)
	return true
}

// startRolls (loop) sends the queued rolls off the loop, as one batch.
func (s *partitionShard) startRolls() {
	if len(s.rolls) == 0 {
		return
	}
	b := &writeBatch{rolls: true}
	for _, e := range s.rolls {
		log := e.log
		b.entries = append(b.entries, e)
		b.writes = append(b.writes, e.pendingStagingWrite(func() bool {
			// A failed roll is recorded by the log (FailedSyncPending, or
			// retried by the next append): finishRoll handles it.
			_ = log.Roll()
			return !log.RollDue()
		}))
	}
	clear(s.rolls)
	s.rolls = s.rolls[:0]
	s.startWrites(b)
}

// A cluster replica may still commit the filling op and later ones in one
// Ready (a backup a step behind its peers: the primary proposed the next
// batch once the filling one committed there). Apply stops after the
// filling op (errRollMidReady; what it applied is kept as a stalled
// Ready's is), the Ready waits un-advanced while the roll leaves the
// loop, as it would for a durable write, and apply resumes once the roll
// is back (resumeReady): the next batch lands in the new segment, staged
// by the roll's write if it was left inline.

// errRollMidReady: apply stopped after an op that filled the segment.
var errRollMidReady = errors.New("the segment filled before the Ready's last op: rolled first")

// rollsMidReady (apply, after an op): a cluster replica whose log has a
// roll due stops applying there. (A single node's primary stamps nothing
// past a full segment; its persisted barrier counts one apply pass.)
func (e *partitionEntry) rollsMidReady() bool {
	return e.superblock != nil && e.log != nil && e.log.RollDue()
}

// holdReadyForRoll (loop, finishReady returned err) holds a Ready whose
// apply stopped for a roll and queues the roll; false for another error.
func (s *partitionShard) holdReadyForRoll(e *partitionEntry, rd *consensus.Ready, err error) bool {
	if !errors.Is(err, errRollMidReady) {
		return false
	}
	held := *rd
	e.midReady = &held
	if !s.holdForRoll(e) {
		// The group's fence holds its storage work back: resume now (the
		// next append rolls first, on the loop, as after a failed roll).
		s.resumeReady(e)
	}
	return true
}

// resumeReady (loop) applies the rest of a Ready held for a roll and
// takes it on (reply, Advance, readyDone); it may stop for the next roll.
func (s *partitionShard) resumeReady(e *partitionEntry) {
	rd := e.midReady
	e.midReady = nil
	s.catchUp(e)
	if err := e.apply(rd.Committed); err != nil {
		if !s.holdReadyForRoll(e, rd, err) {
			s.readyFailed(e, err)
		}
		return
	}
	e.reply(rd.Replies)
	e.group.Advance(*rd)
	s.readyDone(e)
}

// finishRoll (loop) takes the group on after its roll: a failed sealing
// sync fences it until a reopen (fenceAFailedRoll); a roll that failed
// otherwise (the next segment could not be created: a full disk) fences
// it until a retry goes through (processTouched tries again once the
// fence allows); then what readyDone left for after the roll runs
// (checkpoint, backlog).
func (s *partitionShard) finishRoll(e *partitionEntry, w *durableWrite) {
	if w.done != nil {
		w.done()
	}
	held := e.midReady != nil
	if s.fenceAFailedRoll(e) {
		e.midReady = nil // tried again whole, as a stalled Ready is
		return
	}
	if e.log.RollDue() {
		e.midReady = nil
		s.fenceGroup(e, errRollFailed, false)
		return
	}
	if held {
		s.resumeReady(e)
		return
	}
	s.liftFence(e)
	s.checkpoint(e)
	s.promoteBacklog(e)
}

// errRollFailed: a full segment's roll did not go through (the log logged
// why); writes wait behind the fence until a retry does.
var errRollFailed = errors.New("the roll of a full segment failed")

// afterReady (loop) finishes a group whose Ready (and barrier) went
// through: a failed roll fences it, a due roll leaves the loop first, then
// the checkpoint and the backlog.
func (s *partitionShard) afterReady(e *partitionEntry) {
	if s.fenceAFailedRoll(e) {
		return
	}
	if s.holdForRoll(e) {
		return
	}
	s.checkpoint(e)
	s.promoteBacklog(e)
}

// rollFirst (loop, before op applies) rolls a due segment on the loop
// before an op that moves or removes segments, so it finds the files
// every replica has. Sends roll in their append; consumer offsets do not
// touch segments.
func (s *partitionShard) rollFirst(e *partitionEntry, op wire.Operation) {
	switch op {
	case wire.OpSendMessages, wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		return
	}
	if e.log == nil || !e.log.RollDue() {
		return
	}
	if err := e.log.Roll(); err != nil {
		// Recorded by the log: the Ready's end fences the group (afterReady).
		s.log.Error("segment roll failed", "dir", e.dir, "err", err)
	}
}

// noteStampedBytes (primary, after stamping a batch of n bytes) counts
// it against the active segment's room: the batch that fills it ends the
// stamp, so the next waits until everything applied and the segment
// rolled (stampReady re-syncs then).
func (e *partitionEntry) noteStampedBytes(n uint64) {
	if e.log == nil {
		return
	}
	if n >= e.stampRoom {
		e.stampValid = false
		return
	}
	e.stampRoom -= n
}
