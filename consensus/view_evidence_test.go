package consensus

import "testing"

// sentOf returns the messages of r's pending Ready and advances it.
func sentOf(r *Replica) []Message {
	rd := r.Ready()
	r.Advance(rd)
	return rd.Messages
}

// TestWipedReplicaTakesOnlyAQuorumsLatestView (consensus simulator
// finding 18): a wiped replica (StorageLost, no durable view) refuses the
// StartView of a primary until n - Q_vc + 1 others told it their views,
// and then only of a view at least as high as all of them: a deposed
// primary of view 0 must not recruit it after view 1 started.
func TestWipedReplicaTakesOnlyAQuorumsLatestView(t *testing.T) {
	cfg := DefaultConfig(1, 3)
	cfg.Incarnation = Uint128{Lo: 7}
	r, err := Restart(cfg, Restored{Superblock: &VsrState{}, StorageLost: true})
	if err != nil {
		t.Fatal(err)
	}
	sentOf(r)
	sv := func(from uint8, view uint32) Message {
		return Message{Kind: MsgStartView, Group: cfg.GroupID, From: from, To: 1, View: view, Incarnation: cfg.Incarnation}
	}
	r.Step(sv(0, 0)) // a deposed primary of view 0, alone: not evidence enough
	if r.Status() != StatusRecovering {
		t.Fatalf("took view 0's StartView with one view reported: status %v", r.Status())
	}
	// Replica 2, a Normal backup of view 2, answers the probe.
	r.Step(Message{Kind: MsgRequestStartView, Group: cfg.GroupID, From: 2, To: 1, View: 2, Incarnation: cfg.Incarnation, ProbeAnswer: true})
	r.Step(sv(0, 0))
	if r.Status() != StatusRecovering || r.View() != 0 {
		t.Fatalf("took view 0's StartView after replica 2 reported view 2: status %v view %d", r.Status(), r.View())
	}
	r.Step(sv(2, 2))
	if r.Status() != StatusNormal || r.View() != 2 {
		t.Fatalf("refused view 2's StartView with two others' views known: status %v view %d", r.Status(), r.View())
	}
	// A replica that kept its superblock knows its view: no evidence needed.
	kept, err := Restart(cfg, Restored{Superblock: &VsrState{View: 3, LogView: 3}, StorageLost: true})
	if err != nil {
		t.Fatal(err)
	}
	if !kept.viewKnownAtLeast(3) {
		t.Fatal("a storage-lost replica with a durable view waits for view evidence")
	}
}

// TestNormalBackupAnswersProbesWithItsView: a Normal backup answers a
// wiped replica's probe with its view; other probes, and answers, are not
// answered (the traffic of every other replica stays as it was).
func TestNormalBackupAnswersProbesWithItsView(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	h.propose(0, Request{Body: []byte("x")})
	h.deliverAll()
	b := h.replicas[1]
	sentOf(b)
	probes := func(m Message) []Message {
		b.Step(m)
		var out []Message
		for _, s := range sentOf(b) {
			if s.Kind == MsgRequestStartView {
				out = append(out, s)
			}
		}
		return out
	}
	probe := Message{Kind: MsgRequestStartView, Group: b.cfg.GroupID, From: 2, To: 1, Incarnation: Uint128{Lo: 9}, ViewUnknown: true}
	answers := probes(probe)
	if len(answers) != 1 || answers[0].To != 2 || answers[0].View != b.View() || !answers[0].ProbeAnswer ||
		answers[0].Incarnation != probe.Incarnation {
		t.Fatalf("answers to a wiped replica's probe: %+v; want one answer to 2 with view %d", answers, b.View())
	}
	probe.ViewUnknown = false
	if answers := probes(probe); len(answers) != 0 {
		t.Fatalf("a probe of a replica that knows its view was answered: %+v", answers)
	}
	if answers := probes(Message{Kind: MsgRequestStartView, Group: b.cfg.GroupID, From: 2, To: 1, ProbeAnswer: true}); len(answers) != 0 {
		t.Fatalf("an answer was answered: %+v", answers)
	}
}
