package consensus

import "testing"

// TestProposeKeepsAnOwnedBodyAndCopiesAnother: Request.BodyOwned hands the
// body over (the prepare aliases it, in the pipeline and when queued behind
// it); without it Propose copies, so the caller may reuse its buffer.
func TestProposeKeepsAnOwnedBodyAndCopiesAnother(t *testing.T) {
	cfg := DefaultConfig(0, 3)
	cfg.ClientTableMax = 0 // a partition group: no client table
	cfg.PrepareQueueDepth = 1
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	owned := []byte("owned body")
	lent := []byte("lent body")
	queued := []byte("queued owned body")
	r.Propose(Request{Operation: 200, Body: owned, BodyOwned: true, Tag: 1})
	r.Propose(Request{Operation: 200, Body: lent, Tag: 2})                    // queued behind a full pipeline
	r.Propose(Request{Operation: 200, Body: queued, BodyOwned: true, Tag: 3}) // queued too
	lent[0] = 'X'                                                             // the caller reuses its buffer
	rd := r.Ready()
	if len(rd.Entries) != 1 || &rd.Entries[0].Body[0] != &owned[0] {
		t.Fatalf("the owned body was copied (entries %d)", len(rd.Entries))
	}
	r.Advance(rd)
	// Commit op 1 (PrepareOks from both backups), then ops 2 and 3 follow.
	for op := uint64(1); op <= 3; op++ {
		for _, from := range []uint8{1, 2} {
			h, ok := r.journal.header(op)
			if !ok {
				t.Fatalf("op %d not prepared", op)
			}
			r.Step(Message{Kind: MsgPrepareOk, From: from, To: 0, View: 0, Prepare: &Prepare{Header: h}})
		}
		rd = r.Ready()
		for _, e := range rd.Entries {
			switch e.Header.Op {
			case 2:
				if string(e.Body) != "lent body" {
					t.Fatalf("the lent body was not copied at Propose: %q", e.Body)
				}
			case 3:
				if &e.Body[0] != &queued[0] {
					t.Fatal("the owned body queued behind the pipeline was copied")
				}
			}
		}
		r.Advance(rd)
	}
	if r.CommitMax() != 3 {
		t.Fatalf("commit_max %d, want 3", r.CommitMax())
	}
}
