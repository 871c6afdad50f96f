package node

import (
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// A single node's persisted topic (no prepare WAL) makes a Ready's
// appends durable with one sync of the partition log before it answers
// them (issue 9 point 3). The sync runs off the shard loop, as a cluster
// replica's WAL writes do (partition_writer.go): apply appends on the
// loop and notes the barrier, reply holds the Ready's committed answers,
// and once the Ready is advanced the group's sync leaves as a durable
// write; the loop meanwhile ticks, steps and admits every other group of
// the shard. The group itself waits (entry.writing: its next Ready, its
// files), so its appends are answered in order, each only once synced.
// When the write comes back the answers go out; a failed sync makes them
// ambiguous (57: the batches may still become visible), marks their
// retry-table entries ambiguous and fences the group, as before.

// segmentBarrier is a Ready's answers waiting for the log's sync.
type segmentBarrier struct {
	replies []heldReply
	// sends: the retry-table entries the Ready recorded (made ambiguous
	// if the sync fails).
	sends []ambiguousSend
}

// heldReply is one proposal's answer, held until the barrier.
type heldReply struct {
	p   *partitionProposal
	out partitionOutcome
}

// startBarriers (loop) sends the sync of every group whose Ready is
// waiting for one off the loop, as one batch.
func (s *partitionShard) startBarriers() {
	if len(s.barriers) == 0 {
		return
	}
	b := &writeBatch{}
	for _, e := range s.barriers {
		log := e.log
		b.entries = append(b.entries, e)
		b.writes = append(b.writes, &durableWrite{run: log.Sync})
		b.barriers = append(b.barriers, e.barrier)
		e.barrier = nil
	}
	clear(s.barriers)
	s.barriers = s.barriers[:0]
	s.startWrites(b)
}

// holdForBarrier (readyDone) queues a group whose Ready appended to a
// log that must be synced before the answers leave.
func (s *partitionShard) holdForBarrier(e *partitionEntry) {
	e.writing = true
	s.barriers = append(s.barriers, e)
}

// finishBarrier (loop) answers a barrier's held replies once its sync
// came back: as they are, or, if the sync failed, as ambiguous, with the
// group fenced. The Ready was advanced before the sync; what readyDone
// leaves for after it (checkpoint, backlog) runs now. A group dropped
// meanwhile (controls settle writes first; kept for safety) answers only.
func (s *partitionShard) finishBarrier(e *partitionEntry, bar *segmentBarrier, err error, live bool) {
	if err != nil {
		for i := range bar.replies {
			if bar.replies[i].out.code == wire.OK {
				bar.replies[i].out = partitionOutcome{code: wire.ErrTransientNotCommitted}
			}
		}
		// A replay of these must not be answered from the retry table as
		// if they were durable.
		for _, r := range bar.sends {
			e.dedup.markAmbiguous(r.key, r.request)
		}
	}
	for _, h := range bar.replies {
		h.p.reply(h.out)
	}
	if !live {
		return
	}
	if err != nil {
		s.fenceGroup(e, fmt.Errorf("sync the partition log: %w", err), true)
		if s.fsyncFailed != nil {
			s.fsyncFailed(e, segmentSyncFailed(err))
		}
		return
	}
	s.afterReady(e)
}
