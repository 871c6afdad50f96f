package consensus

import "testing"

// sentOf returns the messages of r's pending Ready and advances it.
func sentOf(r *Replica) []Message {
	rd := r.Ready()
	r.Advance(rd)
	return rd.Messages
}

// wipedReplica is replica 1 of 3 restarted wiped (StorageLost, a zero
// superblock, as the node boots one), its first probes taken.
func wipedReplica(t *testing.T) (*Replica, Config) {
	t.Helper()
	cfg := DefaultConfig(1, 3)
	cfg.Incarnation = Uint128{Lo: 7}
	r, err := Restart(cfg, Restored{Superblock: &VsrState{}, StorageLost: true})
	if err != nil {
		t.Fatal(err)
	}
	sentOf(r)
	return r, cfg
}

// TestWipedReplicaTakesOnlyAQuorumsLatestView (consensus simulator
// finding 18): a wiped replica (StorageLost, no durable view) refuses the
// StartView of a primary until n - Q_vc + 1 others told it their views,
// and then only of a view at least as high as all of them: a deposed
// primary of view 0 must not recruit it after view 1 started.
func TestWipedReplicaTakesOnlyAQuorumsLatestView(t *testing.T) {
	r, cfg := wipedReplica(t)
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

// TestWipedReplicaTakesADeferredStartViewOnceTheEvidenceIsIn: the
// primary's answer to a wiped replica's probe may come before a backup's;
// it is kept and taken as soon as that answer completes the evidence,
// not a probe round later.
func TestWipedReplicaTakesADeferredStartViewOnceTheEvidenceIsIn(t *testing.T) {
	r, cfg := wipedReplica(t)
	answer := func(from uint8, view uint32, inc Uint128) Message {
		return Message{Kind: MsgRequestStartView, Group: cfg.GroupID, From: from, To: 1, View: view, Incarnation: inc, ProbeAnswer: true}
	}
	r.Step(Message{Kind: MsgStartView, Group: cfg.GroupID, From: 0, To: 1, View: 0, Incarnation: cfg.Incarnation})
	r.Step(answer(2, 0, Uint128{Lo: 8})) // an earlier boot's answer: not evidence
	if r.Status() != StatusRecovering {
		t.Fatalf("took the StartView on an earlier boot's answer: status %v", r.Status())
	}
	r.Step(answer(2, 0, cfg.Incarnation))
	if r.Status() != StatusNormal || r.View() != 0 {
		t.Fatalf("the deferred StartView was not taken once replica 2 reported view 0: status %v view %d", r.Status(), r.View())
	}
}

// TestStorageLostReplicaVotesInARackElection (consensus simulator finding
// 21): a storage-lost replica that hears enough flagged probes (too few
// intact replicas may exist) starts a rack election when its probes run
// out, and its flagged DVC says its storage was lost; a rack merge with
// more than f such DVCs is not run.
func TestStorageLostReplicaVotesInARackElection(t *testing.T) {
	cfg := DefaultConfig(2, 3) // view 1's primary is replica 1: the DVC goes out
	cfg.Incarnation = Uint128{Lo: 7}
	r, err := Restart(cfg, Restored{StorageLost: true})
	if err != nil {
		t.Fatal(err)
	}
	var svc, dvc *Message
	ticks := int(cfg.RequestStartViewTicks) * int(cfg.ViewProbeAttemptsMax+1)
	for i := 0; i < ticks && dvc == nil; i++ {
		// Replica 0 restarted amnesiac and probes, flagged.
		r.Step(Message{Kind: MsgRequestStartView, Group: cfg.GroupID, From: 0, To: 2, Incarnation: Uint128{Lo: 3}, Amnesiac: true})
		r.Tick()
		for _, m := range sentOf(r) {
			switch m.Kind {
			case MsgRequestStartView:
				if !m.Amnesiac {
					t.Fatalf("a storage-lost replica's probe is not flagged: %+v", m)
				}
			case MsgStartViewChange:
				svc = &m
				// Replica 0 joins the view change: replica 2 sends its DVC.
				r.Step(Message{Kind: MsgStartViewChange, Group: cfg.GroupID, From: 0, To: 2, View: m.View, Amnesiac: true})
			case MsgDoViewChange:
				dvc = &m
			}
		}
		if dvc == nil {
			for _, m := range sentOf(r) {
				if m.Kind == MsgDoViewChange {
					dvc = &m
				}
			}
		}
	}
	if svc == nil || dvc == nil || !dvc.Amnesiac || !dvc.StorageLost {
		t.Fatalf("storage-lost replica beside an amnesiac: SVC %+v, DVC %+v; want a flagged rack vote", svc, dvc)
	}
	r.vc.amnesiacQuorum = true
	r.vc.dvcs = []dvcRecord{{replica: 0, lost: true}, {replica: 1, lost: true}, {replica: 2}}
	if !r.tooManyLost() {
		t.Fatal("a rack merge with two lost DVCs of three runs")
	}
	r.vc.dvcs = r.vc.dvcs[1:]
	if r.tooManyLost() {
		t.Fatal("a rack merge with one lost DVC of three is refused")
	}
}
