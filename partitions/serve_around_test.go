package partitions

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

var aroundOpts = Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1, ServeAroundDamage: true}

func openAround(t *testing.T, dir string) *Log {
	t.Helper()
	o := aroundOpts
	o.Logger = quietLogger
	l, err := Open(dir, o)
	if err != nil {
		t.Fatalf("Open with ServeAroundDamage: %v", err)
	}
	return l
}

func pollErr(l *Log, from uint64, count uint32) (PollResult, error) {
	return l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: from}, Count: count})
}

// TestOneDamagedRangeDoesNotBlockThePartition (issue 15 point 7): a flipped byte in one batch of a
// sealed segment sets that batch's offsets apart at open; everything before and after is served, the
// range is refused with a CorruptionError naming it, and the log takes appends and reopens the same.
func TestOneDamagedRangeDoesNotBlockThePartition(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1})
	fillLog(t, l, 12, 2, 700) // 2 messages of ~750 B per batch, ~3 segments
	total := l.NextOffset()
	damaged := l.segments[0].index[1] // offsets 2..3
	l.Close()
	flipByte(t, segmentFile(dir, 0), int64(damaged.position+wire.BatchHeaderSize+60))

	for round := 0; round < 2; round++ {
		l = openAround(t, dir)
		ranges := l.DamagedRanges()
		if len(ranges) != 1 || ranges[0].FirstOffset != 2 || ranges[0].EndOffset != 4 || ranges[0].Position != damaged.position {
			t.Fatalf("round %d: damaged ranges %+v, want offsets 2..3 at byte %d", round, ranges, damaged.position)
		}
		expectOffsets(t, "before the damage", poll(t, l, wire.PollFirst, 0, 100), 0, 2)
		for _, from := range []uint64{2, 3} {
			_, err := pollErr(l, from, 10)
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Offset != 2 || ce.EndOffset != 4 {
				t.Fatalf("round %d: poll from %d: %v, want the range 2..3 refused", round, from, err)
			}
		}
		after := total - 4
		if round == 1 {
			after++ // the batch appended in round 0
		}
		expectOffsets(t, "after the damage", poll(t, l, wire.PollOffset, 4, 100), 4, int(after))
		if st := l.Stats(); st.MessagesCount != total-2+uint64(round) {
			t.Fatalf("round %d: stats count %d messages", round, st.MessagesCount)
		}
		if round == 0 {
			if _, err := l.Append(makeBatch(t, l.NextOffset(), 1, 8, 5000)); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
}

// TestSealedSegmentDamagedToItsEndAndMissingSegmentAreSetApart: a truncated sealed segment refuses its
// lost offsets up to the next segment; a missing segment refuses the offsets it held.
func TestSealedSegmentDamagedToItsEndAndMissingSegmentAreSetApart(t *testing.T) {
	build := func(t *testing.T) (string, []uint64) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1})
		fillLog(t, l, 12, 2, 700)
		var starts []uint64
		for _, s := range l.segments {
			starts = append(starts, s.startOffset)
		}
		l.Close()
		if len(starts) < 3 {
			t.Fatalf("%d segments, want ≥ 3", len(starts))
		}
		return dir, starts
	}
	t.Run("truncated", func(t *testing.T) {
		dir, starts := build(t)
		if err := os.Truncate(segmentFile(dir, 0), 1000); err != nil {
			t.Fatal(err)
		}
		l := openAround(t, dir)
		defer l.Close()
		r := l.DamagedRanges()
		if len(r) != 1 || r[0].EndOffset != starts[1] {
			t.Fatalf("ranges %+v, want one ending at %d", r, starts[1])
		}
		if _, err := pollErr(l, r[0].FirstOffset, 10); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("poll in the lost range: %v", err)
		}
		expectOffsets(t, "next segment", poll(t, l, wire.PollOffset, starts[1], 2), starts[1], 2)
	})
	t.Run("missing middle segment", func(t *testing.T) {
		dir, starts := build(t)
		if err := os.Remove(segmentFile(dir, starts[1])); err != nil {
			t.Fatal(err)
		}
		l := openAround(t, dir)
		defer l.Close()
		r := l.DamagedRanges()
		if len(r) != 1 || r[0].FirstOffset != starts[1] || r[0].EndOffset != starts[2] {
			t.Fatalf("ranges %+v, want %d..%d", r, starts[1], starts[2])
		}
		res := poll(t, l, wire.PollFirst, 0, 1000)
		if res.MessagesCount != uint32(starts[1]) {
			t.Fatalf("poll from the start: %d messages, want the %d before the gap", res.MessagesCount, starts[1])
		}
		if _, err := pollErr(l, starts[1], 10); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("poll in the missing segment: %v", err)
		}
		expectOffsets(t, "after the gap", poll(t, l, wire.PollOffset, starts[2], 2), starts[2], 2)
	})
}

// TestRandomDamageServedAroundNeverServesWrongData: random damage of a three-segment log opened with
// ServeAroundDamage never serves a message that differs from the original; every original message is
// either served, refused as damaged, or cut with a torn tail of the active segment.
func TestRandomDamageServedAroundNeverServesWrongData(t *testing.T) {
	src := t.TempDir()
	l := openLog(t, src, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 512})
	for i := 0; i < 14; i++ {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 1+i%3, 150+40*i, uint64(100+i))); err != nil {
			t.Fatal(err)
		}
	}
	want := decodeMessages(t, poll(t, l, wire.PollFirst, 0, 1000).Records)
	var starts []uint64
	for _, s := range l.segments {
		starts = append(starts, s.startOffset)
	}
	l.Close()
	rng := rand.New(rand.NewPCG(3, 5))
	for iter := 0; iter < 80; iter++ {
		dir := t.TempDir()
		copyDir(t, src, dir)
		path := segmentLogPath(dir, starts[rng.IntN(len(starts))])
		data, _ := os.ReadFile(path)
		for n := 1 + rng.IntN(3); n > 0; n-- {
			data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 512, ServeAroundDamage: true, Logger: quietLogger})
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		for _, m := range want {
			res, err := pollErr(r, m.Offset, 1)
			if errors.Is(err, ErrCorrupt) || (err == nil && res.MessagesCount == 0) {
				continue // refused, or cut as a torn tail
			}
			if err != nil {
				t.Fatalf("iteration %d: poll %d: %v", iter, m.Offset, err)
			}
			got := decodeMessages(t, res.Records)
			if got[0].Offset != m.Offset {
				continue // a refused/cut offset answered by the next served message
			}
			if !bytes.Equal(got[0].Payload, m.Payload) || got[0].ID != m.ID {
				t.Fatalf("iteration %d: message %d differs from the original", iter, m.Offset)
			}
		}
		if _, err := r.Append(makeBatch(t, r.NextOffset(), 1, 8, 1)); err != nil {
			t.Fatalf("iteration %d: append after recovery: %v", iter, err)
		}
		r.Close()
	}
}

// TestDamagedLastBatchKeepsItsOffsets (issue 15 point 5): flipping a byte in the last batch of a
// synced log used to cut it as a torn tail and hand its offsets out again. A whole batch that fails its
// checksums is damage, not a torn append: its offsets stay taken (refused when read), the next append
// continues after them.
func TestDamagedLastBatchKeepsItsOffsets(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1})
	fillLog(t, l, 3, 100, 50)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	last := l.active().index[2]
	next := l.NextOffset()
	l.Close()
	flipByte(t, segmentFile(dir, 0), int64(last.position+wire.BatchHeaderSize+wire.BatchMessageHeaderSize+10))

	l = openAround(t, dir)
	defer l.Close()
	if got := l.NextOffset(); got != next {
		t.Fatalf("next offset after reopening %d, want %d: the damaged batch's offsets would be re-issued", got, next)
	}
	if r := l.DamagedRanges(); len(r) != 1 || r[0].FirstOffset != 200 || r[0].EndOffset != 300 {
		t.Fatalf("damaged ranges %+v, want offsets 200..299", r)
	}
	if _, err := pollErr(l, 250, 10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("poll of the damaged batch: %v", err)
	}
	if _, err := l.Append(makeBatch(t, next, 1, 8, 9000)); err != nil {
		t.Fatal(err)
	}
	expectOffsets(t, "the batch after", poll(t, l, wire.PollOffset, 300, 10), 300, 1)
}

// TestCutAtFirstDamageKeepsThePrefixAndNeverReissues: the offline salvage cuts a log at its first
// damaged range; it then opens without damage, serves the prefix, and resumes above every offset the
// log had handed out (single node, reservations on).
func TestCutAtFirstDamageKeepsThePrefixAndNeverReissues(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1, ReserveOffsets: true, ServeAroundDamage: true,
		Logger: quietLogger}
	l := openLog(t, dir, opts)
	fillLog(t, l, 12, 2, 700)
	next := l.NextOffset()
	damaged := l.segments[0].index[1]
	l.Close()
	flipByte(t, segmentFile(dir, 0), int64(damaged.position+wire.BatchHeaderSize+60))
	cut, err := CutAtFirstDamage(dir)
	if err != nil || cut == nil || cut.FirstOffset != 2 {
		t.Fatalf("cut: %+v, %v", cut, err)
	}
	if f, err := Check(dir); err != nil || len(f) != 0 {
		t.Fatalf("after the cut: findings %v, %v", f, err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	expectOffsets(t, "prefix", poll(t, l, wire.PollFirst, 0, 100), 0, 2)
	if l.NextOffset() < next {
		t.Fatalf("after the cut the log resumes at %d, below %d it had handed out", l.NextOffset(), next)
	}
}
