package partitions

import (
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/vfs"
)

// rendezvousFS is the real file system whose .log fdatasync returns only
// once an .index fdatasync has started (or after a bound, reporting that
// it waited in vain): a sync that runs the two one after the other blocks
// on it.
type rendezvousFS struct {
	vfs.FS
	once         sync.Once
	indexStarted chan struct{}
	mu           sync.Mutex
	waitedInVain bool
}

func (r *rendezvousFS) SyncsInParallel() bool { return true }

func (r *rendezvousFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &rendezvousFile{File: f, fs: r, name: name}, nil
}

type rendezvousFile struct {
	vfs.File
	fs   *rendezvousFS
	name string
}

func (f *rendezvousFile) Datasync() error {
	switch {
	case strings.HasSuffix(f.name, indexSuffix):
		f.fs.once.Do(func() { close(f.fs.indexStarted) })
	case strings.HasSuffix(f.name, logSuffix):
		select {
		case <-f.fs.indexStarted:
		case <-time.After(5 * time.Second):
			f.fs.mu.Lock()
			f.fs.waitedInVain = true
			f.fs.mu.Unlock()
		}
	}
	return f.File.Datasync()
}

// TestSyncRunsLogAndIndexSyncsAtOnce (issue 9 point 3): a persisted
// barrier's fdatasync of the segment log and of its index run at the same
// time, so they can share one journal commit; the log's sync waits here
// until the index's has started, which a sync running them in turn never
// lets happen.
func TestSyncRunsLogAndIndexSyncsAtOnce(t *testing.T) {
	rfs := &rendezvousFS{FS: vfs.OS, indexStarted: make(chan struct{})}
	l := openLog(t, t.TempDir(), Options{FS: rfs, IndexIntervalBytes: 1})
	defer l.Close()
	if _, err := l.Append(makeBatch(t, 0, 3, 100, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	rfs.mu.Lock()
	defer rfs.mu.Unlock()
	if rfs.waitedInVain {
		t.Fatal("the log's fdatasync finished before the index's started: the two ran one after the other")
	}
}
