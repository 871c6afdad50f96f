package node

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
)

// The persistence work off the shard loop (issue 9 point 3). A group's
// Ready that needs storage (its prepare WAL entries, a WAL sync on a
// persisted topic, the lazy segment sync and superblock of a checkpoint)
// is prepared on the loop, written by a goroutine, and finished back on
// the loop when the write reports in (writesDone): send, apply, reply,
// Advance, Checkpoint. Meanwhile the loop keeps ticking every group,
// stepping replica messages and admitting proposals, so a slow fsync of
// one group stalls neither the others nor the failure detection of any.
//
// One write per group at a time (entry.writing): the group's next Ready
// waits for it, and so does everything on the loop that touches the
// group's WAL or files (resting closes the WAL; controls, which may drop
// or reopen a group, first settle every write in flight). What the loop
// reads about the WAL meanwhile is cached (entry.walBytes). The writes of
// one turn run together (their fsyncs share the file system's journal
// commits, so a view change of many groups costs a few commits, not one
// fsync pair per group), at most writeSlotsMax at once per shard.
//
// A group's write also stages each message prepare's batch in the
// segment (partition_stage.go; a single node's write is only that:
// singleNodeWrite), moving the offset reservation and beginning the
// writeback as it goes: apply then adopts the batch in place, writing at
// most its 8-byte seal (a single node's; its index entry was staged with
// it, partitions/stage_index.go). A
// full segment rolls in a write of its own after the Ready that filled it
// (partition_roll.go), and a Ready committing sends left inline stages
// them first (stagePendingWrite). What stays on the loop are fallbacks:
// the append of a batch that could not be staged (above a hole, a
// truncating Ready's own) and a roll found due by an append or by an op
// that moves segments (after a failed roll). A single node's persisted
// topic syncs in its barrier before the replies, off the loop too
// (partition_barrier.go).

// writeSlotsMax bounds one shard's concurrent durable writes.
const writeSlotsMax = 64

// writeBatch is one turn's durable writes, their Readys and their outcome.
type writeBatch struct {
	entries []*partitionEntry
	rds     []consensus.Ready
	writes  []*durableWrite
	errs    []error
	// barriers (a batch of single-node log syncs, partition_barrier.go):
	// the held answers of each entry's advanced Ready; nil otherwise.
	barriers []*segmentBarrier
	// rolls: a batch of deferred segment rolls (partition_roll.go).
	rolls bool
	// presync: a checkpoint's log sync ahead of it (partition_presync.go);
	// it holds no group's pipeline (entry.writing).
	presync bool
	// started: when it left the loop (partition_hung_write.go).
	started time.Time
}

// processTouched takes the touched groups' Readys through the one Ready
// contract: those that need no storage are carried out here, round after
// round; those that do leave for a write off the loop and are finished by
// finishWrites. The entries supply the partition plane's steps.
func (s *partitionShard) processTouched() {
	touched := len(s.touched)
	live := make([]*partitionEntry, 0, touched)
	for _, e := range s.touched {
		if _, ok := s.groups[e]; ok {
			live = append(live, e)
		}
	}
	var batch *writeBatch
	stalled := make(map[*partitionEntry]bool)
	now := time.UnixMicro(int64(s.clock.NowMicros()))
	for round := 0; round < partitionReadyRoundsMax; round++ {
		progressed := false
		for _, e := range live {
			if e.writing || stalled[e] || !e.group.HasReady() || !e.fence.mayCarryOut(now) {
				continue
			}
			s.catchUp(e) // Advance and Checkpoint arm timers relative to its ticks
			rd := e.group.Ready()
			w, err := e.prepareWrite(&rd)
			if err != nil {
				stalled[e] = true
				s.readyFailed(e, err)
				continue
			}
			if w != nil {
				if batch == nil {
					batch = &writeBatch{}
				}
				e.writing = true
				batch.entries = append(batch.entries, e)
				batch.rds = append(batch.rds, rd)
				batch.writes = append(batch.writes, w)
				continue
			}
			progressed = true
			if err := finishReady(e.group, e, &rd); err != nil {
				if s.holdReadyForRoll(e, &rd, err) {
					continue
				}
				stalled[e] = true
				s.readyFailed(e, err)
				continue
			}
			s.readyDone(e)
		}
		if !progressed {
			break
		}
	}
	if batch != nil {
		s.startWrites(batch)
	}
	for _, e := range live {
		s.holdForRoll(e) // one left due (a failed roll) is tried again
	}
	s.startBarriers()
	s.startRolls()
	for _, e := range live {
		s.promoteBacklog(e) // a backlog may wait on the role, not on a Ready
		e.publishRole()
		s.proposeWatermarks(e) // a new primary carries out what metadata wants
		s.schedule(e)
	}
	// Groups touched while processing (new proposals, writes still in
	// flight) stay for the next turn.
	for _, e := range s.touched[:touched] {
		e.inTouched = false
	}
	n := copy(s.touched, s.touched[touched:])
	clear(s.touched[n:])
	s.touched = s.touched[:n]
	for _, e := range live {
		if e.writing {
			s.touch(e)
		}
	}
}

// startWrites runs a batch's writes off the loop; the batch comes back
// through writesDone.
func (s *partitionShard) startWrites(b *writeBatch) {
	b.errs = make([]error, len(b.writes))
	s.writesInFlight++
	if s.inline {
		// A simulator's shard: the writes run now, on the caller; the
		// batch reports back when the simulator calls finishInlineWrite.
		runWrites(b.writes, b.errs, nil, s.sbLog)
		s.inlineDone = append(s.inlineDone, b)
		return
	}
	s.noteWriteStarted(b)
	go func() {
		runWrites(b.writes, b.errs, s.writeSlots, s.sbLog)
		s.writesDone <- b
	}()
}

// runWrites runs the writes, at most cap(slots) at once (shared by the
// shard's batches; nil slots: one after another, on the caller), then appends their superblock records to the node's
// log in one write and one sync, then their post steps; it records each
// write's error.
func runWrites(writes []*durableWrite, errs []error, slots chan struct{}, sbLog *journal.SuperblockLog) {
	if slots == nil {
		for i, w := range writes {
			errs[i] = w.run()
		}
	} else if len(writes) == 1 {
		slots <- struct{}{}
		errs[0] = writes[0].run()
		<-slots
	} else {
		var wg sync.WaitGroup
		for i, w := range writes {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				errs[i] = w.run()
			}()
		}
		wg.Wait()
	}
	var records []journal.SuperblockLogEntry
	for i, w := range writes {
		if errs[i] == nil && w.record != nil {
			records = append(records, *w.record)
		}
	}
	if len(records) > 0 {
		if err := appendSuperblockRecords(sbLog, records); err != nil {
			for i, w := range writes {
				if errs[i] == nil && w.record != nil {
					errs[i] = err
				}
			}
		}
	}
	for i, w := range writes {
		if errs[i] == nil && w.post != nil {
			errs[i] = w.post()
		}
	}
}

// appendSuperblockRecords makes records durable in the node's superblock
// log; a failed sync there is an fsync failure of every group in it.
func appendSuperblockRecords(sbLog *journal.SuperblockLog, records []journal.SuperblockLogEntry) error {
	if sbLog == nil {
		return errors.New("superblock records without a superblock log")
	}
	err := sbLog.Append(records)
	if errors.Is(err, journal.ErrSuperblockLogPoisoned) {
		return &fsyncFailed{err: err}
	}
	return err
}

// finishWrites (loop) takes a returned batch's Readys on: steps 2-6 for
// the groups whose write succeeded, a fence for those whose write failed
// (their Readys stay un-advanced: nothing they hold was sent, applied or
// answered).
func (s *partitionShard) finishWrites(b *writeBatch) {
	s.writesInFlight--
	s.noteWriteFinished(b)
	for i, e := range b.entries {
		_, live := s.groups[e]
		if b.presync {
			s.finishPresync(e, b.errs[i], live)
			continue
		}
		e.writing = false
		if b.barriers != nil {
			s.finishBarrier(e, b.barriers[i], b.errs[i], live)
			if live {
				s.touch(e)
				s.schedule(e)
			}
			continue
		}
		if b.rolls {
			if live {
				s.finishRoll(e, b.writes[i])
				s.touch(e)
				s.schedule(e)
			}
			continue
		}
		if !live {
			continue // dropped meanwhile (controls settle writes first; kept for safety)
		}
		s.touch(e)
		if err := b.errs[i]; err != nil {
			s.readyFailed(e, err)
			continue
		}
		if w := b.writes[i]; w.done != nil {
			w.done()
		}
		s.catchUp(e)
		if err := finishReady(e.group, e, &b.rds[i]); err != nil {
			if !s.holdReadyForRoll(e, &b.rds[i], err) {
				s.readyFailed(e, err)
			}
			continue
		}
		s.readyDone(e)
		s.schedule(e)
	}
	s.startBarriers()
	s.startRolls()
}

// settleWrites (loop) waits for every write in flight and finishes it:
// before a control, which may drop, reopen or close a group, and at
// shutdown.
func (s *partitionShard) settleWrites() {
	for s.finishInlineWrite() {
	}
	for s.writesInFlight > 0 {
		s.finishWrites(<-s.writesDone)
	}
}

// finishInlineWrite (inline shards) finishes the oldest batch whose writes
// ran and reports whether there was one.
func (s *partitionShard) finishInlineWrite() bool {
	if len(s.inlineDone) == 0 {
		return false
	}
	b := s.inlineDone[0]
	s.inlineDone[0] = nil
	s.inlineDone = s.inlineDone[1:]
	s.finishWrites(b)
	return true
}

// readyFailed: a group's Ready could not be carried out; storage failures
// fence the group (partition_fence.go); a state transfer still fetching
// is not a failure.
func (s *partitionShard) readyFailed(e *partitionEntry, err error) {
	if errors.Is(err, errInstallPending) {
		return
	}
	var ff *fsyncFailed
	sticky := errors.As(err, &ff)
	s.fenceGroup(e, err, sticky)
	if sticky && s.fsyncFailed != nil {
		s.fsyncFailed(e, ff)
	}
}

// readyDone: a group's Ready was carried out and advanced.
func (s *partitionShard) readyDone(e *partitionEntry) {
	s.liftFence(e)
	s.rejoinedAfterLoss(e)
	if e.barrier != nil {
		// Its answers wait for the log's sync, which also reports a failed
		// roll; the checkpoint and the backlog follow it (finishBarrier).
		s.holdForBarrier(e)
		return
	}
	s.afterReady(e)
}

// fenceAFailedRoll (after a Ready) fences and reopens a group whose log
// reports a segment roll's failed fsync. The appends that rolled stand (a
// cluster replica's WAL holds them; a single node's persisted topic synced
// its log in apply, which reported the failure already), but the log
// reports it only at its next Sync, which on a cluster replica waits for a
// checkpoint: a group resting until then kept a segment the roll never
// sealed and lacked the empty one its peers rolled to (metadata simulator
// seed 82965). The reopen rewrites the segment through a fresh file and
// rolls again (partitions.Options.RollFullAtOpen).
func (s *partitionShard) fenceAFailedRoll(e *partitionEntry) bool {
	if e.log == nil || e.writing || !e.log.FailedSyncPending() {
		return false
	}
	err := e.log.Sync() // returns the roll's failure, having recorded the rewrite
	if err == nil {
		return false
	}
	s.fenceGroup(e, fmt.Errorf("a segment roll's fsync failed: %w", err), true)
	if s.fsyncFailed != nil {
		s.fsyncFailed(e, segmentSyncFailed(err))
	}
	return true
}
