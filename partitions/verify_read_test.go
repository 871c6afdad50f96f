package partitions

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// flipByteInPlace flips one byte of a file that a running log holds open (same inode, no rewrite).
func flipByteInPlace(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], at); err != nil {
		t.Fatal(err)
	}
}

// TestPollNeverServesABatchCorruptedUnderARunningLog (issue 15 point 6): a byte flipped in a sealed
// segment after the log was opened is detected on read. A poll starting at the damaged batch is
// refused with a CorruptionError naming the file and offset (logged once); a poll that starts before
// it is served up to the damage; polls after it are served.
func TestPollNeverServesABatchCorruptedUnderARunningLog(t *testing.T) {
	dir := t.TempDir()
	logger, buf, mu := captureLogger()
	l := openLog(t, dir, Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1, Logger: logger})
	defer l.Close()
	fillLog(t, l, 30, 4, 300) // 4 messages per batch, several sealed segments
	seg := l.segments[0]
	if len(seg.index) < 3 {
		t.Fatalf("first segment holds %d batches, want ≥ 3", len(seg.index))
	}
	damaged := seg.index[2] // the third batch of the first (sealed) segment: offsets 8..11
	flipByteInPlace(t, segmentFile(dir, 0), int64(damaged.position+wire.BatchHeaderSize+wire.BatchMessageHeaderSize+20))

	for _, start := range []uint64{damaged.offset, damaged.offset + 2} {
		_, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: start}, Count: 10})
		var ce *CorruptionError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
			t.Fatalf("poll from %d over the damaged batch: %v, want ErrCorrupt", start, err)
		}
		if ce.File != segmentBaseName(0)+logSuffix || ce.Position != damaged.position || ce.Offset != damaged.offset {
			t.Fatalf("corruption error names %s byte %d offset %d, want %s byte %d offset %d", ce.File, ce.Position,
				ce.Offset, segmentBaseName(0)+logSuffix, damaged.position, damaged.offset)
		}
	}
	// From before the damage: the intact prefix only.
	expectOffsets(t, "before the damage", poll(t, l, wire.PollOffset, 0, 100), 0, int(damaged.offset))
	// Past the damage: served.
	expectOffsets(t, "after the damage", poll(t, l, wire.PollOffset, damaged.offset+4, 8), damaged.offset+4, 8)
	// Record reads (state transfer) refuse it too.
	if _, _, err := l.ReadRecords(nil, damaged.offset, l.NextOffset(), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadRecords over the damage: %v, want ErrCorrupt", err)
	}
	if got := l.CorruptionsDetected(); got < 3 {
		t.Fatalf("CorruptionsDetected = %d, want ≥ 3", got)
	}
	mu.Lock()
	defer mu.Unlock()
	logged := buf.String()
	if n := strings.Count(logged, "corrupt batch in partition log"); n != 1 {
		t.Fatalf("damage logged %d times, want once:\n%s", n, logged)
	}
	if !strings.Contains(logged, segmentBaseName(0)+logSuffix) || !strings.Contains(logged, "offset=8") {
		t.Fatalf("log line does not name the file and offset:\n%s", logged)
	}
}

// TestPollRefusesADamagedBatchHeader: a header whose batch_length no longer fits the segment is
// corruption (not a generic read failure), named by file and the nearest indexed offset.
func TestPollRefusesADamagedBatchHeader(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1, Logger: quietLogger})
	defer l.Close()
	fillLog(t, l, 30, 4, 300)
	damaged := l.segments[0].index[1]
	flipByteInPlace(t, segmentFile(dir, 0), int64(damaged.position+32+5)) // batch_length, byte 5
	_, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: damaged.offset}, Count: 10})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Position != damaged.position || ce.Offset != damaged.offset {
		t.Fatalf("poll over a damaged header: %v, want a CorruptionError at byte %d offset %d", err, damaged.position,
			damaged.offset)
	}
}
