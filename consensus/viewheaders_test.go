package consensus

import (
	"strings"
	"testing"
)

// descending returns log[op-1] for op = head down to low.
func descending(log []PrepareHeader, head, low uint64) []PrepareHeader {
	var hs []PrepareHeader
	for op := head; op >= low && op > 0; op-- {
		hs = append(hs, log[op-1])
	}
	return hs
}

func prepares(hs ...PrepareHeader) []Prepare {
	ps := make([]Prepare, len(hs))
	for i, h := range hs {
		ps[i] = Prepare{Header: h}
	}
	return ps
}

// TestStartViewPersistsViewHeaders: a backup adopting a StartView whose
// head is above its journal persists log_view together with the StartView
// suffix (finding 6) in the same Ready that asks for the missing bodies.
func TestStartViewPersistsViewHeaders(t *testing.T) {
	log := chainLog(3, 0, 0)
	r, err := New(DefaultConfig(2, 3))
	if err != nil {
		t.Fatal(err)
	}
	r.Step(Message{Kind: MsgStartView, Group: 0, From: 1, To: 2, View: 1, HeadOp: 3, CommitOp: 1, Suffix: descending(log, 3, 1)})
	rd := r.Ready()
	if rd.Superblock == nil || rd.Superblock.LogView != 1 || len(rd.Superblock.ViewHeaders) != 3 {
		t.Fatalf("superblock %+v, want log_view 1 with 3 view headers", rd.Superblock)
	}
	for i, h := range rd.Superblock.ViewHeaders {
		if h != log[2-i] {
			t.Fatalf("view header %d = %+v, want %+v", i, h, log[2-i])
		}
	}
	asked := false
	for _, m := range rd.Messages {
		asked = asked || (m.Kind == MsgRequestPrepares && m.FromOp == 1 && m.ToOp == 3)
	}
	if !asked {
		t.Fatalf("no RequestPrepares for ops 1..3 in %+v", rd.Messages)
	}
	r.Advance(rd)
	if r.HasReady() {
		t.Fatalf("superblock still dirty after Advance: %+v", r.Ready())
	}
	// In this incarnation it never held the bodies of 1..3: the DVC names
	// them by header and nacks 2..3 (above commit 1); nothing is present.
	r.startViewChange(2)
	d := r.buildDVC()
	if d.op != 3 || d.headers[0] != log[2] || d.headers[1] != log[1] || d.nack != (Uint128{Lo: 0b11}) || d.present != (Uint128{}) {
		t.Fatalf("DVC %+v: want headers of 3..2 nacked, none present", d)
	}
}

// TestRestartReportsViewHeadWithoutNack: restarted with log_view 1, view
// headers up to op 5 and a journal holding ops 1..2, the replica's head is
// op 5 and its DVC names ops 3..5 by header, present clear, not nacked
// (a crash may have cut an acknowledged body); a merge with a log_view-0
// replica holding them keeps them and names that replica as their source.
func TestRestartReportsViewHeadWithoutNack(t *testing.T) {
	log := chainLog(5, 0, 0)
	sb := &VsrState{View: 2, LogView: 1, CommitMax: 1, ViewHeaders: descending(log, 5, 1)}
	r, err := Restart(DefaultConfig(2, 3), Restored{Superblock: sb, Entries: prepares(log[0], log[1])})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusRecovering || r.Op() != 5 || r.LogView() != 1 {
		t.Fatalf("status %v op %d log_view %d, want recovering op 5 log_view 1", r.Status(), r.Op(), r.LogView())
	}
	if r.HasReady() {
		if rd := r.Ready(); rd.Superblock != nil {
			t.Fatalf("restart rewrote an unchanged superblock: %+v", rd.Superblock)
		}
	}
	d := r.buildDVC()
	if d.op != 5 || d.logView != 1 || len(d.headers) != 5 || d.nack != (Uint128{}) {
		t.Fatalf("DVC %+v: want op 5, log_view 1, 5 headers, no nack", d)
	}
	for op := uint64(5); op >= 1; op-- {
		i := 5 - op
		if d.headers[i] != log[op-1] {
			t.Fatalf("DVC header for op %d = %+v, want %+v", op, d.headers[i], log[op-1])
		}
		if bitAt(d.present, i) != (op <= 2) {
			t.Fatalf("op %d present bit %v", op, bitAt(d.present, i))
		}
	}
	other := dvcFrom(0, 0, log, 5, 1)
	plan := mergeDoViewChanges([]dvcRecord{d, other}, 3, 2)
	if plan.outcome != mergeDecided || plan.head != 5 {
		t.Fatalf("merge %+v, want head 5 decided", plan)
	}
	for op := uint64(2); op <= 5; op++ {
		want := uint32(1 << 0) // only replica 0 holds the bodies of 3..5
		if op == 2 {
			want |= 1 << 2
		}
		if src := plan.sources[op-plan.commitMax-1]; src != want {
			t.Fatalf("op %d sources %b, want %b", op, src, want)
		}
	}
}

// TestRestartChainBreakTailUnprovable: durable entries after a hash-chain
// break are not trusted, but they may have been acknowledged, so the
// restarted replica keeps its head at the highest of them and reports them
// as blanks without nacks (never an implicit nack by a lower head).
func TestRestartChainBreakTailUnprovable(t *testing.T) {
	log := chainLog(4, 0, 0)
	alt := chainLog(4, 9, 2) // op 3 of alt does not chain to op 2 of log
	r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 1}, Entries: prepares(log[0], log[1], alt[2], alt[3])})
	if err != nil {
		t.Fatal(err)
	}
	if r.Op() != 4 || !r.journal.has(2) || r.journal.has(3) {
		t.Fatalf("op %d, journal 2:%v 3:%v; want head 4 with ops 1..2 held", r.Op(), r.journal.has(2), r.journal.has(3))
	}
	d := r.buildDVC()
	if d.op != 4 || d.nack != (Uint128{}) || d.headers[0].Checksum != 0 || d.headers[1].Checksum != 0 {
		t.Fatalf("DVC %+v: want head 4, blanks at 3..4, no nack", d)
	}
	// n = 1 commits its head on restart: it keeps the verified prefix only.
	solo, err := Restart(DefaultConfig(0, 1), Restored{Superblock: &VsrState{View: 1}, Entries: prepares(log[0], log[1], alt[2], alt[3])})
	if err != nil || solo.Op() != 2 || solo.CommitMin() != 2 {
		t.Fatalf("solo restart: op %d commit %d err %v, want 2 2", solo.Op(), solo.CommitMin(), err)
	}
}

// TestRestartViewHeadersConflictingEntry: a journal entry that disagrees
// with the durable view header at its op (a later view's entry whose
// superblock write was lost) is cut like a chain break, so it is
// unprovable: the view header is reported instead, present clear, and it
// is never nacked.
func TestRestartViewHeadersConflictingEntry(t *testing.T) {
	log := chainLog(3, 0, 0)
	alt := chainLog(3, 9, 3)
	sb := &VsrState{View: 1, LogView: 1, ViewHeaders: descending(log, 3, 1)}
	r, err := Restart(DefaultConfig(1, 3), Restored{Superblock: sb, Entries: prepares(log[0], log[1], alt[2])})
	if err != nil {
		t.Fatal(err)
	}
	d := r.buildDVC()
	if r.journal.has(3) || d.op != 3 || d.headers[0] != log[2] || bitAt(d.present, 0) || d.nack != (Uint128{}) {
		t.Fatalf("DVC %+v: want op 3 by its view header, not present, not nacked", d)
	}
}

// TestRestartRejectsMalformedViewHeaders: view headers that do not descend
// one op at a time, reach op 0, or exceed the bound refuse the restart
// with an error naming the problem.
func TestRestartRejectsMalformedViewHeaders(t *testing.T) {
	log := chainLog(200, 0, 0)
	gap := descending(log, 5, 1)
	gap[1].Op = 7
	cases := map[string][]PrepareHeader{
		"names op":         gap,
		"reach op 0":       append(descending(log, 2, 1), PrepareHeader{}),
		"exceed the bound": descending(log, 200, 1),
	}
	for want, hs := range cases {
		_, err := Restart(DefaultConfig(1, 3), Restored{Superblock: &VsrState{View: 2, LogView: 2, ViewHeaders: hs}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v", want, err)
		}
	}
}
