package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodestream/lodestream/consensus"
)

// A partition replica that restarts having lost storage it may have
// acknowledged prepares from (its prepare WAL set aside as damaged, a log
// below its recorded frontier with prepares in the WAL above it, a wiped
// directory) rejoins with Restored.StorageLost: it never votes, it waits
// for the view's primary. That must outlive the next crash too: with the
// damaged WAL set aside, a second restart found an empty WAL and a
// superblock of the old view, took it for an intact replica, and voted
// with a log that ended at its checkpoint, while the committed ops above
// it were on one other replica only; the view change dropped them and the
// next primary handed their offsets out again (whole-node simulator). So
// the decision is recorded in storage.lost (synced) before the group
// runs, read back at every restart, and removed only once the replica is
// Normal in a view that its durable superblock records as its log_view:
// it then holds that primary's log.
const storageLostMarkerFile = "storage.lost"

// markStorageLost records storage.lost (synced) before the evidence of the
// loss is destroyed (a damaged WAL set aside, a WAL above a lost log
// cleared): a crash or an I/O error between the two must leave the marker,
// not an empty WAL that the next restart would take for an intact one
// (whole-node simulator finding 16, seed 21897: a failed sync creating the
// fresh WAL stopped the boot after the set-aside, and the next boot voted
// with a log ending at its checkpoint).
func (p *partitionPlane) markStorageLost(e *partitionEntry) error {
	if err := replaceFileDurably(p.fsys, e.dir, storageLostMarkerFile, nil); err != nil {
		return fmt.Errorf("record the lost partition storage: %w", err)
	}
	e.storageLost = true
	return nil
}

// noteStorageLost (restart) records a new StorageLost decision, or takes
// one from an earlier run that the replica has not recovered from yet.
func (p *partitionPlane) noteStorageLost(e *partitionEntry, restored *consensus.Restored) error {
	marker := filepath.Join(e.dir, storageLostMarkerFile)
	if restored.StorageLost {
		if e.storageLost {
			return nil // this boot recorded it already, before setting the damaged WAL aside
		}
		return p.markStorageLost(e)
	}
	switch _, err := p.fsys.Stat(marker); {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	p.log.Warn("partition replica lost storage in an earlier run and has not rejoined since: no vote until the view's primary answers",
		"dir", e.dir)
	restored.StorageLost, e.storageLost = true, true
	return nil
}

// cutPastCheckpoint (restart) takes back the records a replica applied
// past its checkpoint: always when it restarts from its WAL, which holds
// their ops (the log past the checkpoint may hold batches staged for ops
// a view change drops, partition_stage.go), and when storage.lost is
// recorded or the group is amnesiac. The group
// does not count them: a replica that lost its prepare WAL no longer holds
// their ops, and an amnesiac one (its page cache lost) may have lost
// them from every replica's WAL, which a rack election then drops even
// though this replica's segment kept their records. It applies those ops
// again, from its peers' journals or a transfer, or, when an election
// dropped them, what replaced them. Kept, they would be served at offsets
// the other replicas hold differently or not at all (whole-node simulator
// findings 20 and 26).
func (p *partitionPlane) cutPastCheckpoint(e *partitionEntry, why string) error {
	next := e.log.NextOffset()
	// Where the stored range starts, holes recorded at its start included:
	// a log of only skipped offsets (no message) starts at its first
	// segment, not at next. Reset to next, it lost those hole markers and
	// the skip, applied again, found nothing to skip: its files differed
	// from its peers' (metadata simulator finding M20, seed 37528).
	first := e.log.Stats().StartOffset
	switch {
	case e.marker.PurgeOp > e.appliedOp:
		// A purge after the checkpoint (or with none): every record is of
		// its epoch, past the checkpoint (partition_purge_replay.go).
		if first == next {
			return nil
		}
		p.logTakeBack(why, "partition replica takes back the records it applied after a purge past its checkpoint; the group applies their ops again",
			"dir", e.dir, "why", why, "from_offset", first, "next_offset", next, "checkpoint_op", e.appliedOp, "purge_op", e.marker.PurgeOp)
	case e.appliedNext >= next:
		return nil // nothing past the checkpoint
	case e.appliedNext <= first:
		// No checkpoint (every op is applied again from the first), or a
		// cut applied past the checkpoint removed everything up to its
		// frontier: every record is past the checkpoint. Kept, the records
		// of ops an election dropped stayed past the end of what the
		// group's ops give (metadata simulator finding M7).
		p.logTakeBack(why, "partition replica takes back every record: all were applied past its checkpoint; the group applies their ops again",
			"dir", e.dir, "why", why, "checkpoint_op", e.appliedOp, "checkpoint_frontier", e.appliedNext, "first_offset", first, "next_offset", next)
	default:
		p.logTakeBack(why, "partition replica takes back the records it applied past its checkpoint; the group applies their ops again",
			"dir", e.dir, "why", why, "from_offset", e.appliedNext, "next_offset", next, "checkpoint_op", e.appliedOp)
		if err := e.log.CutTail(e.appliedNext); err != nil {
			return fmt.Errorf("take back the records past the checkpoint: %w", err)
		}
		return nil
	}
	// Ops of records below first apply again as applied (replayedSend);
	// the others append again, from the peers.
	if _, err := e.log.ResetTo(first); err != nil {
		return fmt.Errorf("take back the records past the checkpoint (from offset %d): %w", first, err)
	}
	return nil
}

// Why a restart takes back the records past the checkpoint.
const (
	takeBackAmnesiac   = "amnesiac"
	takeBackLostWAL    = "lost its prepare WAL"
	takeBackFromItsWAL = "restarts from its prepare WAL"
)

// logTakeBack logs a take-back: a warning after a loss, information on an
// ordinary restart (every one from the WAL takes back what it applied
// past its checkpoint).
func (p *partitionPlane) logTakeBack(why, msg string, args ...any) {
	if why == takeBackFromItsWAL {
		p.log.Info(msg, args...)
		return
	}
	p.log.Warn(msg, args...)
}

// rejoinedAfterLoss (shard goroutine, after a Ready) removes storage.lost
// once the group is Normal in a view its durable superblock records as
// the log_view, with no transfer running, everything committed applied,
// and its journal holding that view's whole log (the core withholds nacks
// until then, consensus.Group.StorageLost; the WAL then holds it too).
// Not synced: a marker a crash brings back only makes the replica wait
// for a primary once more.
func (s *partitionShard) rejoinedAfterLoss(e *partitionEntry) {
	g := e.group
	if !e.storageLost || g.Status() != consensus.StatusNormal || g.LogView() != g.View() || e.durableLogView != g.View() ||
		e.transfer != nil || g.CommitMin() != g.CommitMax() || e.appliedOp != g.CommitMin() || g.StorageLost() {
		return
	}
	if err := s.fsys.Remove(filepath.Join(e.dir, storageLostMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("remove the partition's storage.lost marker", "dir", e.dir, "err", err)
		return
	}
	e.storageLost = false
	s.log.Info("partition replica rejoined after losing storage: it votes again", "dir", e.dir, "view", g.View())
}

// clearPartitionsLost (the partition-reopen job) removes the node's
// partitions.storage_lost once every partition metadata holds is open:
// each one that restarted StorageLost then carries its own storage.lost
// (noteStorageLost), which outlives a crash until it rejoins.
func (p *partitionPlane) clearPartitionsLost() {
	if !p.partitionsLost.Load() || (p.gated && !p.gateOpen.Load()) {
		return
	}
	p.reconcileMu.Lock()
	state := p.state
	p.reconcileMu.Unlock()
	if state == nil {
		return
	}
	p.mu.RLock()
	opening := len(p.opening)
	p.mu.RUnlock()
	if opening > 0 {
		return
	}
	for _, s := range state.Streams() {
		for _, t := range s.Topics {
			for _, part := range t.Partitions {
				e := p.entry(partitionKey{s.ID, t.ID, part.ID})
				if e == nil || e.log == nil || e.revision != part.CreatedRevision {
					return
				}
			}
		}
	}
	dataDir := filepath.Dir(p.root)
	if err := p.fsys.Remove(filepath.Join(dataDir, partitionsLostMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Warn("remove the partitions' storage-lost marker", "err", err)
		return
	}
	if err := syncDirectory(p.fsys, dataDir); err != nil {
		p.log.Warn("remove the partitions' storage-lost marker", "err", err)
		return
	}
	p.partitionsLost.Store(false)
	p.log.Info("every partition reopened after lost storage: the node's partitions marker is removed")
}
