package partitions

import (
	"errors"
	"testing"
	"time"

	"github.com/lodestream/lodestream/vfs"
)

// TestAppendsGoOnWhileASyncAheadIsStuck: SyncAhead holds no lock of the
// log during its fdatasyncs, so an append completes while the disk holds
// the sync (Sync makes writers wait). The sync reports the next offset it
// covered; what was appended meanwhile stays dirty for the next Sync.
func TestAppendsGoOnWhileASyncAheadIsStuck(t *testing.T) {
	fsys := &stuckSyncFS{FS: vfs.OS, started: make(chan struct{}, 1), release: make(chan struct{})}
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 1 << 20, FS: fsys})
	appendN(t, l, 3)
	covered := l.NextOffset()
	fsys.stuck.Store(true)
	type outcome struct {
		next uint64
		err  error
	}
	synced := make(chan outcome, 1)
	go func() {
		next, err := l.SyncAhead()
		synced <- outcome{next, err}
	}()
	select {
	case <-fsys.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync never reached the segment's fdatasync")
	}
	appended := make(chan struct{})
	go func() { appendN(t, l, 1); close(appended) }()
	select {
	case <-appended:
	case <-time.After(5 * time.Second):
		t.Fatal("an append waited for the stuck sync ahead")
	}
	fsys.stuck.Store(false)
	close(fsys.release)
	got := <-synced
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.next != covered {
		t.Fatalf("sync ahead covered offsets below %d, want %d (the log's end when it started)", got.next, covered)
	}
	l.mu.RLock()
	dirty := l.changed()
	l.mu.RUnlock()
	if !dirty {
		t.Fatal("the append made during the sync ahead was marked synced")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestSyncAheadOfAClosedLogIsInconclusive: a log closed before (or during)
// the sync proves nothing and fails nothing.
func TestSyncAheadOfAClosedLogIsInconclusive(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 1 << 20})
	appendN(t, l, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SyncAhead(); !errors.Is(err, ErrSyncAheadInconclusive) {
		t.Fatalf("sync ahead of a closed log: %v, want ErrSyncAheadInconclusive", err)
	}
}
