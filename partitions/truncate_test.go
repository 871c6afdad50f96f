package partitions

import (
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestSegmentEndOffsetAndDeleteSegmentsBefore(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	fillLog(t, l, 6, 2, 700) // segments start at 0 and 6, empty active at 12
	if got := l.SegmentEndOffset(1); got != 6 {
		t.Fatalf("end of one segment = %d, want 6", got)
	}
	if got := l.SegmentEndOffset(99); got != 12 {
		t.Fatalf("end of all segments = %d, want 12", got)
	}
	res, err := l.DeleteSegmentsBefore(5) // segment 0..5 still holds offset 5: nothing goes
	if err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("watermark inside the first segment deleted %+v (%v)", res, err)
	}
	res, err = l.DeleteSegmentsBefore(6)
	if err != nil || res.SegmentsDeleted != 1 || l.Stats().FirstOffset != 6 {
		t.Fatalf("watermark 6: %+v %v %+v", res, err, l.Stats())
	}
	fillLog(t, l, 1, 1, 8) // offset 12 in the active segment
	if _, err := l.DeleteSegmentsBefore(13); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.MessagesCount != 0 || st.NextOffset != 13 {
		t.Fatalf("after deleting everything: %+v", st)
	}
	// Applying the same watermark again changes nothing (replay after restart).
	if res, err := l.DeleteSegmentsBefore(13); err != nil || res.SegmentsDeleted != 0 {
		t.Fatalf("replayed watermark: %+v %v", res, err)
	}
	fillLog(t, l, 1, 2, 8)
	expectOffsets(t, "after watermark deletes", poll(t, l, wire.PollFirst, 0, 5), 13, 2)
}
