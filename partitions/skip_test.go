package partitions

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestSkipToRecordsAHoleThatReadsAndReopensSkip: a cluster replica's log (no ReserveOffsets) skips
// offsets when its group orders it (node/partition_reserve.go). The hole is recorded, polls and
// record reads step over it, a read from inside it starts after it (a trailing one included, so a
// state transfer can copy it), and a reopen accepts it; an unrecorded gap is still damage.
func TestSkipToRecordsAHoleThatReadsAndReopensSkip(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1}
	l := openLog(t, dir, opts)
	fillLog(t, l, 2, 10, 50) // offsets 0..19
	if err := l.SkipTo(10); err != nil || l.NextOffset() != 20 {
		t.Fatalf("a skip below the end: err %v, next %d, want a no-op at 20", err, l.NextOffset())
	}
	if err := l.SkipTo(100); err != nil {
		t.Fatal(err)
	}
	if l.NextOffset() != 100 {
		t.Fatalf("next offset %d after SkipTo(100)", l.NextOffset())
	}
	if _, err := os.Stat(filepath.Join(dir, segmentBaseName(20)+lostSuffix)); err != nil {
		t.Fatalf("the hole is not recorded: %v", err)
	}
	// A trailing hole: nothing follows it yet, the read still moves past it.
	if recs, next, err := l.ReadRecords(nil, 20, 1000, 1<<20); err != nil || len(recs) != 0 || next != 100 {
		t.Fatalf("read from a trailing hole: %d bytes, next %d, err %v; want none, 100, nil", len(recs), next, err)
	}
	if _, err := l.Append(makeBatch(t, 20, 3, 8, 7000)); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("an append inside the hole: %v, want ErrOffsetMismatch", err)
	}
	if _, err := l.Append(makeBatch(t, 100, 3, 8, 7000)); err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{20, 57, 99} {
		recs, next, err := l.ReadRecords(nil, from, 1000, 1<<20)
		if err != nil || next != 103 {
			t.Fatalf("read from %d inside the hole: next %d, err %v; want 103", from, next, err)
		}
		if h, err := wire.DecodeBatchHeader(recs); err != nil || h.BaseOffset != 100 {
			t.Fatalf("read from %d: first record %+v, %v; want the batch at 100", from, h, err)
		}
	}
	// A chunk stops before the hole, so a chunk is always contiguous.
	if _, next, err := l.ReadRecords(nil, 10, 1000, 1<<20); err != nil || next != 20 {
		t.Fatalf("read across the hole: next %d, err %v; want 20 (stops before it)", next, err)
	}
	if got := decodePoll(t, poll(t, l, wire.PollOffset, 15, 10)); len(got) != 8 || got[4] != 19 || got[5] != 100 {
		t.Fatalf("a poll across the hole served %v, want 15..19 then 100..102", got)
	}
	expectOffsets(t, "from inside the hole", poll(t, l, wire.PollOffset, 30, 10), 100, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, opts)
	if l2.NextOffset() != 103 {
		t.Fatalf("reopened at %d, want 103", l2.NextOffset())
	}
	if res := poll(t, l2, wire.PollFirst, 0, 100); res.MessagesCount != 23 {
		t.Fatalf("%d messages after the reopen, want 23", res.MessagesCount)
	}
	if recs, next, err := l2.ReadRecords(nil, 40, 1000, 1<<20); err != nil || next != 103 || len(recs) == 0 {
		t.Fatalf("reopened: read from inside the hole: next %d, err %v", next, err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	// Without its marker the same gap is damage: the partition is not served as if whole.
	if err := os.Remove(filepath.Join(dir, segmentBaseName(20)+lostSuffix)); err != nil {
		t.Fatal(err)
	}
	if l3, err := Open(dir, opts); err == nil {
		l3.Close()
		t.Fatal("a gap without its marker opened as a whole log")
	}
}

// TestCheckAcceptsARecordedHole: the offline check (iggy-server check) finds nothing wrong with a
// log that skipped offsets on purpose.
func TestCheckAcceptsARecordedHole(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	fillLog(t, l, 2, 10, 50)
	if err := l.SkipTo(500); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 500, 3, 8, 7000)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if findings, err := Check(dir); err != nil || len(findings) != 0 {
		t.Fatalf("check of a log with a recorded hole: %v, %v", findings, err)
	}
}

// TestCutDropsTheHoleMarkersBelowIt: a cut (retention, DeleteSegments) past a hole removes its
// marker at once, as a reopen would, so a replica that restarts and one that does not keep the same
// files (found by the whole-node simulator).
func TestCutDropsTheHoleMarkersBelowIt(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1})
	defer l.Close()
	fillLog(t, l, 2, 10, 50) // offsets 0..19
	if err := l.SkipTo(100); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 100, 3, 8, 7000)); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, segmentBaseName(20)+lostSuffix)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the hole is not recorded: %v", err)
	}
	if _, err := l.DeleteSegmentsBefore(100); err != nil {
		t.Fatal(err)
	}
	if l.Stats().FirstOffset != 100 {
		t.Fatalf("first offset %d after the cut, want 100", l.Stats().FirstOffset)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the marker of a hole below the cut is still there: %v", err)
	}
}

// TestRollFullAtOpen: a cluster replica's log reopened with a full active segment (the empty one
// its last append rolled to was lost) rolls at once, so its files match a replica that kept it.
func TestRollFullAtOpen(t *testing.T) {
	kept, lost := t.TempDir(), t.TempDir()
	opts := Options{SegmentSizeBytes: 4096, RollFullAtOpen: true}
	for _, dir := range []string{kept, lost} {
		l := openLog(t, dir, opts)
		fillLog(t, l, 1, 8, 600) // one batch over 4 KiB: rolled after the append
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names := func(dir string) []string {
		entries, _ := os.ReadDir(dir)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	want := names(kept)
	// The power loss took the roll's empty segment.
	for _, ext := range []string{".log", ".index"} {
		if err := os.Remove(filepath.Join(lost, segmentBaseName(8)+ext)); err != nil {
			t.Fatal(err)
		}
	}
	l := openLog(t, lost, opts)
	defer l.Close()
	if got := names(lost); len(got) != len(want) || l.Stats().SegmentsCount != 2 {
		t.Fatalf("reopened: files %v, segments %d; the replica that kept the roll has %v", got, l.Stats().SegmentsCount, want)
	}
}

// TestSkipToReplacesAnEmptyActiveSegment: an append that fills its segment rolls to an empty one at
// once; a replica whose roll failed there rolls only when the hole comes. Both must end with the
// same files (whole-node simulator seed 16142): the empty segment moves to the offset after the
// hole instead of staying behind, and the log reopens the same.
func TestSkipToReplacesAnEmptyActiveSegment(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1}
	l := openLog(t, dir, opts)
	for l.Stats().SegmentsCount < 2 {
		fillLog(t, l, 1, 4, 300)
	}
	filledEnd := l.NextOffset()
	if err := l.SkipTo(filledEnd + 50); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentLogPath(dir, filledEnd)); !os.IsNotExist(err) {
		t.Fatalf("the empty segment at %d stayed behind the hole: %v", filledEnd, err)
	}
	if _, err := os.Stat(segmentLogPath(dir, filledEnd+50)); err != nil {
		t.Fatalf("no segment at the offset after the hole: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentBaseName(filledEnd)+lostSuffix)); err != nil {
		t.Fatalf("the hole is not recorded: %v", err)
	}
	fillLog(t, l, 1, 4, 300)
	want := l.NextOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, opts)
	defer l2.Close()
	if l2.NextOffset() != want || l2.Stats().SegmentsCount != 2 {
		t.Fatalf("reopened at %d with %d segments, want %d with 2", l2.NextOffset(), l2.Stats().SegmentsCount, want)
	}
	expectOffsets(t, "after the hole", poll(t, l2, wire.PollOffset, filledEnd, 10), filledEnd+50, 4)
}

// TestTwoSkipsLeaveTheFilesOfOne: two skips with no record between them (two primary changes in a
// row) leave the files one skip over both leaves, which is what a replica that copies the log by
// state transfer sees (whole-node simulator seed 22746): one marker where the records end.
func TestTwoSkipsLeaveTheFilesOfOne(t *testing.T) {
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), logSuffix) || strings.HasSuffix(e.Name(), indexSuffix) || strings.HasSuffix(e.Name(), lostSuffix) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	opts := Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1}
	twice, once := t.TempDir(), t.TempDir()
	a, b := openLog(t, twice, opts), openLog(t, once, opts)
	fillLog(t, a, 2, 10, 50)
	fillLog(t, b, 2, 10, 50)
	for _, to := range []uint64{60, 75} {
		if err := a.SkipTo(to); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SkipTo(75); err != nil {
		t.Fatal(err)
	}
	fillLog(t, a, 1, 5, 50)
	fillLog(t, b, 1, 5, 50)
	if got, want := names(twice), names(once); !slices.Equal(got, want) {
		t.Fatalf("two skips left %v, one skip %v", got, want)
	}
	for _, l := range []*Log{a, b} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	reopened := openLog(t, twice, opts)
	defer reopened.Close()
	if got := decodePoll(t, poll(t, reopened, wire.PollOffset, 19, 10)); !slices.Equal(got, []uint64{19, 75, 76, 77, 78, 79}) {
		t.Fatalf("a poll across both holes served %v, want 19 then 75..79", got)
	}
	if reopened.NextOffset() != 80 {
		t.Fatalf("reopened at %d, want 80", reopened.NextOffset())
	}
}
