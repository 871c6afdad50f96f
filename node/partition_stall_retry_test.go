package node

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/wire"
)

// TestStalledReadyIsNotAppliedTwice: a backup's Ready carries a send, a
// purge, a send and a send; the disk refuses the last append, so the Ready
// stalls and is carried out again once the fence lifts. The ops its first
// attempt applied must not be applied again: a send recognised by the
// retry table would leave the offsets where the purge put them, and the
// refused batch would then be refused for good as stamped for another
// place (metadata simulator seed 17037: the replica's frontier went wrong
// and a state transfer spread it).
func TestStalledReadyIsNotAppliedTwice(t *testing.T) {
	// The primary stamps the batches as a primary does.
	ps, pe, pg := reserveTestShard(t)
	sendBatch(t, ps, pe, 2)
	commitAll(t, ps, pe, pg, 0)
	ps.admit(&partitionProposal{entry: pe, op: partitionOpPurge, body: encodePurgeOp(1, 0)})
	commitAll(t, ps, pe, pg, 0)
	sendBatch(t, ps, pe, 2)
	commitAll(t, ps, pe, pg, 0)
	sendBatch(t, ps, pe, 1)
	commitAll(t, ps, pe, pg, 0)

	// The backup gets them all in one Ready.
	s, e, _ := reserveTestShard(t)
	sb, _, err := journal.OpenSuperblock(t.TempDir(), journal.Identity{ReplicaCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.superblock = sb // a cluster replica: a refused append stalls
	faulty := &appendFailingStore{partitionStore: e.log}
	e.log = faulty
	client := consensus.Uint128{Lo: 9, Hi: 1}
	var committed []consensus.Prepare
	var sends []uint64
	for i, r := range pg.proposed {
		h := consensus.PrepareHeader{Op: uint64(i + 1), Operation: r.Operation}
		if wire.Operation(r.Operation) == wire.OpSendMessages {
			h.Client, h.Request, h.ReqSum = client, uint64(len(sends)+1)|dedupRequestFlag, uint64(len(sends)+1)
			sends = append(sends, h.Op)
		}
		committed = append(committed, consensus.Prepare{Header: h, Body: r.Body})
	}
	if len(sends) != 3 {
		t.Fatalf("%d sends proposed, want 3", len(sends))
	}
	last := sends[2]
	appends := 0
	faulty.beforeAppend = func() bool { appends++; return appends == 3 } // the last send's append fails once
	if err := e.apply(committed); err == nil {
		t.Fatal("the refused append did not stall the Ready")
	}
	if e.appliedOp != last-1 {
		t.Fatalf("applied to op %d before the stall, want %d", e.appliedOp, last-1)
	}
	if err := e.apply(committed); err != nil {
		t.Fatalf("the Ready carried out again: %v", err)
	}
	for _, op := range sends[1:] {
		if out := s.results[op]; out.code != wire.OK {
			t.Fatalf("send op %d answered %d after the retry, want OK", op, out.code)
		}
	}
	if got, want := s.results[sends[1]].baseOffset, uint64(0); got != want {
		t.Fatalf("the send after the purge answered base offset %d, want %d", got, want)
	}
	if e.appliedNext != 3 || e.log.NextOffset() != 3 {
		t.Fatalf("applied up to offset %d, log ends at %d; want 3 and 3 (2 + 1 messages after the purge)", e.appliedNext, e.log.NextOffset())
	}
	a, err := readWholeLog(pe.log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readWholeLog(e.log)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("the backup's log (%d bytes) differs from the primary's (%d bytes)", len(b), len(a))
	}
}
