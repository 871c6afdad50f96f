package consensus

import "testing"

// primaryElectMissingItsLog returns replica 0 of 5 as the primary-elect of
// view 5 after a merge (log view 3, head 8, commit 6) whose ops it holds
// none of, its drain function, and the first repair request it sent.
func primaryElectMissingItsLog(t *testing.T) (*Replica, func() []Message, Message) {
	t.Helper()
	const n, view = 5, 5
	log := chainLog(8, 0, 1)
	cfg := DefaultConfig(0, n)
	cfg.Seed = 11
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	requests := func() (out []Message) {
		for r.HasReady() {
			rd := r.Ready()
			for _, m := range rd.Messages {
				if m.Kind == MsgRequestPrepares {
					out = append(out, m)
				}
			}
			r.Advance(rd)
		}
		return out
	}
	for from := uint8(1); from <= 2; from++ {
		r.Step(Message{Kind: MsgStartViewChange, From: from, View: view})
	}
	requests()
	suffix := descending(log, 8, 7)
	var present Uint128
	for i := range suffix {
		setBit(&present, uint64(i))
	}
	for from := uint8(1); from <= 2; from++ {
		r.Step(Message{Kind: MsgDoViewChange, From: from, View: view, LogView: 3, HeadOp: 8, CommitOp: 6, CommitMax: 6,
			Suffix: suffix, Present: present})
	}
	reqs := requests()
	if r.vc.plan == nil || len(reqs) != 1 || reqs[0].FromOp != 1 {
		t.Fatalf("plan %v, repair requests %v after the merge, want a decided merge and one request from op 1", r.vc.plan != nil, reqs)
	}
	return r, requests, reqs[0]
}

// TestPrimaryElectAsksTheNextPeerAtOnceAfterAnEmptyAnswer (simulator seed
// 21653198): a primary-elect that must fetch its log asks the next peer as
// soon as one has answered in full without filling anything, instead of
// waiting a retry period per such peer. After n-1 such retries in a row
// the retry timer paces the next round.
func TestPrimaryElectAsksTheNextPeerAtOnceAfterAnEmptyAnswer(t *testing.T) {
	r, requests, last := primaryElectMissingItsLog(t)
	n := int(r.n)
	asked := map[uint8]bool{}
	for i := 0; i < n; i++ {
		asked[last.To] = true
		// The peer holds nothing of the range.
		r.Step(Message{Kind: MsgRepairDone, From: last.To, View: r.View(), LastServedOp: last.FromOp - 1, Nonce: last.Nonce})
		reqs := requests()
		if i == n-1 {
			if len(reqs) != 0 {
				t.Fatalf("answer %d: %d requests at once after n-1 quick retries, want the retry timer to pace them", i+1, len(reqs))
			}
			break
		}
		if len(reqs) != 1 {
			t.Fatalf("answer %d: %d requests at once after an empty answer, want 1", i+1, len(reqs))
		}
		if reqs[0].Nonce == last.Nonce {
			t.Fatalf("answer %d: the request reused the nonce", i+1)
		}
		last = reqs[0]
	}
	if len(asked) < 2 { // the sources are the two DVC senders
		t.Fatalf("asked only %v: the quick retries did not rotate", asked)
	}
	var reqs []Message
	for i := uint32(0); i <= r.cfg.RepairRetryTicks && len(reqs) == 0; i++ {
		r.Tick()
		reqs = requests()
	}
	if len(reqs) != 1 {
		t.Fatalf("%d requests within a retry period, want 1", len(reqs))
	}
}

// TestPrimaryElectAsksTheNextPeerAfterAnAnswerOfUnvouchedCopies: copies
// nobody vouches for (stamped below the view, canonical checksum unknown)
// fill nothing either; the next request leaves as soon as the last of the
// answer's prepares arrives, and not before.
func TestPrimaryElectAsksTheNextPeerAfterAnAnswerOfUnvouchedCopies(t *testing.T) {
	r, requests, last := primaryElectMissingItsLog(t)
	stale := chainLog(8, 9, 1) // another lineage
	r.Step(Message{Kind: MsgRepairDone, From: last.To, View: r.View(), LastServedOp: 2, Nonce: last.Nonce})
	p := Prepare{Header: stale[0]}
	r.Step(Message{Kind: MsgRepairPrepare, From: last.To, View: r.View() - 1, Prepare: &p, Nonce: last.Nonce})
	if reqs := requests(); len(reqs) != 0 {
		t.Fatalf("%d requests while the answer's second prepare was still on its way", len(reqs))
	}
	p2 := Prepare{Header: stale[1]}
	r.Step(Message{Kind: MsgRepairPrepare, From: last.To, View: r.View() - 1, Prepare: &p2, Nonce: last.Nonce})
	if reqs := requests(); len(reqs) != 1 {
		t.Fatalf("%d requests after an answer of unvouched copies, want 1", len(reqs))
	}
	if r.journal.has(1) || r.journal.has(2) {
		t.Fatal("took an unvouched copy")
	}
}
