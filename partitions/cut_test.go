package partitions

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestOpenCutsTheTailAtARecordedFrontier: a log reopened with CutTail keeps
// exactly the batches below the frontier (mid-segment, at a segment start,
// at the very first offset), appends continue there, and the result is the
// same bytes a log that never held the tail has.
func TestOpenCutsTheTailAtARecordedFrontier(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cutAt    uint64
		segments int // segments left
	}{
		{"mid segment", 8, 2},       // segments start at 0, 6, 12, 18 and 24 (empty): the cut is inside the second
		{"segment start", 12, 2},    // the segments from 12 go entirely
		{"first offset", 0, 1},      // an empty first segment remains
		{"beyond the end", 1000, 5}, // nothing above: unchanged
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
			fillLog(t, l, 12, 2, 700) // 24 messages, segments of 6
			must(t, l.Close())
			cut := openLog(t, dir, Options{SegmentSizeBytes: 4096, CutTail: true, CutAtOffset: tc.cutAt})
			want := min(tc.cutAt, 24)
			if cut.NextOffset() != want {
				t.Fatalf("next offset %d after the cut, want %d", cut.NextOffset(), want)
			}
			if st := cut.Stats(); st.MessagesCount != want || int(st.SegmentsCount) != tc.segments {
				t.Fatalf("stats after the cut: %+v (want %d messages in %d segments)", st, want, tc.segments)
			}
			if want > 0 {
				expectOffsets(t, "poll after the cut", poll(t, cut, wire.PollOffset, 0, 100), 0, int(want))
			}
			if _, err := cut.Append(makeBatch(t, want, 2, 700, 5000)); err != nil {
				t.Fatalf("append at the frontier: %v", err)
			}
			must(t, cut.Close())
			again := openLog(t, dir, Options{SegmentSizeBytes: 4096})
			defer again.Close()
			if again.NextOffset() != want+2 {
				t.Fatalf("reopened next offset %d, want %d", again.NextOffset(), want+2)
			}
			if logs, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(logs) != int(again.Stats().SegmentsCount) {
				t.Fatalf("%d segment files for %d segments", len(logs), again.Stats().SegmentsCount)
			}
		})
	}
}

func TestOpenCutRefusesAnOffsetInsideABatchOrBelowTheLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	fillLog(t, l, 12, 2, 700)
	must(t, l.Close())
	if _, err := Open(dir, Options{SegmentSizeBytes: 4096, CutTail: true, CutAtOffset: 9, Logger: quietLogger}); err == nil {
		t.Fatal("a cut inside a batch (offset 9 of batch 8..9) was accepted")
	}
	// Retention removed the first segments: a frontier below them is refused.
	must(t, os.Remove(filepath.Join(dir, segmentBaseName(0)+logSuffix)))
	must(t, os.Remove(filepath.Join(dir, segmentBaseName(0)+indexSuffix)))
	_, err := Open(dir, Options{SegmentSizeBytes: 4096, CutTail: true, CutAtOffset: 2, Logger: quietLogger})
	if err == nil || errors.Is(err, ErrQuarantined) {
		t.Fatalf("a cut below the first stored segment: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
