package consensus

import "testing"

// cutOff drops every message to and from replica i (or restores them).
func (h *harness) cutOff(i uint8, cut bool) {
	for j := uint8(0); j < uint8(len(h.replicas)); j++ {
		if j != i {
			h.dropped[[2]uint8{i, j}] = cut
			h.dropped[[2]uint8{j, i}] = cut
		}
	}
}

// TestARestHeartbeatBringsUpABackupThatMissedTheLastOp: backup 2 missed
// op 1 and every heartbeat after it, then the group stopped ticking (its
// driver let it rest). One RestHeartbeat of the primary tells it the
// commit; it repairs op 1 and commits it (metadata simulator M23, seed
// 47430).
func TestARestHeartbeatBringsUpABackupThatMissedTheLastOp(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	h.cutOff(2, true)
	h.propose(0, Request{Client: Uint128{Lo: 1}, Request: 1, Operation: 1, Body: []byte("x")})
	h.runTicks(200) // commit heartbeats, all lost on replica 2
	if r := h.replicas[0]; r.CommitMin() != 1 {
		t.Fatalf("the primary committed op %d, want 1", r.CommitMin())
	}
	h.cutOff(2, false)
	if r := h.replicas[2]; r.Op() != 0 || r.CommitMax() != 0 {
		t.Fatalf("replica 2 op %d commit %d before the heartbeat, want 0 and 0", r.Op(), r.CommitMax())
	}
	if h.replicas[1].RestHeartbeat() {
		t.Fatal("a backup sent a rest heartbeat")
	}
	if !h.replicas[0].RestHeartbeat() {
		t.Fatal("the Normal primary sent no rest heartbeat")
	}
	h.drain(0)
	h.deliverAll()
	for range 100 { // replica 2 awake again: its repair timer runs; the others rest
		h.tick(2)
		h.deliverAll()
	}
	if r := h.replicas[2]; r.CommitMin() != 1 {
		t.Fatalf("replica 2 committed op %d after the rest heartbeat, want 1", r.CommitMin())
	}
}

// TestAProbeAsksTheLaterViewsPrimary: backup 2 rests in view 1 (led by
// replica 1) and misses the hand-over to view 3 (led by replica 0). The
// primary's rest heartbeat of view 3 tells it a later view exists; its
// probe goes to that view's primary, not to replica 1, a backup now that
// would not answer, and the StartView brings it into view 3 (metadata
// simulator M23, seed 59820).
func TestAProbeAsksTheLaterViewsPrimary(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	if !h.replicas[0].HandOver(1) {
		t.Fatal("hand-over to replica 1 refused")
	}
	h.drainAll()
	h.deliverAll()
	if r := h.replicas[2]; r.View() != 1 || r.Status() != StatusNormal {
		t.Fatalf("replica 2 in view %d (%v), want view 1, Normal", r.View(), r.Status())
	}
	h.cutOff(2, true)
	if !h.replicas[1].HandOver(0) {
		t.Fatal("hand-over to replica 0 refused")
	}
	h.drainAll()
	h.deliverAll()
	if r := h.replicas[0]; !r.IsPrimary() || r.View() != 3 {
		t.Fatalf("replica 0 primary %v of view %d, want the primary of view 3", r.IsPrimary(), r.View())
	}
	h.cutOff(2, false)
	h.replicas[0].RestHeartbeat()
	h.drain(0)
	h.deliverAll()
	if r := h.replicas[2]; r.View() != 1 {
		t.Fatalf("replica 2 moved to view %d on a heartbeat alone", r.View())
	}
	if !h.replicas[2].ProbePrimary() {
		t.Fatal("a Normal backup did not probe")
	}
	h.drain(2)
	h.deliverAll()
	if r := h.replicas[2]; r.View() != 3 || r.Status() != StatusNormal {
		t.Fatalf("replica 2 in view %d (%v) after its probe, want view 3, Normal", r.View(), r.Status())
	}
}
