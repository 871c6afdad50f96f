package partitions

import (
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// writebackFS is the real file system recording the writeback ranges
// begun on segment logs.
type writebackFS struct {
	vfs.FS
	mu     sync.Mutex
	ranges [][2]int64
}

func (w *writebackFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := w.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &writebackFile{File: f, fs: w, log: strings.HasSuffix(name, logSuffix)}, nil
}

type writebackFile struct {
	vfs.File
	fs  *writebackFS
	log bool
}

func (f *writebackFile) StartWriteback(off, n int64) error {
	if f.log {
		f.fs.mu.Lock()
		f.fs.ranges = append(f.fs.ranges, [2]int64{off, n})
		f.fs.mu.Unlock()
	}
	return f.File.(vfs.Writebacker).StartWriteback(off, n)
}

// TestAppendBeginsWritebackEveryWritebackBytes: with
// Options.WritebackBytes set, appends begin the writeback of the segment
// log in contiguous ranges of at least that many bytes, none before the
// first WritebackBytes; with it unset, never.
func TestAppendBeginsWritebackEveryWritebackBytes(t *testing.T) {
	const every = 8 << 10
	wfs := &writebackFS{FS: vfs.OS}
	l := openLog(t, t.TempDir(), Options{FS: wfs, WritebackBytes: every})
	defer l.Close()
	var total int64
	for i := 0; i < 40; i++ {
		b := makeBatch(t, l.NextOffset(), 3, 500, 1000)
		total += int64(len(b))
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	wfs.mu.Lock()
	ranges := append([][2]int64(nil), wfs.ranges...)
	wfs.mu.Unlock()
	if len(ranges) == 0 {
		t.Fatalf("no writeback begun over %d appended bytes (every %d)", total, every)
	}
	var next int64
	for i, r := range ranges {
		if r[0] != next || r[1] < every {
			t.Fatalf("writeback %d is [%d, +%d); want it to start at %d and span at least %d", i, r[0], r[1], next, every)
		}
		next = r[0] + r[1]
	}
	if next > total || total-next >= every {
		t.Fatalf("writeback begun up to %d of %d bytes; want all but less than %d", next, total, every)
	}

	off := &writebackFS{FS: vfs.OS}
	l2 := openLog(t, t.TempDir(), Options{FS: off})
	defer l2.Close()
	for i := 0; i < 40; i++ {
		if _, err := l2.Append(makeBatch(t, l2.NextOffset(), 3, 500, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if len(off.ranges) != 0 {
		t.Fatalf("writeback begun %d times with WritebackBytes unset", len(off.ranges))
	}
}
