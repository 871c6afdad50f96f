package node

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// A cluster replica's checkpoint syncs its log ahead (issue 8 point 10).
// The superblock that names a checkpoint names the log's frontier at its
// op, so the log must be durable up to there first. That fdatasync ran
// inside the group's durable write of the checkpoint's Ready: under load
// it took 100-270 ms (BENCHMARKS.md), and the group's next prepare waited
// for it, and so did every other group's write of the same batch (a batch
// reports back as one).
//
// Now, when a checkpoint comes due, the shard captures it (the snapshot as
// of commit_min, as before) and syncs the log in a write of its own that
// holds neither the group's pipeline (entry.writing) nor the log's lock
// (partitions.Log.SyncAhead), while prepares go on. When the sync reports
// back the captured checkpoint goes to consensus (an op a few behind
// commit_min by then, which Checkpoint accepts), and its Ready's write
// finds the log synced to the frontier and skips the sync. A simulator's
// inline shard takes the same path, its write run on the caller.
//
// Only appends may come between the capture and the hand-over: a
// checkpoint describes the files as of its op plus what was appended
// since (a restart takes back the tail past its frontier), so one captured
// before a purge, a cut, a reservation (SkipTo), an installed snapshot or
// a fence is dropped (filesReshaped) and the next is captured anew
// (whole-node simulator: a capture from before a purge, handed over after
// it, named a frontier inside the purged log's new batches).
//
// One sync ahead per group at a time. A sync that proved nothing (a file
// closed meanwhile: a segment deleted, the log closed or reopened) drops
// the capture, and that group's next checkpoint syncs in its write as
// before. A failed fdatasync fences the group as a failed roll's does.

// capturedCheckpoint is a checkpoint taken on the loop, waiting for its
// log sync.
type capturedCheckpoint struct {
	snap         consensus.Snapshot
	frontier     uint64
	reserved     uint64
	offsets      []partitions.ConsumerOffsetEntry
	dedup        []byte
	dedupChanged bool // the dedup table changed since the last checkpoint
	log          partitionStore
	reshaped     uint64 // the group's filesReshaped when captured
}

// captureCheckpoint snapshots the group as of commit_min (its applied op).
func (s *partitionShard) captureCheckpoint(e *partitionEntry) *capturedCheckpoint {
	frontier := e.appliedNext
	cp := checkpointOf(e.log, frontier, e.marker.OffsetsReserved, e.marker.purgeState(), true)
	cp.dedup = e.dedup.encode(nil)
	data := cp.encode()
	c := &capturedCheckpoint{
		snap:     consensus.Snapshot{Op: e.group.CommitMin(), Data: data, Checksum: snapshotChecksum(data)},
		frontier: frontier, reserved: e.marker.OffsetsReserved, offsets: cp.offsets, dedup: cp.dedup,
		dedupChanged: e.dedup.changed, log: e.log, reshaped: e.filesReshaped,
	}
	e.dedup.changed = false // changes from here on belong to the next checkpoint
	return c
}

// dropped: a capture that never reaches consensus leaves the dedup
// table's change to the next checkpoint.
func (c *capturedCheckpoint) dropped(e *partitionEntry) {
	if c.dedupChanged {
		e.dedup.changed = true
	}
}

// handCheckpoint gives consensus a captured checkpoint; logSynced says its
// log is durable to the frontier already.
func (s *partitionShard) handCheckpoint(e *partitionEntry, c *capturedCheckpoint, logSynced bool) {
	e.group.Checkpoint(c.snap)
	if err := e.group.CheckpointError(); err != nil {
		c.dropped(e)
		s.log.Error("partition checkpoint refused", "dir", e.dir, "op", c.snap.Op, "err", err)
		return
	}
	e.checkpointOp, e.checkpointFrontier, e.checkpointDedup = c.snap.Op, c.frontier, c.dedup
	e.checkpointReserved = c.reserved
	e.noteCheckpointOffsets(c.offsets)
	if c.dedupChanged {
		e.checkpointDedupDirty = true
	}
	e.logSyncedCheckpoint = 0
	if logSynced {
		e.logSyncedCheckpoint = c.snap.Op
	}
}

// syncsAhead: the group's checkpoints name a log frontier its superblock
// records (cluster mode); a single node's checkpoint only frees journal
// slots.
func (e *partitionEntry) syncsAhead() bool {
	return e.superblock != nil && e.wal != nil && !e.presyncBypass
}

// startPresync sends a captured checkpoint's log sync off the loop.
func (s *partitionShard) startPresync(e *partitionEntry, c *capturedCheckpoint) {
	e.presync = c
	log := c.log
	// The sync takes what the log holds when it starts, after the
	// capture: everything up to the captured frontier (applied on the loop
	// before it) and perhaps more.
	w := &durableWrite{run: func() error {
		_, err := log.SyncAhead()
		return err
	}}
	s.startWrites(&writeBatch{entries: []*partitionEntry{e}, writes: []*durableWrite{w}, presync: true})
}

// finishPresync (loop) takes a sync ahead's outcome: the checkpoint is
// handed over now, or at the group's next afterReady when a write of its
// Ready is out (consensus takes a checkpoint between Readys).
func (s *partitionShard) finishPresync(e *partitionEntry, err error, live bool) {
	c := e.presync
	e.presync = nil
	if !live || c == nil {
		return
	}
	switch {
	case err == nil && c.log == e.log:
		e.presyncDone = c
	case err == nil || c.log != e.log || errors.Is(err, partitions.ErrSyncAheadInconclusive):
		// Proved nothing: the next checkpoint syncs in its write.
		e.presyncBypass = true
		c.dropped(e)
	default:
		e.presyncErr = err
		c.dropped(e)
	}
	if !e.writing {
		s.afterPresync(e)
		s.touch(e)
		s.schedule(e)
	}
}

// afterPresync (loop, no write of the group out) hands over a synced
// checkpoint, or fences the group whose sync failed. It reports whether it
// fenced.
func (s *partitionShard) afterPresync(e *partitionEntry) bool {
	if err := e.presyncErr; err != nil {
		e.presyncErr = nil
		s.fenceGroup(e, fmt.Errorf("a checkpoint's log sync failed: %w", err), true)
		if s.fsyncFailed != nil {
			s.fsyncFailed(e, segmentSyncFailed(err))
		}
		return true
	}
	if c := e.presyncDone; c != nil {
		e.presyncDone = nil
		if c.snap.Op > e.checkpointOp && c.log == e.log && c.reshaped == e.filesReshaped {
			s.handCheckpoint(e, c, true)
		} else {
			c.dropped(e)
		}
	}
	return false
}

// appendsOnly: applying op only appends to the partition's files (or
// touches none of the log's: consumer offsets).
func appendsOnly(op wire.Operation) bool {
	switch op {
	case wire.OpSendMessages, wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		return true
	}
	return false
}
