package consensus

import "testing"

// TestRestartIgnoresAStaleCopyOfTheSnapshotOp (metadata simulator seed
// 16313): a replica took its snapshot at op 3 by state transfer while its
// journal file still held its own op 3 from a view that did not keep it.
// Restarted, it must anchor its hash chain on the snapshot's op 3 (the
// superblock's anchor), not on that stale copy: else the canonical op 4,
// whose parent is the real op 3, looks like another history and is
// refused for good.
func TestRestartIgnoresAStaleCopyOfTheSnapshotOp(t *testing.T) {
	canonical := chainLog(5, 0, 1)
	stale := chainLog(5, 7, 3) // same ops 1..2, another op 3
	data := []byte("state at op 3")
	r, err := Restart(DefaultConfig(2, 3), Restored{
		Superblock: &VsrState{View: 3, LogView: 3, CommitMax: 3, CheckpointOp: 3,
			AnchorChecksum: canonical[2].Checksum, AnchorTimestamp: canonical[2].Timestamp},
		Snapshot: &Snapshot{Op: 3, Data: data, Checksum: SnapshotChecksum(data)},
		Entries:  prepares(stale[2]),
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := r.journal.header(3); ok && h.Checksum != canonical[2].Checksum {
		t.Fatalf("the journal anchors on the stale op 3 (%x), want the snapshot's (%x)", h.Checksum, canonical[2].Checksum)
	}
	if r.anchorChecksum != canonical[2].Checksum {
		t.Fatalf("anchor checksum %x, want the snapshot's %x", r.anchorChecksum, canonical[2].Checksum)
	}
	r.Advance(r.Ready())
	// The view's primary (replica 1 of view 4) tells it of ops 4..5 and
	// serves their bodies: both commit.
	r.Step(Message{Kind: MsgStartView, From: 1, To: 2, View: 4, HeadOp: 5, CommitOp: 5, Suffix: descending(canonical, 5, 3)})
	for r.HasReady() {
		r.Advance(r.Ready())
	}
	for op := uint64(4); op <= 5; op++ {
		p := Prepare{Header: canonical[op-1]}
		r.Step(Message{Kind: MsgRepairPrepare, From: 1, To: 2, View: 4, Prepare: &p})
		for r.HasReady() {
			r.Advance(r.Ready())
		}
	}
	if r.CommitMin() != 5 {
		t.Fatalf("commit_min %d after the primary served ops 4..5, want 5 (status %v, view %d)", r.CommitMin(), r.Status(), r.View())
	}
}

// TestRestartAfterASnapshotWhoseSuperblockWasNotWritten (simulator seed
// 21459133, crashy): a crash fell between the snapshot at op 4 and its
// superblock, which still names checkpoint op 2 and op 2's anchor. The
// restarted replica must not take op 2's checksum for op 4's: with the
// entry at op 4 in its journal it anchors on that entry, without it the
// anchor is unknown and its DVC reports op 4 blank. Before the fix its DVC
// named op 4 with op 2's checksum, the merge found the chain broken at
// op 5, and the view change stalled for good.
func TestRestartAfterASnapshotWhoseSuperblockWasNotWritten(t *testing.T) {
	log := chainLog(5, 0, 0)
	data := []byte("state at op 4")
	restored := func(entries []Prepare) Restored {
		return Restored{
			Superblock: &VsrState{View: 2, LogView: 2, CommitMax: 4, CheckpointOp: 2,
				AnchorChecksum: log[1].Checksum, AnchorTimestamp: log[1].Timestamp},
			Snapshot: &Snapshot{Op: 4, Data: data, Checksum: SnapshotChecksum(data)},
			Entries:  entries,
		}
	}
	t.Run("entry held", func(t *testing.T) {
		r, err := Restart(DefaultConfig(2, 3), restored(prepares(log[3])))
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := r.journal.header(4); !ok || h.Checksum != log[3].Checksum {
			t.Fatalf("journal op 4 %+v (%v), want the restored entry %x", h, ok, log[3].Checksum)
		}
		if r.anchorChecksum != log[3].Checksum {
			t.Fatalf("anchor checksum %x, want op 4's %x", r.anchorChecksum, log[3].Checksum)
		}
	})
	t.Run("entry released", func(t *testing.T) {
		r, err := Restart(DefaultConfig(2, 3), restored(nil))
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := r.anchorHeader(4); ok {
			t.Fatalf("anchor header for op 4 %+v, want none (op 2's anchor %x is not op 4's)", h, log[1].Checksum)
		}
		d := r.buildDVC()
		if len(d.headers) == 0 || d.headers[0].Op != 4 || d.headers[0].Checksum != 0 {
			t.Fatalf("its DVC reports op 4 as %+v, want a blank", d.headers)
		}
	})
}
