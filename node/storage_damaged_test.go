package node

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// TestDamagedMetadataWALIsSetAsideOnAClusterReplica: a metadata WAL with
// a damaged record (here a flipped byte of its first record: interior
// corruption) refuses a single node's boot, naming the remedy; a cluster
// replica sets the WAL aside, marks its storage lost first, and opens with
// an empty WAL and its checkpoint, to rejoin without a vote.
func TestDamagedMetadataWALIsSetAsideOnAClusterReplica(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, clustered := range []bool{false, true} {
		m := vfs.NewMem(1)
		const dataDir = "/data"
		id := journal.Identity{ReplicaID: 0, ReplicaCount: 1}
		if clustered {
			id = journal.Identity{ReplicaID: 1, ReplicaCount: 3}
		}
		st, _, err := openMetaStorage(m, filepath.Join(dataDir, "metadata"), id)
		if err != nil {
			t.Fatal(err)
		}
		snap := consensus.Snapshot{Op: 0, Data: []byte("state")}
		snap.Checksum = snapshotChecksum(snap.Data)
		if err := st.WriteSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		if err := st.WriteSuperblock(consensus.VsrState{}); err != nil {
			t.Fatal(err)
		}
		for op := uint64(1); op <= 3; op++ {
			if err := st.Append(consensus.Prepare{Header: consensus.PrepareHeader{Op: op, Operation: 128}, Body: []byte("body")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		segs, _ := vfs.Glob(m, filepath.Join(dataDir, "metadata", "journal-*.wal"))
		if len(segs) != 1 {
			t.Fatalf("WAL segments %v", segs)
		}
		if err := m.FlipByte(segs[0], 40); err != nil {
			t.Fatal(err)
		}

		st, rec, setAside, err := openMetaStorageSettingAside(m, dataDir, id, clustered, 1_000, log)
		if !clustered {
			if !errors.Is(err, journal.ErrWALCorrupt) || setAside {
				t.Fatalf("single node: %v (set aside %v), want ErrWALCorrupt", err, setAside)
			}
			continue
		}
		if err != nil || !setAside {
			t.Fatalf("cluster replica: %v (set aside %v)", err, setAside)
		}
		defer st.Close()
		if len(rec.entries) != 0 || rec.snapshot == nil || rec.snapshot.Op != 0 {
			t.Fatalf("after the set-aside: %d entries, snapshot %v", len(rec.entries), rec.snapshot)
		}
		if s, _, err := readMetadataSettle(m, dataDir); err != nil || s != metadataLost {
			t.Fatalf("settle marker %v, %v: want lost", s, err)
		}
		kept, _ := vfs.Glob(m, filepath.Join(dataDir, "metadata", metaWALDamagedPrefix+"1000", "journal-*.wal"))
		if len(kept) != 1 {
			t.Fatalf("the damaged WAL is not kept for inspection: %v", kept)
		}
	}
}

// TestDamagedMetadataSnapshotSetsTheDirectoryAside: a cluster replica
// whose snapshot fails verification sets the whole metadata directory
// aside and opens empty storage (the boot then settles with its peers as
// on a replaced disk); a single node refuses.
func TestDamagedMetadataSnapshotSetsTheDirectoryAside(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, clustered := range []bool{false, true} {
		m := vfs.NewMem(2)
		const dataDir = "/data"
		id := journal.Identity{ReplicaID: 0, ReplicaCount: 1}
		if clustered {
			id = journal.Identity{ReplicaID: 1, ReplicaCount: 3}
		}
		st, _, err := openMetaStorage(m, filepath.Join(dataDir, "metadata"), id)
		if err != nil {
			t.Fatal(err)
		}
		snap := consensus.Snapshot{Op: 0, Data: []byte("state")}
		snap.Checksum = snapshotChecksum(snap.Data)
		if err := st.WriteSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.FlipByte(filepath.Join(dataDir, "metadata", "snapshot.bin"), 26); err != nil {
			t.Fatal(err)
		}
		st, rec, setAside, err := openMetaStorageSettingAside(m, dataDir, id, clustered, 2_000, log)
		if !clustered {
			if !errors.Is(err, journal.ErrSnapshotDamaged) || setAside {
				t.Fatalf("single node: %v (set aside %v), want ErrSnapshotDamaged", err, setAside)
			}
			continue
		}
		if err != nil || !setAside {
			t.Fatalf("cluster replica: %v (set aside %v)", err, setAside)
		}
		st.Close()
		if rec.snapshot != nil || len(rec.entries) != 0 {
			t.Fatalf("after the set-aside the storage is not empty: snapshot %v, %d entries", rec.snapshot, len(rec.entries))
		}
		if _, err := m.Stat(filepath.Join(dataDir, "metadata.damaged-2000", "snapshot.bin")); err != nil {
			t.Fatalf("the damaged directory is not kept for inspection: %v", err)
		}
	}
}
