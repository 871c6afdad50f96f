package partitions

import (
	"errors"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestScrubFindsDamageInBoundedStepsAndGoesOn (issue 15 point 6): the background scrub verifies the
// log in steps of bounded bytes, reports a byte flipped under the running log with its file, byte
// and offset, continues past it, and wraps at the end.
func TestScrubFindsDamageInBoundedStepsAndGoesOn(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1})
	defer l.Close()
	fillLog(t, l, 30, 4, 300)
	total := l.Stats().SizeBytes
	damagedSeg := l.segments[1]
	damaged := damagedSeg.index[1]
	flipByteInPlace(t, segmentFile(dir, damagedSeg.startOffset),
		int64(damaged.position+wire.BatchHeaderSize+wire.BatchMessageHeaderSize+3))

	var cur ScrubCursor
	var found []*CorruptionError
	var verified uint64
	for step := 0; ; step++ {
		if step > 1000 {
			t.Fatal("scrub did not wrap within 1000 steps")
		}
		res, err := l.Scrub(cur, 2000)
		if err != nil {
			t.Fatal(err)
		}
		// One batch may overshoot the budget (~1.3 KB each here).
		if res.BytesVerified > 2000+2000 {
			t.Fatalf("step verified %d bytes, budget 2000", res.BytesVerified)
		}
		verified += res.BytesVerified
		if res.Damage != nil {
			found = append(found, res.Damage)
		}
		cur = res.Next
		if res.Wrapped {
			break
		}
	}
	if len(found) != 1 {
		t.Fatalf("scrub found %d damaged batches, want 1", len(found))
	}
	d := found[0]
	if !errors.Is(d, ErrCorrupt) || d.File != segmentBaseName(damagedSeg.startOffset)+logSuffix ||
		d.Position != damaged.position || d.Offset != damaged.offset {
		t.Fatalf("scrub reported %v, want %s byte %d offset %d", d, segmentBaseName(damagedSeg.startOffset), damaged.position,
			damaged.offset)
	}
	if verified != total {
		t.Fatalf("scrub walked %d bytes, the log holds %d", verified, total)
	}
	if cur != (ScrubCursor{}) {
		t.Fatalf("cursor after wrapping = %+v, want the start", cur)
	}
}

// TestScrubCursorSurvivesRetention: a cursor naming a segment retention removed continues at the next.
func TestScrubCursorSurvivesRetention(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1})
	defer l.Close()
	fillLog(t, l, 30, 4, 300)
	second := l.segments[1].startOffset
	if _, err := l.DeleteSegments(1); err != nil {
		t.Fatal(err)
	}
	res, err := l.Scrub(ScrubCursor{SegmentStart: 0, Position: 500}, 1)
	if err != nil || res.Damage != nil || res.Next.SegmentStart != second {
		t.Fatalf("scrub from a removed segment: %+v, %v; want to continue in segment %d", res, err, second)
	}
}
