package consensus

import "testing"

// A backup's Ready is held (written off the loop) while the backup keeps
// being stepped. The PrepareOk in it stays sendable until the backup moves
// to a newer view; then it is outdated (finding 14), and so is a Prepare
// naming an op the journal no longer holds with that checksum.
func TestOutdatedAfterTheReplicaMovedOn(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	h.propose(0, Request{Operation: 9, Body: []byte("a")})
	var prepare Message
	for _, m := range h.queue {
		if m.Kind == MsgPrepare && m.To == 1 {
			prepare = m
		}
	}
	if prepare.Prepare == nil {
		t.Fatal("the primary sent replica 1 no Prepare")
	}
	backup := h.replicas[1]
	backup.Step(prepare)
	rd := backup.Ready() // held: not carried out yet
	var ack *Message
	for i := range rd.Messages {
		if rd.Messages[i].Kind == MsgPrepareOk {
			ack = &rd.Messages[i]
		}
	}
	if ack == nil {
		t.Fatalf("the backup's Ready holds no PrepareOk: %+v", rd.Messages)
	}
	if backup.Outdated(ack) {
		t.Fatal("a PrepareOk of the current view for a prepare the journal holds is outdated")
	}
	if !backup.SuspectPrimary() {
		t.Fatal("the backup did not start a view change")
	}
	if !backup.Outdated(ack) {
		t.Fatalf("a view-%d PrepareOk is still sendable once the backup is in view %d", ack.View, backup.View())
	}
	stale := prepare
	header := *prepare.Prepare
	header.Header.Checksum ^= 1
	stale.Prepare = &header
	stale.View = backup.View()
	if !backup.Outdated(&stale) {
		t.Fatal("a Prepare naming a checksum the journal does not hold is sendable")
	}
	probe := Message{Kind: MsgRequestStartView, View: 0}
	if backup.Outdated(&probe) {
		t.Fatal("a message kind not bound to a view was called outdated")
	}
}
