package partitions

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestReadRecordsReturnsStoredBatchesWhole: records come back byte for byte
// from a batch start, across segments, bounded by end and by bytes (one
// record at least), and the errors name retention and mid-batch offsets.
func TestReadRecordsReturnsStoredBatchesWhole(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096})
	defer l.Close()
	var batches [][]byte
	for i := 0; i < 12; i++ {
		b := makeBatch(t, l.NextOffset(), 2, 700, 1000+uint64(i))
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	all, next, err := l.ReadRecords(nil, 0, 1<<62, 1<<30)
	if err != nil || next != 24 || !bytes.Equal(all, bytes.Join(batches, nil)) {
		t.Fatalf("whole log: next %d err %v, %d bytes (want %d)", next, err, len(all), len(bytes.Join(batches, nil)))
	}
	part, next, err := l.ReadRecords(nil, 4, 10, 1<<30) // batches at 4, 6, 8
	if err != nil || next != 10 || !bytes.Equal(part, bytes.Join(batches[2:5], nil)) {
		t.Fatalf("offsets 4..10: next %d err %v", next, err)
	}
	one, next, err := l.ReadRecords(nil, 6, 1<<62, 1) // the byte bound still takes one record
	if err != nil || next != 8 || !bytes.Equal(one, batches[3]) {
		t.Fatalf("one-byte bound: next %d err %v len %d", next, err, len(one))
	}
	if none, next, err := l.ReadRecords(nil, 24, 1<<62, 1<<30); err != nil || next != 24 || len(none) != 0 {
		t.Fatalf("at the end: next %d err %v len %d", next, err, len(none))
	}
	if _, _, err := l.ReadRecords(nil, 5, 1<<62, 1<<30); !errors.Is(err, ErrNotBatchStart) {
		t.Fatalf("mid-batch offset: %v", err)
	}
	if _, err := l.DeleteSegmentsBefore(12); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.ReadRecords(nil, 2, 1<<62, 1<<30); !errors.Is(err, ErrBelowRetained) {
		t.Fatalf("below retention: %v", err)
	}
	rec, _, err := l.ReadRecords(nil, 12, 14, 1<<30)
	if err != nil || !bytes.Equal(rec, batches[6]) {
		t.Fatalf("after retention: %v", err)
	}
	if _, err := wire.VerifyBatch(rec); err != nil {
		t.Fatalf("a returned record does not verify: %v", err)
	}
}
