package node

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
)

// metaStorage is the metadata group's durable state in <system.path>/metadata:
// journal.wal (fsync per append), superblock.{a,b}, snapshot.bin.
type metaStorage struct {
	dir        string
	wal        *journal.WAL
	superblock *journal.Superblock
	identity   journal.Identity
	// The latest snapshot written, named by the next superblock write.
	snapshotOp       uint64
	snapshotChecksum uint64
}

var _ durableLog = (*metaStorage)(nil)

// openMetaStorage opens the metadata directory and reads back what a
// restart needs, verifying that the superblock and the snapshot pair up
// (server-design §4.7).
func openMetaStorage(dir string, id journal.Identity) (*metaStorage, recovered, error) {
	snap, err := journal.ReadSnapshot(dir)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata snapshot: %w", err)
	}
	sb, sbState, err := journal.OpenSuperblock(dir, id)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata superblock: %w", err)
	}
	rec := recovered{snapshot: snap}
	st := &metaStorage{dir: dir, superblock: sb, identity: id}
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
	wal, entries, err := journal.OpenWAL(dir)
	if err != nil {
		return nil, recovered{}, fmt.Errorf("metadata journal: %w", err)
	}
	st.wal = wal
	rec.entries = entries
	return st, rec, nil
}

func (s *metaStorage) Append(entries ...consensus.Prepare) error { return s.wal.Append(entries...) }

func (s *metaStorage) TruncateFrom(op uint64) error { return s.wal.TruncateFrom(op) }

func (s *metaStorage) WriteSuperblock(v consensus.VsrState) error {
	if v.CheckpointOp != s.snapshotOp {
		return fmt.Errorf("superblock names checkpoint op %d but the latest snapshot is op %d", v.CheckpointOp, s.snapshotOp)
	}
	return s.superblock.Write(journal.SuperblockState{
		Identity: s.identity, VsrState: v, CheckpointChecksum: consensus.Uint128{Lo: s.snapshotChecksum},
	})
}

func (s *metaStorage) WriteSnapshot(snap consensus.Snapshot) error {
	if err := journal.WriteSnapshot(s.dir, snap); err != nil {
		return err
	}
	s.snapshotOp, s.snapshotChecksum = snap.Op, snap.Checksum
	return nil
}

func (s *metaStorage) Compact(upToOp uint64) error { return s.wal.Compact(upToOp) }

func (s *metaStorage) Close() error {
	if s.wal == nil {
		return nil
	}
	return errors.Join(s.wal.Close())
}
