package consensus

import "testing"

func TestSmokeN3(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	tag := h.propose(0, Request{Body: []byte("x")})
	h.deliverAll()
	h.drainAll()
	if rep, ok := h.replies[tag]; !ok || rep.Kind != ReplyCommitted || rep.Op != 1 {
		t.Fatalf("reply %+v ok=%v", h.replies[tag], ok)
	}
	for k := 0; k < 60; k++ {
		for i := range h.replicas {
			h.tick(i)
		}
		h.deliverAll()
	}
	for i, r := range h.replicas {
		if r.CommitMin() != 1 {
			t.Fatalf("replica %d commit_min %d", i, r.CommitMin())
		}
	}
}
