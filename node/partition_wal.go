package node

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// A partition group's prepare WAL (cluster mode, journal.PrepareLog) lives
// in <partition dir>/wal. Every Ready's journal work (Truncate, Entries)
// is written there before the Ready's messages leave, synced first on a
// persisted topic. A restart hands the entries above the durable
// checkpoint back to consensus.Restart, so a replica votes with the
// journal it acknowledged: a full restart of every node (SIGKILL or not)
// elects a head that holds every committed op, instead of each replica's
// last checkpoint. A single node keeps no WAL (its one-replica groups
// commit what they append).

const (
	partitionWALDir = "wal"
	// damagedWALKeep: set-aside damaged WAL directories kept for inspection.
	damagedWALKeep = 2
)

func partitionWALPath(dir string) string { return filepath.Join(dir, partitionWALDir) }

// openPartitionWAL opens the group's WAL and returns the entries at or
// above fromOp. A damaged WAL is set aside (renamed, for inspection) and
// replaced by an empty one; damaged reports it: the replica may have
// acknowledged prepares it no longer holds. An amnesiac group (its node
// lost power) cuts the WAL at the damage instead: unsynced writes come
// back in pieces after a power loss, and amnesia already accounts for
// whatever it lost.
func (p *partitionPlane) openPartitionWAL(e *partitionEntry, fromOp uint64, amnesiac bool) (entries []consensus.Prepare, damaged bool, err error) {
	path := partitionWALPath(e.dir)
	opts := []journal.Option{journal.WithFS(p.fsys)}
	if e.log != nil {
		opts = append(opts, journal.WithBodyResolver(logResolver(e.log))) // segment references
	}
	wal, entries, err := journal.OpenPrepareLog(path, fromOp, opts...)
	if err == nil {
		p.useWAL(e, wal)
		return entries, false, nil
	}
	if !errors.Is(err, journal.ErrPrepareLogDamaged) {
		return nil, false, err
	}
	wal.Close()
	if amnesiac {
		cut, file, at, cerr := journal.CutPrepareLogAtDamage(path, fromOp, opts...)
		if cerr == nil && cut {
			p.log.Warn("partition prepare WAL damaged after a power loss: cut at the damage, the group rejoins amnesiac",
				"dir", e.dir, "file", file, "byte", at, "damage", err)
			if wal, entries, err = journal.OpenPrepareLog(path, fromOp, opts...); err == nil {
				p.useWAL(e, wal)
				return entries, false, nil
			}
			if !errors.Is(err, journal.ErrPrepareLogDamaged) {
				return nil, false, err
			}
			wal.Close()
		} else if cerr != nil {
			p.log.Error("partition prepare WAL: cutting the damage failed", "dir", e.dir, "err", cerr)
		}
	}
	aside := fmt.Sprintf("%s.damaged-%d", path, e.shard.clock.NowMicros())
	p.log.Error("partition prepare WAL damaged: set aside; the replica rejoins without a vote until the view's primary answers",
		"dir", e.dir, "set_aside", aside, "err", err)
	if merr := p.markStorageLost(e); merr != nil {
		return nil, false, merr
	}
	if rerr := p.fsys.Rename(path, aside); rerr != nil {
		return nil, false, fmt.Errorf("set the damaged prepare WAL aside: %w", rerr)
	}
	pruneDamagedWALs(p.fsys, e.dir)
	wal, _, err = journal.OpenPrepareLog(path, 0, journal.WithFS(p.fsys))
	if err != nil {
		return nil, false, err
	}
	p.useWAL(e, wal)
	return nil, true, nil
}

// resetPartitionWAL starts the group's WAL empty: a fresh group, or a
// group restarting without the state its old WAL entries build on.
func (p *partitionPlane) resetPartitionWAL(e *partitionEntry) error {
	if err := p.fsys.RemoveAll(partitionWALPath(e.dir)); err != nil {
		return fmt.Errorf("clear the partition prepare WAL: %w", err)
	}
	wal, _, err := journal.OpenPrepareLog(partitionWALPath(e.dir), 0, journal.WithFS(p.fsys))
	if err != nil {
		return err
	}
	p.useWAL(e, wal)
	return nil
}

// useWAL installs an opened WAL; its files rotate at an eighth of
// wal_bytes_max (at most 1 MiB), so reclaiming whole files keeps the
// retained bytes within the bound.
func (p *partitionPlane) useWAL(e *partitionEntry, wal *journal.PrepareLog) {
	if limit := p.shards[0].cfg.walBytesMax; limit > 0 {
		wal.SetRotateBytes(int64(limit / 8))
	}
	e.wal = wal
	e.walBytes = uint64(wal.Bytes())
}

// closeWAL closes the group's WAL (shutdown, removal, a failed start).
func (e *partitionEntry) closeWAL() error {
	if e.wal == nil {
		return nil
	}
	err := e.wal.Close()
	e.wal = nil
	return err
}

// syncAndCloseWAL syncs the group's WAL, then closes it (shutdown).
func (e *partitionEntry) syncAndCloseWAL() error {
	if e.wal == nil {
		return nil
	}
	serr := e.wal.Sync()
	return errors.Join(serr, e.closeWAL())
}

// pruneDamagedWALs keeps the newest damagedWALKeep set-aside WALs.
func pruneDamagedWALs(fsys vfs.FS, dir string) {
	aside, _ := vfs.Glob(fsys, partitionWALPath(dir)+".damaged-*")
	for len(aside) > damagedWALKeep { // Glob sorts: oldest first (same-width microsecond stamps)
		_ = fsys.RemoveAll(aside[0])
		aside = aside[1:]
	}
}

// walRoom: a proposal of n body bytes fits under [partition] wal_bytes_max
// (the retained prepare WAL plus what is in flight). One proposal is
// always let through when nothing is in flight (the bound is at least one
// whole prepare), so a group never stalls on its own bound; not while a
// checkpoint's log sync is out (partition_presync.go): the checkpoint that
// follows it reclaims the WAL and promotes what waits.
func (s *partitionShard) walRoom(e *partitionEntry, n int) bool {
	limit := s.cfg.walBytesMax
	if limit == 0 || e.wal == nil {
		return true // (a single node keeps no WAL: its journal slots bound it)
	}
	if e.inflight == 0 && e.presync == nil && e.presyncDone == nil {
		return true
	}
	return e.walRetained()+e.walQueuedBytes+uint64(n) <= limit
}

// walPressure: the retained WAL passed half its bound; a checkpoint at
// what is applied (before the core asks for one) lets the next superblock
// reclaim it.
func (s *partitionShard) walPressure(e *partitionEntry) bool {
	limit := s.cfg.walBytesMax
	if limit == 0 || e.wal == nil || e.walRetained() <= limit/2 {
		return false
	}
	cm := e.group.CommitMin()
	return cm > e.checkpointOp && e.appliedOp == cm
}

// walRetained is the WAL's size after its last completed write (the loop
// does not read the WAL itself while a write may be running off it).
func (e *partitionEntry) walRetained() uint64 {
	if e.wal == nil {
		return 0
	}
	return e.walBytes
}

// noteWritten (a write's done, shard goroutine): a primary's Ready carries
// its own proposals as entries; once they are in the WAL they count there.
func (e *partitionEntry) noteWritten(entries []consensus.Prepare) {
	for i := range entries {
		e.walQueuedBytes -= min(e.walQueuedBytes, uint64(len(entries[i].Body)))
	}
}

// noteInflightEnded: with nothing in flight nothing is queued for the WAL
// (a proposal that ended without being written leaves no count behind).
func (e *partitionEntry) noteInflightEnded() {
	if e.inflight == 0 {
		e.walQueuedBytes = 0
	}
}

// barrierNeeded: a Ready's entries need the WAL synced before their
// PrepareOk leaves. Each entry has the durability class of what it
// writes: sends, purges and cuts the topic's durability, offset stores
// and deletes its consumer_offset_durability. One sync covers every
// entry of the Ready (a shared barrier persists weaker co-batched entries
// too, which promises nothing more for them).
func (e *partitionEntry) barrierNeeded(entries []consensus.Prepare) bool {
	for i := range entries {
		switch wire.Operation(entries[i].Header.Operation) {
		case partitionOpReserve, partitionOpPurge:
			// Always durable before its PrepareOk: a reservation
			// (partition_reserve.go), a purge (partition_purge_replay.go).
			return true
		case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
			if e.offsetsPersisted {
				return true
			}
		default:
			if e.persisted {
				return true
			}
		}
	}
	return false
}

// fsyncFailed marks a failed fsync: the group stays fenced until it is
// opened again (partition_fence.go). marked: the failure is recorded
// durably (partition_fsync_failed.go), so the next open, a reopen in the
// background or a restart, works through fresh files.
type fsyncFailed struct {
	err     error
	marked  bool
	markErr error // why the marker could not be written
}

func (f *fsyncFailed) Error() string { return f.err.Error() }
func (f *fsyncFailed) Unwrap() error { return f.err }

// walHoldsAbove reports whether the group's WAL holds a prepare above op
// (a damaged WAL counts as holding one: what it held is unknown).
func (p *partitionPlane) walHoldsAbove(e *partitionEntry, op uint64) (bool, error) {
	wal, entries, err := journal.OpenPrepareLog(partitionWALPath(e.dir), op+1, journal.WithFS(p.fsys))
	if wal != nil {
		defer wal.Close()
	}
	if errors.Is(err, journal.ErrPrepareLogDamaged) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) > 0, nil
}
