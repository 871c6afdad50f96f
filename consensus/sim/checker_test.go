package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// fakeGroup exposes fixed accessor values to the checker.
type fakeGroup struct {
	consensus.Group
	view, logView        uint32
	commitMin, commitMax uint64
	storageLost          bool
}

func (f *fakeGroup) StorageLost() bool { return f.storageLost }

func (f *fakeGroup) View() uint32      { return f.view }
func (f *fakeGroup) LogView() uint32   { return f.logView }
func (f *fakeGroup) CommitMin() uint64 { return f.commitMin }
func (f *fakeGroup) CommitMax() uint64 { return f.commitMax }

type checkerHarness struct {
	now uint64
	got []Violation
	c   *groupChecker
}

func newHarness(n int, dedup bool) *checkerHarness {
	h := &checkerHarness{}
	h.c = newGroupChecker("g", n, dedup, &h.now, func(v Violation) { h.got = append(h.got, v) })
	return h
}

func (h *checkerHarness) expect(t *testing.T, check string) {
	t.Helper()
	for _, v := range h.got {
		if v.Check == check {
			return
		}
	}
	t.Fatalf("expected a %s violation, got %v", check, h.got)
}

func (h *checkerHarness) clean(t *testing.T) {
	t.Helper()
	if len(h.got) != 0 {
		t.Fatalf("unexpected violations: %v", h.got)
	}
}

func prep(op, sum, ts uint64, client uint64, request uint64) *consensus.Prepare {
	return &consensus.Prepare{Header: consensus.PrepareHeader{Op: op, Checksum: sum, Timestamp: ts,
		Client: consensus.Uint128{Lo: client}, Request: request, Operation: opMetadataWrite}}
}

func TestCheckerAgreement(t *testing.T) {
	h := newHarness(3, false)
	h.c.onCommitted(0, prep(1, 10, 1, 1, 1), 100, 0)
	h.c.onCommitted(1, prep(1, 10, 1, 1, 1), 100, 0)
	h.clean(t)
	h.c.onCommitted(2, prep(1, 11, 1, 1, 1), 100, 0)
	h.expect(t, checkAgreement)
}

func TestCheckerCommittedOpChangedOnSameReplica(t *testing.T) {
	h := newHarness(3, false)
	h.c.onCommitted(0, prep(1, 10, 1, 1, 1), 100, 0)
	h.c.onCommitted(0, prep(1, 12, 1, 1, 1), 100, 0) // e.g. after a restart
	h.expect(t, checkCommittedChanged)
}

func TestCheckerStateHashDivergence(t *testing.T) {
	h := newHarness(2, false)
	h.c.onCommitted(0, prep(1, 10, 1, 1, 1), 100, 0)
	h.c.onCommitted(1, prep(1, 10, 1, 1, 1), 101, 0)
	h.expect(t, checkApplyOrder)
}

func TestCheckerExactlyOnceOnMetadataPlane(t *testing.T) {
	h := newHarness(3, true)
	h.c.onCommitted(0, prep(1, 10, 1, 5, 1), 1, 0)
	h.c.onCommitted(0, prep(2, 11, 2, 5, 1), 2, 0)
	h.expect(t, checkExactlyOnce)

	p := newHarness(3, false) // partition plane: at-least-once is fine
	p.c.onCommitted(0, prep(1, 10, 1, 5, 1), 1, 0)
	p.c.onCommitted(0, prep(2, 11, 2, 5, 1), 2, 0)
	p.clean(t)
}

func TestCheckerAckMustMatchCommittedOp(t *testing.T) {
	h := newHarness(3, true)
	h.c.onCommitted(0, prep(1, 10, 1, 5, 1), 1, 77)
	h.c.onAck(0, consensus.Uint128{Lo: 5}, 1, opMetadataWrite, 77, 1)
	h.clean(t)
	h.c.onAck(0, consensus.Uint128{Lo: 5}, 2, opMetadataWrite, 77, 1)
	h.expect(t, checkAckInLog)
	h2 := newHarness(3, true)
	h2.c.onAck(0, consensus.Uint128{Lo: 5}, 1, opMetadataWrite, 77, 3)
	h2.expect(t, checkAckInLog)
}

func TestCheckerTimestampsIncrease(t *testing.T) {
	h := newHarness(1, false)
	h.c.onCommitted(0, prep(1, 10, 5, 1, 1), 1, 0)
	h.c.onCommitted(0, prep(2, 11, 5, 1, 2), 2, 0)
	h.expect(t, checkTimestamp)
}

func TestCheckerMonotonicWithinIncarnation(t *testing.T) {
	h := newHarness(1, false)
	g := &fakeGroup{view: 3, logView: 3, commitMin: 5, commitMax: 6}
	h.c.observe(0, g)
	g.commitMin = 4
	h.c.observe(0, g)
	h.expect(t, checkMonotonic)

	h = newHarness(1, false)
	h.c.observe(0, &fakeGroup{view: 3, logView: 3, commitMin: 5, commitMax: 6})
	h.c.observe(0, &fakeGroup{view: 2, logView: 2, commitMin: 5, commitMax: 6})
	h.expect(t, checkMonotonic)

	// commit_max drops: a violation, unless the replica reported its
	// storage lost (it forgets commits above the view it adopts).
	h = newHarness(1, false)
	h.c.observe(0, &fakeGroup{view: 3, logView: 3, commitMin: 5, commitMax: 9})
	h.c.observe(0, &fakeGroup{view: 4, logView: 4, commitMin: 5, commitMax: 7})
	h.expect(t, checkMonotonic)
	h = newHarness(1, false)
	h.c.observe(0, &fakeGroup{view: 3, logView: 3, commitMin: 5, commitMax: 9, storageLost: true})
	h.c.observe(0, &fakeGroup{view: 4, logView: 4, commitMin: 5, commitMax: 7})
	if len(h.got) != 0 {
		t.Fatalf("a storage-lost replica's commit_max drop was flagged: %+v", h.got)
	}
}

func TestCheckerRestartMayResumeFromSnapshotButNotBelowRevealedView(t *testing.T) {
	h := newHarness(3, false)
	h.c.observe(0, &fakeGroup{view: 4, logView: 4, commitMin: 9, commitMax: 9})
	h.c.onSent(0, &consensus.Message{Kind: consensus.MsgPrepareOk, View: 4})
	h.c.onSnapshotDurable(0, 5)
	h.c.onCrash(0)
	// Commit may restart from the durable snapshot (5), view is kept.
	h.c.onRestart(0, &fakeGroup{view: 4, logView: 4, commitMin: 5, commitMax: 5})
	h.clean(t)
	h.c.onCrash(0)
	h.c.onRestart(0, &fakeGroup{view: 3, logView: 3, commitMin: 5, commitMax: 5})
	h.expect(t, checkRevealedView)
	h.got = nil
	h.c.onCrash(0)
	h.c.onRestart(0, &fakeGroup{view: 4, logView: 4, commitMin: 4, commitMax: 5})
	h.expect(t, checkMonotonic)
}

func TestCheckerRequestStartViewIsExemptFromRevealedView(t *testing.T) {
	h := newHarness(3, false)
	h.c.onSent(0, &consensus.Message{Kind: consensus.MsgRequestStartView, View: 9})
	h.c.onRestart(0, &fakeGroup{view: 1, logView: 1})
	h.clean(t)
}

func TestCheckerDurableStateNeverRegresses(t *testing.T) {
	h := newHarness(1, false)
	h.c.onSuperblock(0, consensus.VsrState{View: 2, LogView: 2, CommitMax: 10})
	h.c.onSuperblock(0, consensus.VsrState{View: 3, LogView: 2, CommitMax: 10})
	h.clean(t)
	h.c.onSuperblock(0, consensus.VsrState{View: 3, LogView: 2, CommitMax: 9})
	h.expect(t, checkDurableMonotonic)
	h.got = nil
	h.c.onSnapshotDurable(0, 8)
	h.c.onSnapshotDurable(0, 7)
	h.expect(t, checkDurableMonotonic)
}

func TestCheckerInternalInvariants(t *testing.T) {
	h := newHarness(1, false)
	h.c.observe(0, &fakeGroup{view: 1, logView: 2})
	h.expect(t, checkInternal)
	h = newHarness(1, false)
	h.c.observe(0, &fakeGroup{commitMin: 3, commitMax: 2})
	h.expect(t, checkInternal)
}

func TestCheckerSnapshotMustMatchLog(t *testing.T) {
	h := newHarness(2, false)
	h.c.onCommitted(0, prep(1, 10, 1, 1, 1), 100, 0)
	h.c.onSnapshotInstalled(1, 1, 100, 0)
	h.clean(t)
	h.c.onSnapshotInstalled(1, 1, 101, 0)
	h.expect(t, checkSnapshot)
	h.got = nil
	h.c.onSnapshotInstalled(1, 1, 100, 3)
	h.expect(t, checkSnapshot)
}

func TestAppSnapshotRoundTripAndContiguity(t *testing.T) {
	var a appState
	if err := a.apply(prep(1, 10, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := a.apply(prep(3, 10, 1, 1, 1)); err == nil {
		t.Fatal("a gap in committed ops was accepted")
	}
	a.extra = []byte("table")
	s := a.snapshot()
	b, err := decodeAppSnapshot(&s)
	if err != nil || b.op != a.op || b.hash != a.hash || string(b.extra) != "table" {
		t.Fatalf("snapshot round trip: %+v %v", b, err)
	}
	s.Data[3] ^= 1
	if _, err := decodeAppSnapshot(&s); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
}
