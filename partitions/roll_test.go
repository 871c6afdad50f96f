package partitions

import (
	"errors"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// fillActive appends batches until the active segment is full.
func fillActive(t *testing.T, l *Log) {
	t.Helper()
	for !l.RollDue() {
		if l.Stats().SizeBytes > 1<<20 {
			t.Fatal("the active segment never filled")
		}
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 2, 300, 1000)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeferredRollLeavesTheFullSegmentForRoll: under DeferRoll the append
// that fills the segment does not roll it; Stats counts the segment the
// roll starts, Roll creates it at the next offset, and the next append
// lands there. The files end as an append's own roll leaves them.
func TestDeferredRollLeavesTheFullSegmentForRoll(t *testing.T) {
	deferred, direct := t.TempDir(), t.TempDir()
	l := openLog(t, deferred, Options{SegmentSizeBytes: 4096, DeferRoll: true})
	fillActive(t, l)
	if n := len(segmentFiles(t, deferred)); n != 2 { // one segment: its log and index
		t.Fatalf("the append that filled the segment left %d files: want the one segment's 2 (no roll)", n)
	}
	if st := l.Stats(); st.SegmentsCount != 2 {
		t.Fatalf("stats with a roll due count %d segments, want 2", st.SegmentsCount)
	}
	full := l.NextOffset()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if l.RollDue() || l.SegmentEndOffset(1) != full || l.SegmentRoom() != 4096 {
		t.Fatalf("after Roll: due %v, second segment at %d (want %d), room %d", l.RollDue(), l.SegmentEndOffset(1), full, l.SegmentRoom())
	}
	if err := l.Roll(); err != nil { // nothing due: nothing done
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, full, 2, 300, 1000)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	d := openLog(t, direct, Options{SegmentSizeBytes: 4096})
	for d.NextOffset() < full+2 {
		if _, err := d.Append(makeBatch(t, d.NextOffset(), 2, 300, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	a, b := segmentFiles(t, deferred), segmentFiles(t, direct)
	if len(a) != len(b) {
		t.Fatalf("deferred roll left %d files, an append's roll %d", len(a), len(b))
	}
	for name, data := range b {
		if string(a[name]) != string(data) {
			t.Fatalf("%s differs between a deferred roll and an append's roll", name)
		}
	}
}

// TestAnAppendPastAFullSegmentRollsItFirst: without Roll, the next append
// rolls the full segment itself (as after a failed roll).
func TestAnAppendPastAFullSegmentRollsItFirst(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 4096, DeferRoll: true})
	fillActive(t, l)
	full := l.NextOffset()
	loc, err := l.Append(makeBatch(t, full, 2, 300, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if loc.SegmentStartOffset != full || loc.Position != 0 || l.RollDue() {
		t.Fatalf("append past a full segment went to segment %d at byte %d (roll due %v): want a new segment at %d",
			loc.SegmentStartOffset, loc.Position, l.RollDue(), full)
	}
}

// TestAFailedRollSyncKeepsTheSegmentActiveAndIsReported: Roll whose
// sealing fdatasync fails leaves the segment active (the roll still due),
// and the next Sync reports the failure (the node fences the group).
func TestAFailedRollSyncKeepsTheSegmentActiveAndIsReported(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	l := memLog(t, m, Options{SegmentSizeBytes: 4096, DeferRoll: true})
	fillActive(t, l)
	if err := m.InjectSyncFailure(segmentLogPath("/p", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Roll with a failing fdatasync: %v, want EIO", err)
	}
	if !l.RollDue() || !l.FailedSyncPending() {
		t.Fatalf("after a failed roll: due %v, failed sync pending %v: want both", l.RollDue(), l.FailedSyncPending())
	}
	if err := l.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the Sync after a failed roll: %v, want the roll's EIO", err)
	}
}
