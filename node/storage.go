package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// metaLockFileName is the lock file guarding the metadata directory: one
// server process per data directory.
const metaLockFileName = ".lock"

// metaStorage is the metadata group's durable state in <system.path>/metadata:
// the WAL segments journal-<seq>.wal (fsync per append), superblock.{a,b}, snapshot.bin, and the
// .lock file held (flock) for the process's lifetime.
type metaStorage struct {
	dir        string
	fsys       vfs.FS
	lock       *os.File // nil on a simulated disk (lockMetaDir)
	wal        *journal.WAL
	superblock *journal.Superblock
	identity   journal.Identity
	// The latest snapshot written, named by the next superblock write.
	snapshotOp       uint64
	snapshotChecksum uint64
}

var _ durableLog = (*metaStorage)(nil)

// openMetaStorage locks the metadata directory, opens it and reads back
// what a restart needs, verifying that the superblock and the snapshot
// pair up (server-design §4.7).
func openMetaStorage(fsys vfs.FS, dir string, id journal.Identity) (st *metaStorage, rec recovered, err error) {
	if err := ensureMetaDir(fsys, dir); err != nil {
		return nil, recovered{}, err
	}
	var lock *os.File
	if fsys == vfs.OS {
		// A simulated disk belongs to one process; a real one may be shared.
		if lock, err = lockMetaDir(dir); err != nil {
			return nil, recovered{}, err
		}
		defer func() {
			if err != nil {
				lock.Close() // releases the flock
			}
		}()
	}
	withFS := journal.WithFS(fsys)
	snap, err := journal.ReadSnapshot(dir, withFS)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata snapshot: %w", err)
	}
	sb, sbState, err := journal.OpenSuperblock(dir, id, withFS)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata superblock: %w", err)
	}
	rec = recovered{snapshot: snap, superblockDamage: sb.OlderCopyDamage()}
	st = &metaStorage{dir: dir, fsys: fsys, lock: lock, superblock: sb, identity: id}
	if sbState != nil {
		vsr := sbState.VsrState
		rec.superblock = &vsr
		switch {
		case snap == nil && vsr.CheckpointOp > 0:
			return nil, recovered{}, fmt.Errorf("metadata superblock names checkpoint op %d but %s/snapshot.bin is missing", vsr.CheckpointOp, dir)
		case snap != nil && vsr.CheckpointOp > snap.Op:
			return nil, recovered{}, fmt.Errorf("metadata superblock names checkpoint op %d, newer than the snapshot's op %d", vsr.CheckpointOp, snap.Op)
		case snap != nil && vsr.CheckpointOp == snap.Op && sbState.CheckpointChecksum.Lo != snap.Checksum:
			return nil, recovered{}, fmt.Errorf("metadata superblock checkpoint checksum %016x does not match snapshot op %d checksum %016x",
				sbState.CheckpointChecksum.Lo, snap.Op, snap.Checksum)
		}
	}
	if snap != nil {
		st.snapshotOp, st.snapshotChecksum = snap.Op, snap.Checksum
	}
	wal, entries, err := journal.OpenWAL(dir, withFS)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata journal: %w", err)
	}
	st.wal = wal
	rec.walTornAt, rec.walTornBytes = wal.TornTail()
	rec.walTornFile = wal.TornTailFile()
	rec.entries = entriesFromSnapshotOp(entries, snap)
	return st, rec, nil
}

// entriesFromSnapshotOp keeps the journal entries consensus.Restart wants:
// those at or above the snapshot op. The entry AT the snapshot op anchors
// the hash chain and the timestamp floor (it is what survives when the
// superblock write after the snapshot was torn); entries below it are
// left over from a checkpoint whose compaction had not run yet.
func entriesFromSnapshotOp(entries []consensus.Prepare, snap *consensus.Snapshot) []consensus.Prepare {
	if snap == nil {
		return entries
	}
	for i := range entries {
		if entries[i].Header.Op >= snap.Op {
			return entries[i:]
		}
	}
	return nil
}

// lockMetaDir takes an exclusive, non-blocking
// flock on dir/.lock, so a second server on the same data directory
// refuses to boot instead of interleaving writes with the first. The lock
// lives as long as the returned file (the kernel drops it when the
// process dies, so a crash never leaves a stale lock).
func lockMetaDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, metaLockFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open metadata lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("metadata directory %s is locked by another process (is another server running on this data directory?): %w", dir, err)
		}
		return nil, fmt.Errorf("lock metadata directory %s: %w", dir, err)
	}
	return f, nil
}

// ensureMetaDir creates dir (and parents, system.path included), each
// created level synced in its parent, so a power loss after the first
// boot cannot drop the directory with everything synced under it.
func ensureMetaDir(fsys vfs.FS, dir string) error {
	if err := vfs.MkdirAllDurable(fsys, dir, 0o755); err != nil {
		return fmt.Errorf("create metadata directory: %w", err)
	}
	return nil
}

func (s *metaStorage) Append(entries ...consensus.Prepare) error { return s.wal.Append(entries...) }

// TruncateAndAppend carries out a Ready's Truncate and its re-appended
// Entries as one durable step (journal.WAL.TruncateAndAppend).
func (s *metaStorage) TruncateAndAppend(from uint64, entries []consensus.Prepare) error {
	return s.wal.TruncateAndAppend(from, entries)
}

func (s *metaStorage) WriteSuperblock(v consensus.VsrState) error {
	if v.CheckpointOp != s.snapshotOp {
		return fmt.Errorf("superblock names checkpoint op %d but the latest snapshot is op %d", v.CheckpointOp, s.snapshotOp)
	}
	return s.superblock.Write(journal.SuperblockState{
		Identity: s.identity, VsrState: v, CheckpointChecksum: consensus.Uint128{Lo: s.snapshotChecksum},
	})
}

func (s *metaStorage) WriteSnapshot(snap consensus.Snapshot) error {
	if err := journal.WriteSnapshot(s.dir, snap, journal.WithFS(s.fsys)); err != nil {
		return err
	}
	s.snapshotOp, s.snapshotChecksum = snap.Op, snap.Checksum
	return nil
}

// Compact releases the journal entries a durable checkpoint covers: every
// op below checkpointOp. The entry at checkpointOp stays as the restart's
// hash-chain and timestamp anchor (handed back by entriesFromSnapshotOp).
func (s *metaStorage) Compact(checkpointOp uint64) error {
	if checkpointOp == 0 {
		return nil
	}
	return s.wal.Compact(checkpointOp - 1)
}

// Close closes the journal and then releases the directory lock.
func (s *metaStorage) Close() error {
	var errs []error
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
		s.lock = nil
	}
	return errors.Join(errs...)
}
