package consensus

import "testing"

// viewLog builds ops 1..n chained, op i prepared in views[i-1].
func viewLog(views ...uint32) []PrepareHeader {
	hs := make([]PrepareHeader, 0, len(views))
	parent := uint64(0)
	for i, v := range views {
		h := PrepareHeader{Op: uint64(i + 1), View: v, Parent: parent, Timestamp: uint64(i + 1)}
		h.Checksum = PrepareChecksum(&h, nil)
		hs = append(hs, h)
		parent = h.Checksum
	}
	return hs
}

// leftover is another entry at h's op, prepared in view (before log_view);
// it chains to h's parent when sameParent, else to nothing.
func leftover(h PrepareHeader, view uint32, sameParent bool) PrepareHeader {
	h.View, h.Request = view, 99
	if !sameParent {
		h.Parent = 12345
	}
	h.Checksum = PrepareChecksum(&h, nil)
	return h
}

// TestRestartDropsALeftoverOfAViewBeforeLogView (consensus simulator seed
// 70234987): an intact journal holds log_view 1's ops 1..10 but, at op 5,
// an entry of view 0 that its StartView's reconciliation dropped from
// memory only. The restart leaves that one entry out: op 5 is a gap the
// replica never held in view 1 (nacked), and ops 6..10, log_view's own,
// are loaded. Before, the chain break made ops 5..10 (or 6..10) unprovable,
// and the replica's DVC could hold back a merge with ops it held.
func TestRestartDropsALeftoverOfAViewBeforeLogView(t *testing.T) {
	log := viewLog(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	for _, tc := range []struct {
		name       string
		sameParent bool // the leftover chains to op 4: the break shows at op 6
	}{{"chains back", true}, {"chains to nothing", false}} {
		t.Run(tc.name, func(t *testing.T) {
			entries := prepares(log[0], log[1], log[2], log[3], leftover(log[4], 0, tc.sameParent), log[5], log[6], log[7], log[8], log[9])
			r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: entries, JournalIntact: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.journal.has(5) {
				t.Fatal("the view-0 leftover at op 5 stayed in the journal")
			}
			for op := uint64(6); op <= 10; op++ {
				if _, lost := r.unprovable[op]; !r.journal.has(op) || lost {
					t.Fatalf("op %d of log_view: held %v, unprovable %v; want it loaded", op, r.journal.has(op), lost)
				}
			}
			if _, lost := r.unprovable[5]; lost || r.Op() != 10 {
				t.Fatalf("op 5 unprovable %v, head %d; want a nackable gap under head 10", lost, r.Op())
			}
			if d := r.buildDVC(); !bitAt(d.nack, d.op-5) {
				t.Fatalf("the DVC does not nack op 5 (head %d, nack %+v)", d.op, d.nack)
			}
			// Without an intact journal the gap may be an op it held and
			// lost: unprovable, never nacked; ops 6..10 load all the same.
			r, err = Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: entries})
			if err != nil {
				t.Fatal(err)
			}
			if _, lost := r.unprovable[5]; !lost || r.journal.has(5) || !r.journal.has(6) || !r.journal.has(10) {
				t.Fatalf("not intact: op 5 held %v unprovable %v, ops 6 and 10 held %v %v", r.journal.has(5), lost, r.journal.has(6), r.journal.has(10))
			}
		})
	}
}

// TestRestartKeepsABreakItCannotJudge: log_view 1 carried ops 1..6 of
// view 0 over; an entry of view 0 at op 7 that does not chain to op 6
// follows an entry of an older view too, so nothing shows which of the
// two is log_view's: the break stands, ops 7..10 unprovable, as before.
func TestRestartKeepsABreakItCannotJudge(t *testing.T) {
	log := viewLog(0, 0, 0, 0, 0, 0, 1, 1, 1, 1)
	entries := prepares(log[0], log[1], log[2], log[3], log[4], log[5], leftover(log[6], 0, false), log[7], log[8], log[9])
	r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: entries, JournalIntact: true})
	if err != nil {
		t.Fatal(err)
	}
	for op := uint64(7); op <= 10; op++ {
		if _, lost := r.unprovable[op]; r.journal.has(op) || !lost {
			t.Fatalf("op %d: held %v, unprovable %v; want the break kept", op, r.journal.has(op), lost)
		}
	}
}
