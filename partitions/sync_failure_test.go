package partitions

import (
	"errors"
	"os"
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// TestFailedSyncRecordsARewriteAndFailsTheLog (issue 9 point 6): a failed
// segment fsync is not retried on the same file: Sync reports a
// SyncError with the rewrite recorded, the log refuses writes, and the
// next Open rewrites the segment through a fresh file (the marker goes),
// after which the log serves what it showed and takes writes again.
func TestFailedSyncRecordsARewriteAndFailsTheLog(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, "/p")
		l := memLog(t, m, Options{SegmentSizeBytes: 1 << 20})
		appendN(t, l, 4)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 3)
		if err := m.InjectSyncFailure(segmentLogPath("/p", 0)); err != nil {
			t.Fatal(err)
		}
		var se *SyncError
		if err := l.Sync(); !errors.As(err, &se) || !se.RewriteRecorded {
			t.Fatalf("seed %d: Sync with a failing fdatasync: %v, want a SyncError with the rewrite recorded", seed, err)
		}
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 1, 10, 2000)); !errors.Is(err, ErrFailed) {
			t.Fatalf("seed %d: append after a failed sync: %v, want ErrFailed", seed, err)
		}
		shown := l.NextOffset() // what reads showed (the simulated disk forgets a failed sync's writes)
		_ = l.Close()
		l = memLog(t, m, Options{SegmentSizeBytes: 1 << 20, ServeAroundDamage: true})
		if _, err := m.Stat(pendingCutPath("/p", 0)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("seed %d: the rewrite marker after the reopen: %v", seed, err)
		}
		if got := l.NextOffset(); got < 8 || got > shown {
			t.Fatalf("seed %d: reopened log ends at %d; the synced prefix ends at 8, reads showed %d", seed, got, shown)
		}
		expectOffsets(t, "synced batches", poll(t, l, wire.PollFirst, 0, 8), 0, 8)
		appendN(t, l, 1)
		if err := l.Sync(); err != nil {
			t.Fatalf("seed %d: sync after the rewrite: %v", seed, err)
		}
		l.Close()
	}
}
