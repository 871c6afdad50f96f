package node

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// TestTakingBackEveryRecordKeepsARecordedHoleAtTheStart: a replica whose
// log holds no message, only offsets skipped after a primary change (an
// empty segment sealed at a .lost marker, then the segment the skip
// resumed at), restarts amnesiac with its checkpoint at op 0. It takes
// back everything and applies the skip again; its files must then be what
// they were, as on the replicas that never restarted. Reset to its next
// offset instead, it dropped the marker and the re-applied skip found
// nothing to skip (metadata simulator finding M20, seed 37528).
func TestTakingBackEveryRecordKeepsARecordedHoleAtTheStart(t *testing.T) {
	s, e, _ := reserveTestShard(t)
	skip := consensus.Prepare{Header: consensus.PrepareHeader{Op: 1, View: 2, Operation: consensus.Operation(partitionOpReserve)}, Body: encodeReserveOp(66, 130)}
	if out, _ := s.apply(e, &skip); out.code != wire.OK {
		t.Fatalf("skip applied with %d", out.code)
	}
	e.appliedOp = 1
	want := logFileNames(t, e.log.(*partitions.Log))
	if !slices.Contains(want, "00000000000000000000.lost") {
		t.Fatalf("the skip recorded no hole at offset 0: %v", want)
	}

	// The restart: nothing past the checkpoint (op 0, offset 0) counts.
	e.appliedOp, e.appliedNext = 0, 0
	p := &partitionPlane{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.cutPastCheckpoint(e, takeBackAmnesiac); err != nil {
		t.Fatal(err)
	}
	if out, _ := s.apply(e, &skip); out.code != wire.OK {
		t.Fatalf("skip applied again with %d", out.code)
	}
	if got := logFileNames(t, e.log.(*partitions.Log)); !slices.Equal(got, want) {
		t.Fatalf("files after taking back and applying again: %v, want %v (as before)", got, want)
	}
	if next := e.log.NextOffset(); next != 66 {
		t.Fatalf("log resumes at %d, want 66", next)
	}
}
