package partitions

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestRandomDamageNeverServesWrongData damages a three-segment log at random (byte flips in logs and
// indexes, truncations, garbage tails, lost indexes) and checks the recovery contract: Open either
// quarantines or serves an exact prefix of the original messages, and the recovered log takes appends.
// Index damage alone must never lose a message.
func TestRandomDamageNeverServesWrongData(t *testing.T) {
	src := t.TempDir()
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 512}
	l := openLog(t, src, opts)
	for i := 0; i < 14; i++ {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 1+i%3, 150+40*i, uint64(100+i))); err != nil {
			t.Fatal(err)
		}
	}
	original := poll(t, l, wire.PollFirst, 0, 1000)
	starts := make([]uint64, len(l.segments))
	for i, s := range l.segments {
		starts[i] = s.startOffset
	}
	l.Close()
	want := decodeMessages(t, original.Records)

	rng := rand.New(rand.NewPCG(7, 11))
	for iter := 0; iter < 60; iter++ {
		dir := t.TempDir()
		copyDir(t, src, dir)
		seg := starts[rng.IntN(len(starts))]
		logPath, indexPath := segmentLogPath(dir, seg), segmentIndexPath(dir, seg)
		data, _ := os.ReadFile(logPath)
		kind := rng.IntN(5)
		indexOnly := false
		switch {
		case kind == 0 && len(data) > 0:
			data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		case kind == 1 && len(data) > 0:
			data = data[:rng.IntN(len(data))]
		case kind == 2:
			garbage := make([]byte, 1+rng.IntN(600))
			for i := range garbage {
				garbage[i] = byte(rng.IntN(256))
			}
			data = append(data, garbage...)
		case kind == 3:
			indexOnly = true
			os.Remove(indexPath)
		default:
			indexOnly = true
			idx, _ := os.ReadFile(indexPath)
			if len(idx) > 0 {
				idx[rng.IntN(len(idx))] ^= 0x40
				os.WriteFile(indexPath, idx, 0o644)
			}
		}
		if !indexOnly {
			if err := os.WriteFile(logPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Open(dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 512, Logger: quietLogger})
		if err != nil {
			if !errors.Is(err, ErrQuarantined) || indexOnly {
				t.Fatalf("iteration %d (damage kind %d in segment %d): %v", iter, kind, seg, err)
			}
			continue
		}
		res := poll(t, r, wire.PollFirst, 0, 1000)
		got := decodeMessages(t, res.Records)
		if len(got) > len(want) || (indexOnly && len(got) != len(want)) {
			t.Fatalf("iteration %d: %d messages recovered of %d", iter, len(got), len(want))
		}
		for i := range got {
			if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Payload, want[i].Payload) || got[i].ID != want[i].ID {
				t.Fatalf("iteration %d: message %d differs from the original", iter, i)
			}
		}
		if _, err := r.Append(makeBatch(t, r.NextOffset(), 1, 8, 1)); err != nil {
			t.Fatalf("iteration %d: append after recovery: %v", iter, err)
		}
		r.Close()
	}
}

func decodeMessages(t *testing.T, records []byte) []wire.PolledMessage {
	t.Helper()
	var count uint32
	for pos := 0; pos < len(records); {
		h, err := wire.DecodeBatchHeader(records[pos:])
		if err != nil {
			t.Fatal(err)
		}
		count += h.MessageCount
		pos += int(h.BatchLength)
	}
	r, err := wire.DecodePollMessagesReply(wire.AppendPollMessagesReply(nil, 0, 0, count, records))
	if err != nil {
		t.Fatal(err)
	}
	return r.Messages
}
