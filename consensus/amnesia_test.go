package consensus

import (
	"fmt"
	"testing"
)

// runTicks ticks every live replica and delivers until quiet, n times.
func (h *harness) runTicks(n int) {
	for t := 0; t < n; t++ {
		for i := range h.replicas {
			h.tick(i)
		}
		h.deliverAll()
	}
}

// powerLoss crashes replica i and keeps only its journal entries at or
// below synced (the superblock and snapshot are synced); its next restart
// is amnesiac.
func (h *harness) powerLoss(i int, synced uint64) {
	h.crash(i)
	for op := range h.stores[i].entries {
		if op > synced {
			delete(h.stores[i].entries, op)
		}
	}
	if h.amnesia == nil {
		h.amnesia = map[int]bool{}
	}
	h.amnesia[i] = true
}

func (h *harness) primary() int {
	for i, r := range h.replicas {
		if h.up[i] && r.IsPrimary() {
			return i
		}
	}
	return -1
}

// committedOnBackupOnly sets up n = 3 in view 0: ops 1..3 committed by
// primary 0 with replica 1's acks; replica 2 never got them.
func committedOnBackupOnly(t *testing.T) *harness {
	h := newHarness(3, nil, t.Fatalf)
	h.dropped[[2]uint8{0, 2}] = true
	for k := 1; k <= 3; k++ {
		h.propose(0, Request{Body: []byte(fmt.Sprintf("op-%d", k))})
		h.deliverAll()
	}
	if h.replicas[0].CommitMax() != 3 || h.replicas[2].Op() != 0 {
		t.Fatalf("setup: primary commit %d, replica 2 op %d; want 3 and 0", h.replicas[0].CommitMax(), h.replicas[2].Op())
	}
	delete(h.dropped, [2]uint8{0, 2})
	return h
}

// TestAmnesiacDoesNotVoteWhileAnIntactQuorumMayExist: replica 1 acked
// ops 1..3, then lost them to a power loss; primary 0 (the only other
// holder) crashes. Replica 2 alone cannot elect, and the amnesiac must not
// help it (its log would make the merge drop committed ops): it sends no
// DVC while only one replica is amnesiac. Once 0 returns, 0 and 2 elect,
// 1 adopts the log, and amnesia ends durably once its journal holds it.
func TestAmnesiacDoesNotVoteWhileAnIntactQuorumMayExist(t *testing.T) {
	h := committedOnBackupOnly(t)
	h.powerLoss(1, 0)
	h.crash(0)
	if err := h.restart(1); err != nil {
		t.Fatal(err)
	}
	if sb := h.stores[1].superblock; sb == nil || !sb.Amnesiac {
		t.Fatalf("first Ready after an amnesiac restart: superblock %+v, want Amnesiac", sb)
	}
	h.sent = map[MessageKind]int{}
	var dvcFromAmnesiac int
	for step := 0; step < 3000; step++ {
		for i := range h.replicas {
			h.tick(i)
		}
		for _, m := range h.queue {
			if m.From == 1 && m.Kind == MsgDoViewChange {
				dvcFromAmnesiac++
			}
		}
		h.deliverAll()
	}
	if dvcFromAmnesiac != 0 || h.replicas[1].Status() != StatusRecovering {
		t.Fatalf("amnesiac sent %d DVCs, status %v; want none, recovering", dvcFromAmnesiac, h.replicas[1].Status())
	}
	if h.primary() != -1 {
		t.Fatalf("replica %d became primary without replica 0", h.primary())
	}
	if err := h.restart(0); err != nil {
		t.Fatal(err)
	}
	h.runTicks(5000)
	p := h.primary()
	if p < 0 {
		t.Fatalf("no primary after replica 0 returned")
	}
	h.propose(p, Request{Body: []byte("after")})
	h.runTicks(500)
	for i, r := range h.replicas {
		if r.CommitMin() != 4 || r.Status() != StatusNormal {
			t.Fatalf("replica %d: commit_min %d status %v; want 4, normal", i, r.CommitMin(), r.Status())
		}
	}
	h.checkAppliedAgree()
	if sb := h.stores[1].superblock; sb.Amnesiac || h.replicas[1].amnesia.on {
		t.Fatalf("replica 1 still amnesiac after holding the whole log")
	}
}

// TestAmnesiacNeverNacks: a header-only op adopted in this incarnation
// is nacked by an intact replica but not by an amnesiac one (it may have
// acknowledged the op before the power loss), until the rack rule lets
// it vote.
func TestAmnesiacNeverNacks(t *testing.T) {
	headers := []PrepareHeader{{Op: 3, Checksum: 33, View: 1}, {Op: 2, Checksum: 22, View: 1}, {Op: 1, Checksum: 11, View: 1}}
	for _, amnesia := range []bool{false, true} {
		r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1, ViewHeaders: headers}, Amnesia: amnesia})
		if err != nil {
			t.Fatal(err)
		}
		clear(r.unprovable) // as if adopted in this incarnation
		d := r.buildDVC()
		if d.op != 3 || d.amnesiac != amnesia {
			t.Fatalf("amnesia=%v: DVC head %d flagged %v", amnesia, d.op, d.amnesiac)
		}
		if nacked := !d.nack.IsZero(); nacked == amnesia {
			t.Fatalf("amnesia=%v: nack bits %x", amnesia, d.nack)
		}
		if amnesia {
			r.amnesia.rack = true
			if d := r.buildDVC(); d.op != 3 || d.commit != 0 || d.nack.IsZero() || d.headers[0].Commit != 0 {
				t.Fatalf("rack election: DVC head %d commit %d nack %x; want head 3, commit capped at the held prefix (0), lost ops nacked, no commit stamps", d.op, d.commit, d.nack)
			}
		}
	}
}

// TestFlaggedDVCsCountOnlyTogether: a primary-elect holds an amnesiac's
// flagged DVC back until as many flagged DVCs as leave too few intact
// replicas for a quorum (n = 5: 3) arrived in the same view.
func TestFlaggedDVCsCountOnlyTogether(t *testing.T) {
	r, err := New(DefaultConfig(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	r.startViewChange(1)
	for _, from := range []uint8{0, 2} {
		r.Step(Message{Kind: MsgDoViewChange, Group: 0, From: from, View: 1, Amnesiac: true})
	}
	if len(r.vc.dvcs) != 1 || len(r.vc.amnesiacDVCs) != 2 {
		t.Fatalf("two flagged DVCs: %d counted, %d held; want own only, 2 held", len(r.vc.dvcs), len(r.vc.amnesiacDVCs))
	}
	r.Step(Message{Kind: MsgDoViewChange, Group: 0, From: 3, View: 1, Amnesiac: true})
	if len(r.vc.dvcs) != 4 || !r.vc.amnesiacQuorum {
		t.Fatalf("three flagged DVCs: %d counted; want all 4", len(r.vc.dvcs))
	}
}

// TestRackPowerLossElects: every replica loses its unsynced writes at
// once. No intact quorum exists, so after their probes go unanswered the
// amnesiacs elect among themselves; the group serves again and amnesia
// ends everywhere. An op synced by a quorum survives; ops synced by one
// replica may not (the merge's quorum may leave it out).
func TestRackPowerLossElects(t *testing.T) {
	h := committedOnBackupOnly(t)
	h.runTicks(100)
	op1 := h.stores[0].applied[0]
	synced := []uint64{2, 1, 0}
	for i := range h.replicas {
		h.powerLoss(i, synced[i])
	}
	for i := range h.replicas {
		if err := h.restart(i); err != nil {
			t.Fatal(err)
		}
	}
	h.runTicks(5000)
	p := h.primary()
	if p < 0 {
		t.Fatalf("no primary after a rack power loss")
	}
	tag := h.propose(p, Request{Body: []byte("after")})
	h.runTicks(500)
	rep := h.replies[tag]
	if rep.Kind != ReplyCommitted || rep.Op < 2 {
		t.Fatalf("proposal after the rack election: %+v; want committed above op 1", rep)
	}
	for i, r := range h.replicas {
		if r.Status() != StatusNormal || r.CommitMin() != rep.Op || h.stores[i].applied[0] != op1 {
			t.Fatalf("replica %d: status %v commit_min %d; want normal at op %d, op 1 (synced by two) kept", i, r.Status(), r.CommitMin(), rep.Op)
		}
		if r.amnesia.on || h.stores[i].superblock.Amnesiac {
			t.Fatalf("replica %d still amnesiac", i)
		}
	}
	h.checkAppliedAgree()
}

// TestAmnesiaSurvivesAnOrdinaryCrash: the superblock carries amnesia, so
// a restart without Restored.Amnesia before recovery is still amnesiac.
func TestAmnesiaSurvivesAnOrdinaryCrash(t *testing.T) {
	r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 2, LogView: 2}, Amnesia: true})
	if err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if rd.Superblock == nil || !rd.Superblock.Amnesiac {
		t.Fatalf("first Ready superblock %+v, want Amnesiac", rd.Superblock)
	}
	r2, err := Restart(DefaultConfig(1, 3), Restored{Superblock: rd.Superblock})
	if err != nil {
		t.Fatal(err)
	}
	rd2 := r2.Ready()
	if !r2.amnesia.on || rd2.Superblock != nil {
		t.Fatalf("restart from an amnesiac superblock: amnesiac %v, superblock rewrite %v", r2.amnesia.on, rd2.Superblock != nil)
	}
	for _, m := range rd2.Messages {
		if m.Kind == MsgRequestStartView && !m.Amnesiac {
			t.Fatalf("probe without the amnesiac flag")
		}
	}
	if solo, _ := Restart(DefaultConfig(0, 1), Restored{Amnesia: true}); solo.amnesia.on || solo.Status() != StatusNormal {
		t.Fatalf("n = 1 must ignore amnesia")
	}
}

// TestAmnesiacTakesOnlyItsProbeAnswer: a nonce-less StartView may have
// left before a rack power loss its primary did not survive, so an
// amnesiac that has not adopted a view refuses it, asks the sender for an
// answer to this boot's probe, and adopts that answer.
func TestAmnesiacTakesOnlyItsProbeAnswer(t *testing.T) {
	cfg := DefaultConfig(1, 3)
	cfg.Incarnation = Uint128{Lo: 7, Hi: 1}
	r, err := Restart(cfg, Restored{Superblock: &VsrState{View: 1, LogView: 1}, Amnesia: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Advance(r.Ready())
	sv := Message{Kind: MsgStartView, Group: cfg.GroupID, From: 2, View: 2}
	r.Step(sv)
	rd := r.Ready()
	asked := false
	for _, m := range rd.Messages {
		asked = asked || (m.Kind == MsgRequestStartView && m.To == 2 && m.Incarnation == cfg.Incarnation && m.Amnesiac)
	}
	if r.Status() != StatusRecovering || !asked {
		t.Fatalf("nonce-less StartView: status %v, probe to its sender %v; want recovering, probed", r.Status(), asked)
	}
	r.Advance(rd)
	sv.Incarnation = cfg.Incarnation
	r.Step(sv)
	if r.Status() != StatusNormal || r.View() != 2 {
		t.Fatalf("probe answer: status %v view %d; want normal in view 2", r.Status(), r.View())
	}
	if r.Amnesiac() {
		t.Fatalf("still amnesiac with nothing missing below the head")
	}
}

// TestRecoveringReplicaServesOnlyHigherViews: an amnesiac (Recovering)
// replica answers a repair request only from a requester in a higher view
// than its own, stamping the answer with its own view (simulator finding
// 16: a committed op's only body may be in its synced journal). A request
// of its own view gets nothing: a DVC it sent there before the restart
// must never vouch for what its journal holds now.
func TestRecoveringReplicaServesOnlyHigherViews(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	for k := 1; k <= 3; k++ {
		h.propose(0, Request{Body: []byte(fmt.Sprintf("op-%d", k))})
		h.deliverAll()
	}
	h.powerLoss(2, 3) // every op synced: the journal keeps 1..3
	if err := h.restart(2); err != nil {
		t.Fatal(err)
	}
	r := h.replicas[2]
	if r.Status() != StatusRecovering {
		t.Fatalf("status %v after an amnesiac restart, want recovering", r.Status())
	}
	serve := func(view uint32) []Message {
		return repairAnswers(r, Message{Kind: MsgRequestPrepares, From: 1, To: 2, View: view, FromOp: 1, ToOp: 3, Nonce: Uint128{Lo: 7}})
	}
	if got := serve(r.View()); len(got) != 0 {
		t.Fatalf("served %d entries to a requester in its own view %d", len(got), r.View())
	}
	got := serve(r.View() + 1)
	if len(got) != 3 {
		t.Fatalf("served %d entries to a requester in a higher view, want 3", len(got))
	}
	for _, m := range got {
		if m.View != r.View() {
			t.Fatalf("answer stamped view %d, want its own view %d", m.View, r.View())
		}
	}
}

// repairAnswers steps r with a repair request and returns the
// RepairPrepares it sends (its Readys carried out without a store).
func repairAnswers(r *Replica, req Message) (repairs []Message) {
	r.Step(req)
	for r.HasReady() {
		rd := r.Ready()
		for _, m := range rd.Messages {
			if m.Kind == MsgRepairPrepare {
				repairs = append(repairs, m)
			}
		}
		r.Advance(rd)
	}
	return repairs
}

// TestStorageLostWithholdsNacksUntilItHoldsTheLog (whole-node simulator
// seed 8143): a replica whose storage was lost may have acknowledged an
// op it later adopts header-only from a StartView. Its DVC must not nack
// that op (with a replica that never held it, the nack would cut a
// committed op), until its journal holds the view's log up to the head.
func TestStorageLostWithholdsNacksUntilItHoldsTheLog(t *testing.T) {
	headers := []PrepareHeader{{Op: 3, Checksum: 33, View: 1}, {Op: 2, Checksum: 22, View: 1}, {Op: 1, Checksum: 11, View: 1}}
	for _, lost := range []bool{false, true} {
		r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1, ViewHeaders: headers}, StorageLost: lost})
		if err != nil {
			t.Fatal(err)
		}
		clear(r.unprovable) // as if adopted in this incarnation
		r.status = StatusNormal
		r.maybeClearStorageLost() // holds none of the bodies: stays
		if r.StorageLost() != lost {
			t.Fatalf("lost=%v: StorageLost() %v before the bodies are held", lost, r.StorageLost())
		}
		if nacked := !r.buildDVC().nack.IsZero(); nacked == lost {
			t.Fatalf("lost=%v: nacked %v", lost, nacked)
		}
	}
	// Once the journal holds the log, nacks are honest again.
	log := chainLog(3, 0, 0)
	r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: prepares(log...), StorageLost: true})
	if err != nil {
		t.Fatal(err)
	}
	r.status = StatusNormal
	r.maybeClearStorageLost()
	if r.StorageLost() {
		t.Fatal("a Normal replica holding its whole log still withholds nacks")
	}
}

// TestPrimaryProbedFromALaterViewMovesUp (consensus simulator finding
// 19): a replica restarted in a view its group never reached cannot
// rejoin below it, and a storage-lost one never elects; the primary that
// hears its probe starts a view change to that view.
func TestPrimaryProbedFromALaterViewMovesUp(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	h.propose(0, Request{Body: []byte("x")})
	h.deliverAll()
	p := h.replicas[0]
	p.Advance(p.Ready())
	p.Step(Message{Kind: MsgRequestStartView, Group: p.cfg.GroupID, From: 1, To: 0, View: 1, Incarnation: Uint128{Lo: 9}})
	if p.Status() != StatusViewChange || p.View() != 1 {
		t.Fatalf("primary probed from view 1: status %v view %d; want a view change to view 1", p.Status(), p.View())
	}
}

// TestMergeWaitsBelowAReportedCommit: a DVC reporting a commit_max above
// every DVC's head (a replica whose WAL was lost kept the commit_max its
// superblock recorded) keeps the merge from deciding: the ops it names
// committed are held by no voter, and deciding would cut them. Without
// that report the same DVCs decide.
func TestMergeWaitsBelowAReportedCommit(t *testing.T) {
	for _, reported := range []uint64{0, 5} {
		r, err := New(DefaultConfig(1, 3))
		if err != nil {
			t.Fatal(err)
		}
		r.startViewChange(1)
		r.Step(Message{Kind: MsgStartViewChange, Group: 0, From: 0, View: 1})
		r.Step(Message{Kind: MsgDoViewChange, Group: 0, From: 0, View: 1, StorageLost: true, CommitMax: reported})
		decided := r.vc.plan != nil || r.Status() == StatusNormal
		if want := reported == 0; decided != want {
			t.Fatalf("a DVC reporting commit_max %d beside heads of 0: decided %v, want %v", reported, decided, want)
		}
	}
}

// TestStorageLostForgetsCommitsAboveTheViewItAdopts (whole-node simulator
// seed 36138): a replica whose WAL was lost keeps the commit_max its
// superblock recorded. After an election beyond the group's budget dropped
// those ops, that stale commit_max made every later merge counting its DVC
// wait for ops no replica held: hand-overs to it failed for good. Adopting
// a view, it keeps only the view's commit (as an amnesiac does); an
// intact replica keeps what it knows.
func TestStorageLostForgetsCommitsAboveTheViewItAdopts(t *testing.T) {
	log := chainLog(3, 0, 0)
	for _, lost := range []bool{false, true} {
		r, err := Restart(DefaultConfig(2, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1, CommitMax: 5},
			Entries: prepares(log...), StorageLost: lost})
		if err != nil {
			t.Fatal(err)
		}
		r.Advance(r.Ready())
		r.Step(Message{Kind: MsgStartView, From: 0, To: 2, View: 3, HeadOp: 3, CommitOp: 3, Suffix: descending(log, 3, 1)})
		want := uint64(5)
		if lost {
			want = 3
		}
		if got := r.CommitMax(); got != want {
			t.Fatalf("storage lost %v: commit_max %d after adopting a view committed to 3, want %d", lost, got, want)
		}
	}
}
