package partitions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/wire"

	"github.com/lodestream/lodestream/vfs"
)

// TestOffsetsAreNeverReissuedAfterACrashLosesTheTail (issue 15 point 5): a power loss that loses the
// unsynced tail (the file simply ends earlier, no damaged bytes to see) used to hand the lost offsets
// out again. With the durable reservation the log resumes above every offset it handed out; the hole
// is recorded, skipped by polls, and survives reopening; a clean close skips nothing.
func TestOffsetsAreNeverReissuedAfterACrashLosesTheTail(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1, ReserveOffsets: true}
	l := openLog(t, dir, opts)
	fillLog(t, l, 5, 10, 50)
	handedOut := l.NextOffset() // 50
	keep := l.active().index[2].position
	// Crash: no Close; the page cache lost everything after the second batch.
	if err := os.Truncate(segmentFile(dir, 0), int64(keep)); err != nil {
		t.Fatal(err)
	}
	// Without a reboot (a process crash keeps the page cache) the lost bytes can only be a torn,
	// never acknowledged write: the log continues where its data ends.
	if l1 := openLog(t, dir, opts); l1.NextOffset() != 20 {
		t.Fatalf("after a process crash the log resumes at %d, want 20", l1.NextOffset())
	} else {
		l1.closeSegments()
	}
	// After a reboot (power loss), the page cache may have held acknowledged batches.
	booted := currentBootID
	currentBootID = func(vfs.FS) string { return "00000000-0000-0000-0000-000000000001" }
	defer func() { currentBootID = booted }()
	l2 := openLog(t, dir, opts)
	if got := l2.NextOffset(); got < handedOut {
		t.Fatalf("after the crash the next offset is %d: offsets %d..%d would be re-issued", got, got, handedOut-1)
	}
	resume := l2.NextOffset()
	if resume != ReserveOffsetsStep+10 {
		t.Fatalf("resumed at %d, want the reservation %d", resume, ReserveOffsetsStep+10)
	}
	if _, err := l2.Append(makeBatch(t, resume, 3, 8, 7000)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentBaseName(20)+lostSuffix)); err != nil {
		t.Fatalf("the hole is not recorded: %v", err)
	}
	l.closeSegments() // the crashed instance's descriptors
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		l3 := openLog(t, dir, opts)
		if got := l3.NextOffset(); got != resume+3 {
			t.Fatalf("round %d: a clean close then reopen resumes at %d, want %d", round, got, resume+3)
		}
		res := poll(t, l3, wire.PollFirst, 0, 100)
		if res.MessagesCount != 23 {
			t.Fatalf("round %d: %d messages served across the hole, want 23", round, res.MessagesCount)
		}
		expectOffsets(t, "after the hole", poll(t, l3, wire.PollOffset, 25, 10), resume, 3)
		if err := l3.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Purge restarts the offset space on purpose, and forgets the hole.
	l4 := openLog(t, dir, opts)
	if _, err := l4.Purge(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentBaseName(20)+lostSuffix)); !os.IsNotExist(err) {
		t.Fatalf("purge kept the hole marker: %v", err)
	}
	l4.Close()
	if l5 := openLog(t, dir, opts); l5.NextOffset() != 0 {
		t.Fatalf("after purge the log resumes at %d", l5.NextOffset())
	} else {
		l5.Close()
	}
}

// TestMissingSegmentWithoutMarkerIsStillDamage: a gap between segments that no hole marker names is
// damage (quarantined, or refused with ServeAroundDamage), even with reservations on.
func TestMissingSegmentWithoutMarkerIsStillDamage(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1, ReserveOffsets: true}
	l := openLog(t, dir, opts)
	fillLog(t, l, 12, 2, 700)
	second := l.segments[1].startOffset
	l.Close()
	if err := os.Remove(segmentFile(dir, second)); err != nil {
		t.Fatal(err)
	}
	expectQuarantineOpts(t, dir, opts)
}

func expectQuarantineOpts(t *testing.T, dir string, opts Options) {
	t.Helper()
	opts.Logger = quietLogger
	if _, err := Open(dir, opts); err == nil {
		t.Fatal("Open accepted a gap no marker names")
	}
}

// TestFailedIndexWriteLeavesTheLogWritable (issue 15 point 8): a full disk
// that fails the index entry after the batch was written used to leave the
// log refusing every write until a restart (ErrFailed). The batch is undone
// exactly instead, and appends succeed again once the disk takes writes.
func TestFailedIndexWriteLeavesTheLogWritable(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1})
	defer l.Close()
	fillLog(t, l, 2, 3, 50)
	s := l.active()
	writable := s.indexFile
	// Writes through a read-only handle fail, as on a full disk.
	readOnly := l.opts.Files.Register(l.opts.FS, writable.Name(), os.O_RDONLY, false)
	s.indexFile = readOnly
	if _, err := l.Append(makeBatch(t, l.NextOffset(), 3, 50, 5000)); err == nil {
		t.Fatal("append with a failing index write succeeded")
	}
	s.indexFile = writable // space returns
	readOnly.Close()
	if l.NextOffset() != 6 {
		t.Fatalf("next offset %d after the failed append, want 6", l.NextOffset())
	}
	if _, err := l.Append(makeBatch(t, 6, 3, 50, 5001)); err != nil {
		t.Fatalf("append once the disk takes writes again: %v", err)
	}
	expectOffsets(t, "after recovery", poll(t, l, wire.PollFirst, 0, 100), 0, 9)
	l.Close()
	l2 := openLog(t, dir, Options{SegmentSizeBytes: 1 << 20, IndexIntervalBytes: 1})
	defer l2.Close()
	expectOffsets(t, "reopened", poll(t, l2, wire.PollFirst, 0, 100), 0, 9)
}

// TestReservationIsWrittenAheadAndAlwaysCoversHandedOutOffsets: on the OS file system the next
// reservation step is written off the write path once half a step is used, so appends no longer wait
// for its fsyncs; yet at every moment the file on disk covers every offset handed out, and a reopen
// after a reboot resumes above all of them.
func TestReservationIsWrittenAheadAndAlwaysCoversHandedOutOffsets(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSizeBytes: 64 << 20, IndexIntervalBytes: 1 << 20, ReserveOffsets: true}
	l := openLog(t, dir, opts)
	const perBatch = 4096
	sawAhead := false
	for i := 0; l.NextOffset() < 3*ReserveOffsetsStep; i++ {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), perBatch, 8, 1000+uint64(i))); err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, reservedFileName))
		if err != nil {
			t.Fatal(err)
		}
		onDisk, _, _, ok := decodeReservationFrontier(data)
		if !ok || onDisk < l.NextOffset() {
			t.Fatalf("after batch %d the reservation on disk is %d (valid %v), offsets below %d handed out", i, onDisk, ok, l.NextOffset())
		}
		l.mu.Lock()
		sawAhead = sawAhead || l.reserving != nil
		l.mu.Unlock()
	}
	if !sawAhead {
		t.Fatal("no reservation was ever written ahead")
	}
	handedOut := l.NextOffset()
	l.mu.Lock()
	l.collectReservation(true) // the crash below must not race the goroutine's rename
	l.mu.Unlock()
	l.closeSegments() // crash: no Close
	booted := currentBootID
	currentBootID = func(vfs.FS) string { return "00000000-0000-0000-0000-000000000002" }
	defer func() { currentBootID = booted }()
	l2 := openLog(t, dir, opts)
	defer l2.Close()
	if got := l2.NextOffset(); got < handedOut {
		t.Fatalf("after a reboot the log resumes at %d, below the %d offsets handed out", got, handedOut)
	}
}
