package consensus

import "testing"

// TestAStartViewCarriesTheCheckpointOpsHeader: a primary-elect whose head
// is its checkpoint op, the entry gone from its journal (compacted before
// a restart), still tells the backups that op's checksum in its StartView
// (and its DVC): without it they knew the head committed but not its
// checksum, and once the checkpoint's replica lost its journal the others
// could not prove the bodies they held below it (simulator seed 70229023,
// storagelost-harsh: the view change stalled for good).
func TestAStartViewCarriesTheCheckpointOpsHeader(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	for req := uint64(1); req <= 2; req++ {
		h.propose(0, Request{Client: Uint128{Lo: 1}, Request: req, Operation: 1, Body: []byte("x")})
		h.runTicks(60)
	}
	want, ok := h.replicas[1].journal.header(2)
	if !ok || h.replicas[1].CommitMin() != 2 {
		t.Fatalf("replica 1 holds op 2 %v, commit_min %d: want op 2 committed", ok, h.replicas[1].CommitMin())
	}
	if err := h.checkpoint(1, 0); err != nil {
		t.Fatal(err)
	}
	// Compaction after the checkpoint, then a restart: op 2's entry is
	// gone, only the superblock's anchor remembers it.
	h.crash(1)
	delete(h.stores[1].entries, 1)
	delete(h.stores[1].entries, 2)
	if err := h.restart(1); err != nil {
		t.Fatal(err)
	}
	h.runTicks(60)
	r := h.replicas[1]
	if _, held := r.journal.header(2); held || r.Op() != 2 {
		t.Fatalf("replica 1 at op %d holds op 2's entry %v: want op 2 as a bare checkpoint", r.Op(), held)
	}
	if d := r.buildDVC(); len(d.headers) == 0 || d.headers[0].Checksum != want.Checksum {
		t.Fatalf("its DVC reports op 2 as %+v, want checksum %x", d.headers, want.Checksum)
	}
	if !h.replicas[0].HandOver(1) {
		t.Fatal("hand-over to replica 1 refused")
	}
	h.drainAll()
	h.deliverAll()
	if !r.IsPrimary() || r.View() != 1 {
		t.Fatalf("replica 1 primary %v in view %d, want the primary of view 1", r.IsPrimary(), r.View())
	}
	if _, hs := r.startViewSuffix(); len(hs) == 0 || hs[0].Checksum != want.Checksum {
		t.Fatalf("its StartView suffix reports op 2 as %+v, want checksum %x", hs, want.Checksum)
	}
	if vh, ok := h.replicas[2].viewHeaderAt(2); !ok || vh.Checksum != want.Checksum {
		t.Fatalf("replica 2's view headers hold op 2 as %+v (%v), want checksum %x", vh, ok, want.Checksum)
	}
}
