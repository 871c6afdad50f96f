package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

// TestReplayDecidesAsTheFirstApply: a restarted replica applies again the
// ops above its checkpoint while its log already holds their batches. A
// batch that was refused the first time (stamped at 9 while the log ended
// at 6) must be refused again even though the log now ends at 9 (it holds
// the batches committed after it); one that was appended is recognised
// (whole-node simulator: the refused batch was appended on the replay and
// its offsets acknowledged for two messages).
func TestReplayDecidesAsTheFirstApply(t *testing.T) {
	l := transferTestLog(t, 3) // offsets 0..8, three batches of 3
	s := newPartitionShard(slog.New(slog.NewTextHandler(io.Discard, nil)), partitionGroupConfig{}, nil)
	e := &partitionEntry{log: l, shard: s, appliedNext: 6} // the checkpoint's frontier: ops above it replay
	batchAt := func(base uint64, ts uint64) (*consensus.Prepare, wire.BatchHeader) {
		msgs := make([]wire.BatchMessageInput, 3)
		for i := range msgs {
			msgs[i] = wire.BatchMessageInput{Payload: make([]byte, 600)}
			msgs[i].ID[0] = byte(i + 1)
		}
		b, err := wire.AppendBatch(nil, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.StampBatch(b, 0, base, ts); err != nil {
			t.Fatal(err)
		}
		h, err := wire.DecodeBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		return &consensus.Prepare{Body: b}, h
	}
	// The op refused the first time: stamped at 9, the log then ended at 6.
	p, h := batchAt(9, 5000)
	if out, wrote := s.appendCommitted(e, p, h); out.code == wire.OK || wrote || l.NextOffset() != 9 {
		t.Fatalf("the refused batch on replay: %+v wrote=%v next=%d; want refused, nothing written", out, wrote, l.NextOffset())
	}
	// The op that stored offsets 6..8 the first time: recognised.
	stored, _, err := l.ReadRecords(nil, 6, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := wire.DecodeBatchHeader(stored)
	if out, wrote := s.appendCommitted(e, &consensus.Prepare{Body: stored}, sh); out.code != wire.OK || wrote || out.baseOffset != 6 || e.appliedNext != 9 {
		t.Fatalf("the stored batch on replay: %+v wrote=%v appliedNext=%d; want OK at 6, nothing written, 9", out, wrote, e.appliedNext)
	}
	// Past the replay: a new batch at 9 is appended.
	p, h = batchAt(9, 6000)
	if out, wrote := s.appendCommitted(e, p, h); out.code != wire.OK || !wrote || l.NextOffset() != 12 || e.appliedNext != 12 {
		t.Fatalf("a new batch: %+v wrote=%v next=%d appliedNext=%d", out, wrote, l.NextOffset(), e.appliedNext)
	}
}
