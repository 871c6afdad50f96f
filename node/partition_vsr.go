package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodestream/lodestream/partitions"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
)

// A partition group's durable VSR state (cluster mode): the two-slot
// superblock (journal.Superblock) in the partition's directory holds view,
// log_view, commit_max, the view headers, the checkpoint op and its anchor,
// and the offset frontier, i.e. where the log ended when that op was
// applied; the prepare WAL (partition_wal.go) holds the journal above the
// checkpoint. A restarted replica holds its committed prefix in its
// segments and its acknowledged prepares in the WAL: it restarts
// Recovering (consensus.Restart) and rejoins through the view's primary,
// or, when no primary answers (every node restarted), elects one on the
// recovered journals. It never comes back as primary of a fresh view 0.
//
// A single node keeps no partition superblock: its one-replica groups are
// always primary, stamp from the log, and start fresh on every boot.

// startGroup creates the partition's consensus group: fresh for a new
// partition (its superblock written before the group runs), restarted from
// the superblock otherwise.
func (p *partitionPlane) startGroup(e *partitionEntry, d desiredPartition) error {
	cfg := p.groupConfig(e.key, d.part)
	e.appliedNext = e.log.NextOffset() // a new group; a restart replays from its checkpoint (restartGroup)
	e.writtenReserved = ^uint64(0)     // none on disk yet: the first checkpoint writes checkpoint.reserved
	if !p.clustered() {
		g, err := consensus.New(cfg)
		if err != nil {
			return err
		}
		e.group = g
		return nil
	}
	sb, st, err := journal.OpenSuperblock(e.dir, p.identity, journal.WithFS(p.fsys))
	if err != nil {
		return err
	}
	e.superblock = sb
	if d := sb.OlderCopyDamage(); d != "" {
		p.log.Warn("partition superblock: a damaged copy was set aside", "dir", e.dir, "damage", d)
	}
	if st, err = p.newestSuperblock(e, sb, st); err != nil {
		return err
	}
	// A failed fsync of the WAL in the last run (partition_fsync_failed.go).
	fsyncFailed, err := p.fsyncFailedMarked(e)
	if err != nil {
		return err
	}
	if st, err = p.takeAmnesiaMarker(e, sb, st, fsyncFailed); err != nil {
		return err
	}
	empty := e.log.Stats().MessagesCount == 0 && e.log.NextOffset() == 0 && len(e.log.ConsumerOffsets()) == 0
	if st == nil && empty && d.live {
		g, err := consensus.New(cfg)
		if err != nil {
			return err
		}
		if err := p.resetPartitionWAL(e); err != nil {
			return err
		}
		// Durable before the group says anything: a restart then always
		// finds a superblock and rejoins Recovering.
		if err := sb.Write(journal.SuperblockState{Identity: p.identity, VsrState: consensus.VsrState{
			View: g.View(), LogView: g.LogView()}}); err != nil {
			return fmt.Errorf("write the new group's superblock: %w", err)
		}
		e.group = g
		return nil
	}
	if err := p.restartGroup(e, cfg, st, empty, fsyncFailed); err != nil {
		_ = e.closeWAL()
		return err
	}
	return nil
}

// writeFirstSuperblock makes a group that restarts without a superblock
// durable before it says anything, as a new group's is: the prepares its
// WAL then holds and acknowledges are replayed at its next restart. Before
// (metadata simulator finding M8), such a replica ran the group in view 0
// without one; restarted again, it found data without a superblock, reset
// its WAL and voted with an empty log, and a view change among such
// replicas dropped acknowledged persisted messages.
func (p *partitionPlane) writeFirstSuperblock(e *partitionEntry) error {
	if err := e.superblock.Write(journal.SuperblockState{Identity: p.identity}); err != nil {
		return fmt.Errorf("write the restarted group's first superblock: %w", err)
	}
	return nil
}

// newestSuperblock is the group's durable state: the newer of its own
// slots and its newest record in the node's superblock log.
func (p *partitionPlane) newestSuperblock(e *partitionEntry, sb *journal.Superblock, st *journal.SuperblockState) (*journal.SuperblockState, error) {
	if p.sbLog == nil {
		return st, nil
	}
	seq, logged, ok, err := p.sbLog.Latest(superblockKey(e.key, e.revision))
	if err != nil {
		return nil, fmt.Errorf("read the partition's superblock record: %w", err)
	}
	if !ok || seq <= sb.Sequence() {
		return st, nil
	}
	sb.NoteSequence(seq)
	return logged, nil
}

// takeAmnesiaMarker moves the boot's amnesia marker (boot_record.go) into
// the group's superblock: a group that may have acknowledged prepares the
// last run never synced records VsrState.Amnesiac durably, then the marker
// goes. A group without a superblock never spoke, and one whose every
// entry was synced before its PrepareOk (durability and
// consumer_offset_durability both persisted) lost nothing acknowledged:
// their markers just go. A failed fsync of the group's WAL in its last
// run (fsync.failed, partition_fsync_failed.go) counts as a power loss of
// that WAL; that marker goes once the WAL is rewritten (restartGroup).
func (p *partitionPlane) takeAmnesiaMarker(e *partitionEntry, sb *journal.Superblock, st *journal.SuperblockState,
	fsyncFailed bool) (*journal.SuperblockState, error) {
	marker := filepath.Join(e.dir, amnesiaMarkerFile)
	if _, err := p.fsys.Stat(marker); errors.Is(err, os.ErrNotExist) && !fsyncFailed {
		return st, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("partition amnesia marker: %w", err)
	}
	if st != nil && !st.Amnesiac && !(e.persisted && e.offsetsPersisted) {
		marked := *st
		marked.Amnesiac = true
		if err := sb.Write(marked); err != nil {
			return nil, fmt.Errorf("record the group's amnesia in its superblock: %w", err)
		}
		st = &marked
		p.log.Info("partition group rejoins amnesiac: it may have acknowledged prepares the last run never synced",
			"dir", e.dir, "view", st.View, "commit_max", st.CommitMax)
	}
	// Not synced: a marker brought back by a crash marks the group again (harmless).
	if err := p.fsys.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the partition amnesia marker: %w", err)
	}
	return st, nil
}

// superblockKey names a partition group's incarnation in the node's
// superblock log: stream, topic, partition (u32 each) and the metadata
// revision that created it (u64).
func superblockKey(k partitionKey, revision uint64) journal.SuperblockKey {
	var key journal.SuperblockKey
	binary.LittleEndian.PutUint32(key[0:], k.stream)
	binary.LittleEndian.PutUint32(key[4:], k.topic)
	binary.LittleEndian.PutUint32(key[8:], k.partition)
	binary.LittleEndian.PutUint64(key[12:], revision)
	return key
}

// superblockLive (compaction of the superblock log) keeps the records of
// every partition whose directory exists: a deleted partition's are
// dropped; a re-created one's old records are kept until its directory
// goes (harmless: its new incarnation has another key).
func (p *partitionPlane) superblockLive(key journal.SuperblockKey) bool {
	k := partitionKey{binary.LittleEndian.Uint32(key[0:]), binary.LittleEndian.Uint32(key[4:]), binary.LittleEndian.Uint32(key[8:])}
	_, err := p.fsys.Stat(p.partitionDir(k))
	return !errors.Is(err, os.ErrNotExist)
}

// openSuperblockLog opens the node's partition superblock log (cluster
// mode) and hands it to the shards.
func (p *partitionPlane) openSuperblockLog(dataDir string) (*journal.SuperblockLog, error) {
	l, err := journal.OpenSuperblockLog(filepath.Join(dataDir, superblockLogDir), p.identity, journal.SuperblockLogBytesMin, p.superblockLive, journal.WithFS(p.fsys))
	if err != nil {
		return nil, fmt.Errorf("open the partition superblock log: %w", err)
	}
	p.sbLog = l
	for _, sh := range p.shards {
		sh.sbLog = l
	}
	return l, nil
}

// superblockLogDir holds the node's partition superblock log.
const superblockLogDir = "partition_groups"

// restartGroup restarts the group of a partition this node held before:
// from its superblock, checkpoint and prepare WAL when it has them.
func (p *partitionPlane) restartGroup(e *partitionEntry, cfg consensus.Config, st *journal.SuperblockState, empty, fsyncFailed bool) error {
	restored := consensus.Restored{Superblock: &consensus.VsrState{}}
	e.inlineSends = nil // set again from the WAL's entries below
	// openWAL: the WAL's entries at or above fromOp; after a failed fsync
	// (partition_fsync_failed.go) cut at any damage, as after a power
	// loss, and written again through a fresh file.
	// walOpened: the group restarts from its WAL, which holds every op
	// past its checkpoint; the log past the checkpoint may hold batches
	// staged for ops a view change drops (partition_stage.go), so it is
	// taken back below and those ops apply again.
	walOpened := false
	openWAL := func(fromOp uint64, amnesiac bool) (entries []consensus.Prepare, lost bool, err error) {
		entries, lost, err = p.openPartitionWAL(e, fromOp, amnesiac || fsyncFailed)
		walOpened = err == nil
		if err == nil && fsyncFailed {
			if err = e.wal.Rewrite(entries); err != nil {
				err = fmt.Errorf("rewrite the prepare WAL after a failed fsync: %w", err)
			} else {
				p.log.Warn("partition prepare WAL rewritten through a fresh file after a failed fsync; the group rejoins amnesiac",
					"dir", e.dir, "entries", len(entries))
			}
		} else if err == nil && e.wal.RefCount() > 0 {
			// Their bodies were read from the segments; the cut below may
			// remove those bytes, so the WAL holds them inline first.
			if err = e.wal.Rewrite(entries); err != nil {
				err = fmt.Errorf("rewrite the prepare WAL's segment references inline: %w", err)
			}
		}
		return entries, lost, err
	}
	switch {
	case st == nil && empty:
		// Nothing here, for a partition created before this node booted:
		// a node whose storage was wiped (or lost before the group's first
		// superblock write). If it ran the group before, it may have
		// acknowledged prepares it no longer holds, so it must not vote
		// with an empty log: it rejoins Recovering (no vote until the
		// view's primary answers) and repairs or transfers the rest.
		p.log.Info("partition created before this boot has no superblock: rejoining Recovering", "dir", e.dir,
			"storage_lost", p.storageLost)
		restored.StorageLost = p.storageLost
		e.appliedNext = 0
		if err := p.resetPartitionWAL(e); err != nil {
			return err
		}
		if err := p.writeFirstSuperblock(e); err != nil {
			return err
		}
	case st == nil:
		// Data without a superblock (written by an older build, or the
		// superblock was removed): which op the data reflects is unknown.
		// Restart with nothing applied; replays of what the log holds are
		// recognised (applySend), the rest comes by state transfer.
		p.log.Warn("partition data without a superblock: rejoining with nothing applied", "dir", e.dir)
		e.appliedNext = 0
		if err := startOffsetsAtOpZero(e); err != nil {
			return fmt.Errorf("start the consumer offsets of a group with no superblock: %w", err)
		}
		if err := p.resetPartitionWAL(e); err != nil {
			return err
		}
		if err := p.writeFirstSuperblock(e); err != nil {
			return err
		}
	default:
		vs := st.VsrState
		restored.Superblock = &vs
		if vs.CheckpointOp > 0 {
			// A purge carried out after the checkpoint restarted the
			// offsets: the frontier is of the epoch before it.
			purgedAfter := e.marker.PurgeOp > vs.CheckpointOp
			if next := e.log.NextOffset(); next < st.OffsetFrontier && !purgedAfter {
				// The superblock names data the log no longer holds (the
				// page cache was lost under durability = replicated, or
				// damage was set aside): rejoin with nothing applied and
				// transfer it back. Its WAL entries build on the lost prefix,
				// so the WAL starts empty; if it still held prepares above
				// the checkpoint (damage, not a lost page cache), this
				// replica acknowledged prepares it now drops, and must not
				// vote until the view's primary answers (StorageLost).
				acked, err := p.walHoldsAbove(e, vs.CheckpointOp)
				if err != nil {
					return err
				}
				p.log.Warn("partition log ends below its recorded frontier: rejoining with nothing applied", "dir", e.dir,
					"next_offset", next, "frontier", st.OffsetFrontier, "checkpoint_op", vs.CheckpointOp,
					"wal_held_acknowledged_prepares", acked)
				restored.StorageLost = acked
				if acked {
					if err := p.markStorageLost(e); err != nil { // before the WAL is cleared
						return err
					}
				}
				e.appliedNext = 0
				// The offset files hold what was last applied, above the
				// checkpoint: report this checkpoint's until the ops above it
				// are applied again.
				if err := p.restoreCheckpointOffsets(e, vs.CheckpointOp); err != nil {
					return err
				}
				// The transfer's checkpoint may be older (the primary's own):
				// what this one's offsets reflect is not applied twice.
				e.offsetsAppliedOp = vs.CheckpointOp
				vs.CheckpointOp, vs.AnchorChecksum, vs.AnchorTimestamp = 0, 0, 0
				if err := p.resetPartitionWAL(e); err != nil {
					return err
				}
			} else {
				table, err := readDedupFile(p.fsys, e.dir, vs.CheckpointOp)
				if err != nil {
					p.log.Warn("partition retry table unreadable: replays of earlier sends are not recognised", "dir", e.dir, "err", err)
				}
				// Back to the checkpoint's offsets: the replay above it moves
				// them forward again (finding 3, partition_cp_offsets.go).
				if err := p.restoreCheckpointOffsets(e, vs.CheckpointOp); err != nil {
					return err
				}
				if purgedAfter {
					// Unless a purge came since, which cleared them: the offsets
					// are those of the purge op (none), and the stores between
					// the checkpoint and it are erased (partition_purge_replay.go).
					if err := installConsumerOffsets(e.log, nil); err != nil {
						return fmt.Errorf("clear the consumer offsets a purge after the checkpoint cleared: %w", err)
					}
					e.offsetsAppliedOp = e.marker.PurgeOp
				}
				if reserved, ok, err := readCheckpointReserved(p.fsys, e.dir, vs.CheckpointOp); err != nil {
					p.log.Warn("partition checkpoint reservation unreadable: replays check the latest applied one", "dir", e.dir, "err", err)
				} else if ok {
					// In memory only: partition.meta keeps the latest, and the
					// replayed reserve ops above the checkpoint move it on again.
					e.marker.OffsetsReserved = reserved
					e.checkpointReserved, e.writtenReserved = reserved, reserved
				}
				cp := checkpointOf(e.log, st.OffsetFrontier, e.marker.OffsetsReserved, e.marker.purgeState(), !purgedAfter)
				cp.dedup = table.encode(nil)
				data := cp.encode()
				restored.Snapshot = &consensus.Snapshot{Op: vs.CheckpointOp, Data: data, Checksum: snapshotChecksum(data)}
				e.appliedOp, e.appliedNext = vs.CheckpointOp, st.OffsetFrontier
				e.checkpointOp, e.checkpointFrontier, e.checkpointDedup = vs.CheckpointOp, st.OffsetFrontier, cp.dedup
				e.dedup = table
				entries, damaged, err := openWAL(vs.CheckpointOp, vs.Amnesiac)
				if err != nil {
					return err
				}
				restored.Entries = entries
				restored.StorageLost = damaged
				e.walReclaimed = vs.CheckpointOp
				e.inlineSends = sendsAbove(entries, vs.CheckpointOp)
			}
		} else {
			e.appliedNext = 0 // no checkpoint: every op is applied again from the first
			if err := startOffsetsAtOpZero(e); err != nil {
				return fmt.Errorf("start the consumer offsets of a group with no checkpoint: %w", err)
			}
			entries, damaged, err := openWAL(0, vs.Amnesiac)
			if err != nil {
				return err
			}
			restored.Entries = entries
			restored.StorageLost = damaged
			e.inlineSends = sendsAbove(entries, 0)
		}
	}
	if err := p.noteStorageLost(e, &restored); err != nil {
		return err
	}
	if restored.StorageLost || (st != nil && st.Amnesiac) || walOpened {
		why := takeBackFromItsWAL
		switch {
		case restored.StorageLost:
			why = takeBackLostWAL
		case st != nil && st.Amnesiac:
			why = takeBackAmnesiac
		}
		if err := p.cutPastCheckpoint(e, why); err != nil {
			return err
		}
	}
	// The prepare WAL holds every prepare the group acknowledged that no
	// view change removed: each is written before its PrepareOk leaves, a
	// crash cuts only a tail nothing acknowledged, and a truncation keeps
	// the prepares its own Write re-appends (journal.PrepareLog). A lost
	// page cache is reported as amnesia (boot_record.go, fsync.failed),
	// which the core puts first; lost storage is not intact at all.
	restored.JournalIntact = !restored.StorageLost
	if fsyncFailed {
		// The superblock records the amnesia (takeAmnesiaMarker) and the
		// WAL was rewritten or started empty: the marker has done its work.
		if err := p.dropFsyncFailedMarker(e); err != nil {
			return err
		}
	}
	g, err := consensus.Restart(cfg, restored)
	if err != nil {
		return err
	}
	e.group = g
	return nil
}

// errInstallPending: a state transfer's records are still being fetched;
// the Ready that carries the snapshot waits, un-advanced.
var errInstallPending = errors.New("partition state transfer in progress")

// persistVSR makes a Ready's superblock durable before anything it reveals
// leaves (cluster mode). A Ready that carries a transferred snapshot waits
// until the records up to its frontier are in the log (the transfer job),
// so the superblock never names a checkpoint the log does not hold.
func (e *partitionEntry) persistVSR(rd *consensus.Ready) error {
	w, err := e.prepareWrite(rd)
	if err != nil || w == nil {
		return err
	}
	errs := []error{nil}
	runWrites([]*durableWrite{w}, errs, make(chan struct{}, 1), e.shard.sbLog)
	if errs[0] != nil {
		return errs[0]
	}
	if w.done != nil {
		w.done()
	}
	return nil
}

// prepareWrite implements batchedSteps: the transfer check in order, then
// the write the shard runs off its loop together with other groups': the
// Ready's journal work into the prepare WAL (synced on a persisted topic),
// then the superblock, then reclaiming the WAL history its checkpoint
// covers. The write reads only what is captured here; the entry's fields
// it settles are set by done, on the loop.
func (e *partitionEntry) prepareWrite(rd *consensus.Ready) (*durableWrite, error) {
	if rd.Snapshot != nil {
		if err := e.shard.transferReady(e, *rd.Snapshot); err != nil {
			return nil, err
		}
	}
	if e.superblock == nil {
		return e.singleNodeWrite(rd), nil // a single node: no superblock, no WAL
	}
	wal, from, entries := e.wal, rd.Truncate, rd.Entries
	syncWAL := e.barrierNeeded(entries)
	var st *journal.SuperblockState
	if rd.Superblock != nil {
		if rd.Superblock.CheckpointOp != e.checkpointOp {
			return nil, fmt.Errorf("superblock names checkpoint op %d, the partition's checkpoint is op %d", rd.Superblock.CheckpointOp, e.checkpointOp)
		}
		st = &journal.SuperblockState{Identity: e.shard.identity, VsrState: *rd.Superblock, OffsetFrontier: e.checkpointFrontier}
	}
	if st == nil && (wal == nil || (from == 0 && len(entries) == 0)) {
		// Nothing to write but, perhaps, sends this Ready commits that
		// were left inline: staged off the loop, apply adopts them.
		return e.stagePendingWrite(rd), nil
	}
	// The retry table of the checkpoint is on disk before the superblock
	// that names the checkpoint.
	// (Rewritten only when the table changed: an older file of an
	// unchanged table is valid for this checkpoint too.)
	var dedup []byte
	if e.checkpointDedupDirty {
		dedup = e.checkpointDedup
	}
	// The reservation as of the checkpoint is read back only for a
	// checkpoint above op 0 (restartGroup): a group that never checkpointed
	// writes none. Its view changes wrote one each (two fsyncs and a
	// rename per group), most of a 10,000-partition failover's time.
	writeReserved := st != nil && e.superblock != nil && e.checkpointOp > 0 && e.checkpointReserved != e.writtenReserved
	reservedAt := e.checkpointReserved
	var offsets []partitions.ConsumerOffsetEntry
	writeOffsets := st != nil && e.checkpointOffsetsDirty
	if writeOffsets {
		offsets = e.checkpointOffsets
	}
	sb, dir, op, reclaimed := e.superblock, e.dir, e.checkpointOp, e.walReclaimed
	// A cluster replica's log is synced lazily: before a superblock names a
	// checkpoint whose frontier it must hold, and so before the WAL history
	// is reclaimed. A persisted topic needs it because the WAL holds what
	// was acknowledged; a replicated one too, or after a power loss of
	// every replica the superblocks would name a frontier no disk holds,
	// and the group could only wait for a transfer nobody can serve.
	// Only for the first superblock naming a checkpoint: a later one (a
	// view change) names the frontier that sync already made durable; a
	// sync per group per view change cost a 10,000-partition failover
	// about 1.6 s (docs/cluster.md, "Resting groups").
	// A log synced ahead of the checkpoint (partition_presync.go) is not
	// synced again here.
	syncLog := st != nil && wal != nil && st.CheckpointOp > reclaimed && st.CheckpointOp != e.logSyncedCheckpoint
	log := e.log
	candidates := e.stageCandidates(from, entries)
	pending := e.pendingInlineSends(from, candidates != nil || e.commitsInlineSend(from, rd.Committed))
	var refs []journal.BodyRef
	var pendingStaged []bool
	primary := e.group.IsPrimary()
	var retained int64 // the WAL's bytes after the write
	// The superblock state goes to the node's superblock log with the
	// other groups' of the batch (one sync for all, issue 8 point 8); a
	// shard without one (tests) writes the group's own slots.
	var record *journal.SuperblockLogEntry
	if st != nil && e.shard.sbLog != nil {
		record = &journal.SuperblockLogEntry{Key: superblockKey(e.key, e.revision), Sequence: sb.NextSequence(), State: *st}
	}
	fsys := e.shard.fsys
	run := func() error {
		pendingStaged = stagePending(log, pending)
		if wal != nil && (from != 0 || len(entries) > 0) {
			// Bodies staged in the segment first (partition_stage.go); on a
			// persisted topic synced before a record names them.
			refs = stageEntries(log, entries, candidates)
			if refs != nil && syncWAL {
				if err := log.Sync(); err != nil {
					return segmentSyncFailed(fmt.Errorf("sync the staged batches: %w", err))
				}
			}
			if err := wal.WriteRefs(from, entries, refs); err != nil {
				return err
			}
			if syncWAL {
				if err := wal.Sync(); err != nil {
					return failedSync(fsys, dir, fmt.Errorf("sync the prepare WAL: %w", err))
				}
			}
			if from != 0 && log != nil {
				// The truncated ops' staged bytes, once no record names them.
				if err := log.CutStagedFrom(from); err != nil {
					return fmt.Errorf("cut the staged batches of truncated ops: %w", err)
				}
			}
		}
		if st != nil {
			if syncLog {
				if err := log.Sync(); err != nil {
					return segmentSyncFailed(fmt.Errorf("sync the partition log before checkpoint op %d: %w", op, err))
				}
			}
			if dedup != nil {
				if err := writeDedupFile(fsys, dir, op, dedup, reclaimed); err != nil {
					return err
				}
			}
			if writeOffsets {
				if err := writeCheckpointOffsets(fsys, dir, op, offsets, reclaimed); err != nil {
					return err
				}
			}
			if writeReserved {
				if err := writeCheckpointReserved(fsys, dir, op, reservedAt, reclaimed); err != nil {
					return err
				}
			}
			if record == nil {
				if err := sb.Write(*st); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// After the superblock is durable: reclaim the WAL history its
	// checkpoint covers; note what the WAL holds now.
	post := func() error {
		if wal == nil {
			return nil
		}
		if st != nil && st.CheckpointOp > reclaimed {
			if err := wal.Reclaim(st.CheckpointOp); err != nil {
				return err
			}
			reclaimed = st.CheckpointOp
		}
		retained = wal.Bytes() + wal.RefBytes() // referenced bodies count against wal_bytes_max
		return nil
	}
	done := func() {
		if record != nil {
			sb.NoteSequence(record.Sequence)
		}
		e.noteInlineSends(from, pending, pendingStaged, entries, refs)
		if st != nil {
			e.durableLogView = st.LogView
		}
		if wal != nil {
			e.walBytes = uint64(retained)
		}
		if primary {
			e.noteWritten(entries) // counted in walBytes now, no longer as queued
		}
		if st == nil {
			return
		}
		if dedup != nil {
			e.checkpointDedupDirty = false
		}
		if writeOffsets {
			e.checkpointOffsetsDirty, e.writtenOffsets, e.offsetsFileWritten = false, offsets, true
		}
		if writeReserved {
			e.writtenReserved = reservedAt
		}
		e.walReclaimed = reclaimed
	}
	return &durableWrite{run: run, record: record, post: post, done: done}, nil
}
