package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func TestPersistBeforeSendCheck(t *testing.T) {
	w := newWorld(NewScenario(3), RunOptions{})
	d := w.nodes[0].replicas[0]
	p := entry(5, 55)

	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgStartViewChange, View: 2})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgPrepareOk, View: 0, Prepare: &p})
	if len(w.violations) != 2 {
		t.Fatalf("undurable view and prepare not flagged: %v", w.violations)
	}

	w.violations = nil
	d.store.apply(write{kind: writeSuperblock, superblock: consensus.VsrState{View: 2, LogView: 1}})
	d.store.apply(write{kind: writeEntry, entry: p})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgStartViewChange, View: 2})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgDoViewChange, View: 2, LogView: 1})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgPrepareOk, View: 2, Prepare: &p})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgRequestStartView, View: 9}) // exempt
	if len(w.violations) != 0 {
		t.Fatalf("durable state flagged: %v", w.violations)
	}
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgStartView, View: 2})
	d.checkPersistBeforeSend(&consensus.Message{Kind: consensus.MsgDoViewChange, View: 2, LogView: 2})
	if len(w.violations) != 2 {
		t.Fatalf("StartView/DVC above the durable log_view not flagged: %v", w.violations)
	}
}

func TestUnansweredProposalCheck(t *testing.T) {
	w := newWorld(NewScenario(3), RunOptions{})
	for _, nd := range w.nodes {
		for _, d := range nd.replicas {
			d.pending = map[uint64]proposal{}
		}
	}
	w.checkAnswered()
	if len(w.violations) != 0 {
		t.Fatalf("no pending proposal, got %v", w.violations)
	}
	w.nodes[0].replicas[1].pending[7] = proposal{tick: 42}
	w.checkAnswered()
	if len(w.violations) != 1 || w.violations[0].Check != checkUnanswered {
		t.Fatalf("a proposal left unanswered was not flagged: %v", w.violations)
	}
}
