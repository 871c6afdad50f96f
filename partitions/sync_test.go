package partitions

import (
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// stuckSyncFS holds every sync of a segment .log file while stuck is set,
// until release is closed, and says when one started.
type stuckSyncFS struct {
	vfs.FS
	stuck   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (f *stuckSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &stuckSyncFile{File: file, fs: f}, nil
}

type stuckSyncFile struct {
	vfs.File
	fs *stuckSyncFS
}

func (s *stuckSyncFile) wait() {
	if s.fs.stuck.Load() && strings.HasSuffix(s.Name(), logSuffix) {
		select {
		case s.fs.started <- struct{}{}:
		default:
		}
		<-s.fs.release
	}
}

func (s *stuckSyncFile) Sync() error     { s.wait(); return s.File.Sync() }
func (s *stuckSyncFile) Datasync() error { s.wait(); return s.File.Datasync() }

// syncStuckAfter opens a log on a stuckSyncFS, appends n batches and
// starts a Sync that is stuck in the segment's fdatasync (its result comes
// on the channel once fsys.release is closed).
func syncStuckAfter(t *testing.T, n int) (*Log, *stuckSyncFS, <-chan error) {
	t.Helper()
	fsys := &stuckSyncFS{FS: vfs.OS, started: make(chan struct{}, 1), release: make(chan struct{})}
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 1 << 20, FS: fsys})
	appendN(t, l, n)
	fsys.stuck.Store(true)
	synced := make(chan error, 1)
	go func() { synced <- l.Sync() }()
	select {
	case <-fsys.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync never reached the segment's fdatasync")
	}
	return l, fsys, synced
}

// TestReadsGoOnWhileASyncIsStuck: Sync runs its fdatasyncs without the
// log's exclusive lock, so a poll of the partition is served while the
// disk holds the sync (before, every reader waited for it: a stuck disk
// held the partition's reads for as long). Once the sync returns, the log
// is clean.
func TestReadsGoOnWhileASyncIsStuck(t *testing.T) {
	l, fsys, synced := syncStuckAfter(t, 3)
	polled := make(chan PollResult, 1)
	go func() { polled <- poll(t, l, wire.PollFirst, 0, 10) }()
	select {
	case res := <-polled:
		if res.MessagesCount != 6 {
			t.Fatalf("poll during the stuck sync: %d messages, want 6", res.MessagesCount)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a poll waited for the stuck fdatasync")
	}
	close(fsys.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	dirty := l.changed()
	l.mu.RUnlock()
	if dirty {
		t.Fatal("the log is still dirty after its sync returned")
	}
}

// TestASyncLeavesDirtyWhatChangedMeanwhile: an append between the sync's
// plan and its end keeps the log dirty (the next Sync covers it).
func TestASyncLeavesDirtyWhatChangedMeanwhile(t *testing.T) {
	l, fsys, synced := syncStuckAfter(t, 1)
	appended := make(chan struct{})
	go func() { appendN(t, l, 1); close(appended) }() // waits for the read lock to go
	close(fsys.release)
	fsys.stuck.Store(false)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	<-appended
	l.mu.RLock()
	dirty := l.changed()
	l.mu.RUnlock()
	if !dirty {
		t.Fatal("an append during the sync was marked synced")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}
