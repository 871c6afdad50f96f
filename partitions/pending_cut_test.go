package partitions

import (
	"os"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// A torn tail cut at open whose fsync fails: the open fails, the page cache
// shows the cut, the disk may not. The retried open must make the cut
// durable (a fresh file), so a later power loss never brings the cut bytes
// back. Without the marker, some seeds resurrect them (docs/simulator.md,
// storage item 17).
func TestCutWhoseSyncFailedIsMadeDurableByTheNextOpen(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		m := vfs.NewMem(seed)
		if err := writeBootID(m, 1); err != nil {
			t.Fatal(err)
		}
		memPartitionDir(t, m, "/p")
		l := memLog(t, m, Options{})
		appendN(t, l, 5)
		if err := l.Close(); err != nil { // synced: 5 whole batches on disk
			t.Fatal(err)
		}
		seg := segmentLogPath("/p", 0)
		info, err := m.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		whole := info.Size()
		// A torn append after the synced batches, made durable (as if it reached the disk).
		f, err := m.OpenFile(seg, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("torn batch header, never completed: garbage garbage garbage"), whole); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := m.InjectSyncFailure(seg); err != nil {
			t.Fatal(err)
		}
		opts := Options{FS: m, Files: NewFileCache(OpenFilesMin, quietLogger), Logger: quietLogger}
		if _, err := Open("/p", opts); err == nil {
			t.Fatalf("seed %d: the open whose cut could not be synced succeeded", seed)
		}
		l = memLog(t, m, Options{}) // the retry, same boot
		if next := l.NextOffset(); next != 10 {
			t.Fatalf("seed %d: next offset %d after the retried open, want 10", seed, next)
		}
		l.Close()
		m.Crash()
		if info, err := m.Stat(seg); err != nil || info.Size() != whole {
			t.Fatalf("seed %d: after a power loss the segment holds %v bytes (%v), the cut left %d", seed, info.Size(), err, whole)
		}
		if _, err := m.Stat(pendingCutPath("/p", 0)); err == nil {
			t.Fatalf("seed %d: the cut marker outlived the finished cut", seed)
		}
	}
}
