package consensus

import (
	"fmt"
	"testing"
)

// TestUnverifiedEntryIsServedUnvouched: an entry dropped from memory as
// unverifiable but durable is still served to a repair request, stamped
// below the request's view (so only a known canonical checksum admits
// it), stays sendable while the store holds it, and leaves the store when
// the op is overwritten (finding 16).
func TestUnverifiedEntryIsServedUnvouched(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	for k := 1; k <= 2; k++ {
		h.propose(0, Request{Body: []byte(fmt.Sprintf("op-%d", k))})
		h.deliverAll()
	}
	r := h.replicas[1]
	held, ok := r.journal.header(2)
	if !ok {
		t.Fatal("setup: replica 1 does not hold op 2")
	}
	r.commitMin = 1 // op 2 above the local commit, as in a view change
	r.dropUnverified(2)
	if r.journal.has(2) || !r.unverifiedHolds(2, held.Checksum) {
		t.Fatalf("after dropUnverified: in journal %v, kept aside %v", r.journal.has(2), r.unverifiedHolds(2, held.Checksum))
	}
	ask := func(view uint32) []Message {
		return repairAnswers(r, Message{Kind: MsgRequestPrepares, From: 2, To: 1, View: view, FromOp: 2, ToOp: 2, Nonce: Uint128{Lo: 9}})
	}
	if got := ask(0); len(got) != 0 {
		t.Fatalf("served %d unvouched entries to a view-0 request: nothing can be stamped below view 0", len(got))
	}
	got := ask(r.View() + 1)
	if len(got) != 1 || got[0].Prepare.Header.Checksum != held.Checksum {
		t.Fatalf("served %+v, want op 2 with its checksum", got)
	}
	if got[0].View >= r.View()+1 {
		t.Fatalf("stamped view %d, want below the request's %d", got[0].View, r.View()+1)
	}
	if r.Outdated(&got[0]) {
		t.Fatal("an unvouched answer the store still holds is outdated")
	}
	other := Prepare{Header: held, Body: []byte("other")}
	other.Header.Checksum ^= 1
	r.appendEntry(other)
	if r.unverifiedHolds(2, held.Checksum) || !r.Outdated(&got[0]) {
		t.Fatal("an overwritten op stayed in the store, or its old answer stayed sendable")
	}
}
