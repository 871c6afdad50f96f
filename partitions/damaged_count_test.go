package partitions

import (
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// TestDamagedMessageCountIsNotTrusted: a synced batch whose message_count byte is flipped fails its
// checksums with its framing otherwise whole. Recovery refused the offsets the damaged count claimed:
// billions, so the next segment "started before the previous one ended" and a single node quarantined
// the whole partition (or, at the tail, its next offset jumped by billions). The count is trusted only
// when the frames agree with it. Found by TestPowerLossPartitionLog (seed 383).
func TestDamagedMessageCountIsNotTrusted(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	opts := Options{FS: m, SegmentSizeBytes: segmentSizeBytesMin, ServeAroundDamage: true}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", opts)
	loc, err := l.Append(makeBatch(t, 0, 3, 1500, 1000)) // one batch
	if err != nil {
		t.Fatal(err)
	}
	for l.Stats().SegmentsCount < 3 {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 2, 1500, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	want := l.NextOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// message_count is the u32 at byte 48 of the header; flip its top byte.
	if err := m.FlipByte(segmentLogPath("/p", loc.SegmentStartOffset), int64(loc.Position)+51); err != nil {
		t.Fatal(err)
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l = openLog(t, "/p", opts)
	defer l.Close()
	if got := l.NextOffset(); got != want {
		t.Fatalf("next offset %d after the damage, want %d", got, want)
	}
	r := l.DamagedRanges()
	if len(r) != 1 || r[0].FirstOffset != 0 || r[0].EndOffset > want {
		t.Fatalf("damaged ranges %+v, want one starting at 0 and ending by %d", r, want)
	}
}
