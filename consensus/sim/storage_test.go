package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func entry(op, sum uint64) consensus.Prepare {
	return consensus.Prepare{Header: consensus.PrepareHeader{Op: op, View: 1, Checksum: sum, Client: consensus.Uint128{Lo: 3, Hi: 4}}, Body: []byte{byte(op), 9}}
}

func ops(ps []consensus.Prepare) []uint64 {
	var out []uint64
	for _, p := range ps {
		out = append(out, p.Header.Op)
	}
	return out
}

func TestStoragePrepareRoundTrip(t *testing.T) {
	p := entry(7, 99)
	p.Header.Operation, p.Header.UserID, p.Header.Timestamp, p.Header.Parent = 20, 5, 1234, 77
	got, err := decodePrepare(encodePrepare(p))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header != p.Header || string(got.Body) != string(p.Body) {
		t.Fatalf("round trip changed the prepare: %+v vs %+v", got, p)
	}
}

func TestStorageTruncateThenAppend(t *testing.T) {
	var s storage
	rd := consensus.Ready{Entries: []consensus.Prepare{entry(1, 1), entry(2, 2), entry(3, 3)}, Superblock: &consensus.VsrState{View: 2}}
	for _, w := range planWrites(&rd) {
		s.apply(w)
	}
	rd = consensus.Ready{Truncate: 2, Entries: []consensus.Prepare{entry(2, 20)}}
	for _, w := range planWrites(&rd) {
		s.apply(w)
	}
	st, cut := s.restore()
	if cut != 0 || st.Superblock == nil || st.Superblock.View != 2 {
		t.Fatalf("restore: cut %d superblock %+v", cut, st.Superblock)
	}
	if got := ops(st.Entries); len(got) != 2 || st.Entries[1].Header.Checksum != 20 {
		t.Fatalf("entries after truncate+append: %v", got)
	}
}

func TestStorageTornTailIsCutAndLaterAppendsSurvive(t *testing.T) {
	g := newRNG(1)
	for i := 0; i < 200; i++ {
		var s storage
		s.apply(write{kind: writeEntry, entry: entry(1, 1)})
		s.applyTorn(write{kind: writeEntry, entry: entry(2, 2)}, g)
		st, cut := s.restore()
		if cut != 1 || len(st.Entries) != 1 || st.Entries[0].Header.Op != 1 {
			t.Fatalf("torn tail not dropped: cut %d entries %v", cut, ops(st.Entries))
		}
		s.apply(write{kind: writeEntry, entry: entry(2, 22)})
		st, _ = s.restore()
		if len(st.Entries) != 2 || st.Entries[1].Header.Checksum != 22 {
			t.Fatalf("append after cutting a torn tail lost: %v", ops(st.Entries))
		}
	}
}

func TestStorageTornSuperblockKeepsPrevious(t *testing.T) {
	var s storage
	s.apply(write{kind: writeSuperblock, superblock: consensus.VsrState{View: 3}})
	s.applyTorn(write{kind: writeSuperblock, superblock: consensus.VsrState{View: 4}}, newRNG(1))
	if st, _ := s.restore(); st.Superblock.View != 3 {
		t.Fatalf("torn superblock write replaced the old copy: %+v", st.Superblock)
	}
}

func TestStorageSnapshotCompactsJournal(t *testing.T) {
	var s storage
	for op := uint64(1); op <= 10; op++ {
		s.apply(write{kind: writeEntry, entry: entry(op, op)})
	}
	s.installSnapshot(consensus.Snapshot{Op: 6, Data: []byte{1}})
	// Crash window: the snapshot is durable, no superblock names it yet.
	// The journal is not drained; the entry at the snapshot op anchors.
	st, _ := s.restore()
	if st.Snapshot == nil || st.Snapshot.Op != 6 {
		t.Fatalf("snapshot not restored: %+v", st.Snapshot)
	}
	if got := ops(st.Entries); len(got) != 5 || got[0] != 6 {
		t.Fatalf("entries from the snapshot op before the superblock names it: %v", got)
	}
	if len(s.log) != 10 {
		t.Fatalf("journal drained before the superblock named the checkpoint: %d records", len(s.log))
	}
	s.apply(write{kind: writeSuperblock, superblock: consensus.VsrState{CheckpointOp: 6}})
	st, _ = s.restore()
	if got := ops(st.Entries); len(got) != 4 || got[0] != 7 {
		t.Fatalf("entries after a superblock named the checkpoint at 6: %v", got)
	}
	if len(s.log) != 4 {
		t.Fatalf("journal not drained: %d records", len(s.log))
	}
}

func TestStorageRestoreCopiesData(t *testing.T) {
	var s storage
	s.apply(write{kind: writeEntry, entry: entry(1, 1)})
	st, _ := s.restore()
	st.Entries[0].Body[0] = 0xff
	st2, _ := s.restore()
	if st2.Entries[0].Body[0] == 0xff {
		t.Fatal("restore aliases durable bytes")
	}
}

// TestStorageIndexMatchesReplay: the quorum audit's index always says
// exactly what a restart would read back.
func TestStorageIndexMatchesReplay(t *testing.T) {
	g := newRNG(9)
	var s storage
	for step := 0; step < 1500; step++ {
		op := uint64(1 + g.intn(40))
		switch g.intn(12) {
		case 0:
			s.apply(write{kind: writeTruncate, truncate: op})
		case 1:
			s.applyTorn(write{kind: writeEntry, entry: entry(op, g.uint64())}, g)
			s.restore() // a torn record is only ever the tail: the restart cuts it
		case 2:
			if s.snapshot == nil || s.snapshot.Op < op {
				s.installSnapshot(consensus.Snapshot{Op: op})
			}
		case 3:
			s.apply(write{kind: writeSuperblock, superblock: consensus.VsrState{CheckpointOp: op}})
		default:
			s.apply(write{kind: writeEntry, entry: entry(op, g.uint64()%4)})
		}
		entries, _ := s.replay()
		replayed := map[uint64]uint64{}
		for _, e := range entries {
			replayed[e.Header.Op] = e.Header.Checksum
		}
		for op := uint64(1); op <= 40; op++ {
			for sum := uint64(0); sum < 4; sum++ {
				sumOK, in := replayed[op]
				want := (in && sumOK == sum) || (s.snapshot != nil && s.snapshot.Op >= op)
				if s.holds(op, sum) != want {
					t.Fatalf("step %d: holds(%d, %d) = %v, replay says %v", step, op, sum, !want, want)
				}
			}
		}
	}
}
