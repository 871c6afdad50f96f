package partitions

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// indexWritesFS is the real file system counting the writes to segment
// index files.
type indexWritesFS struct {
	vfs.FS
	mu     sync.Mutex
	writes int
}

func (w *indexWritesFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := w.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, indexSuffix) {
		return f, err
	}
	return &indexWritesFile{File: f, fs: w}, nil
}

func (w *indexWritesFS) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

type indexWritesFile struct {
	vfs.File
	fs *indexWritesFS
}

func (f *indexWritesFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	f.fs.mu.Unlock()
	return f.File.WriteAt(b, off)
}

func indexFileBytes(t *testing.T, dir string, start uint64) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, segmentBaseName(start)+indexSuffix))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}

// TestStagingWritesTheIndexEntriesAppendWouldWrite: the sparse index
// entries of staged batches are written when they are staged (off the
// caller's loop), at the slots and with the contents appending them
// would give; adopting them writes no index entry, and the files end
// byte-identical to a log that appended the same batches.
func TestStagingWritesTheIndexEntriesAppendWouldWrite(t *testing.T) {
	for _, interval := range []uint64{1, 3000} { // every batch indexed; one in a few
		dir, plain := t.TempDir(), t.TempDir()
		counting := &indexWritesFS{FS: vfs.OS}
		opts := Options{FS: counting, IndexIntervalBytes: interval}
		l := openLog(t, dir, opts)
		ref := openLog(t, plain, Options{IndexIntervalBytes: interval})
		fillLog(t, l, 2, 3, 100)
		fillLog(t, ref, 2, 3, 100)
		var batches [][]byte
		next := l.NextOffset()
		for i := 0; i < 6; i++ {
			b := makeBatch(t, next, 3, 400, 2000+uint64(10*i))
			next += 3
			batches = append(batches, b)
			if _, err := l.Stage(b, uint64(100+i)); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := indexFileBytes(t, dir, 0), indexFileBytes(t, plain, 0); !bytes.Equal(got, want) {
			t.Fatalf("interval %d: index after staging %d bytes, appending writes %d bytes (or differs)", interval, len(got), len(want))
		}
		staged := counting.count()
		for _, b := range batches {
			if _, err := l.Append(b); err != nil {
				t.Fatalf("interval %d: adopt: %v", interval, err)
			}
		}
		if n := counting.count() - staged; n != 0 {
			t.Fatalf("interval %d: adopting the staged batches wrote %d index entries", interval, n)
		}
		if l.Stats() != ref.Stats() || !bytes.Equal(indexFileBytes(t, dir, 0), indexFileBytes(t, plain, 0)) {
			t.Fatalf("interval %d: after adoption %+v, appended %+v (or the index files differ)", interval, l.Stats(), ref.Stats())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ref.Close()
		again := openLog(t, dir, Options{IndexIntervalBytes: interval})
		if again.Stats() != ref.Stats() {
			t.Fatalf("interval %d: reopened %+v, want %+v", interval, again.Stats(), ref.Stats())
		}
		again.Close()
	}
}

// TestCuttingStagedBatchesCutsTheirIndexEntries: CutStagedFrom keeps the
// entries of the batches it keeps, CutStaged removes every staged one;
// appends after either leave the index as appending alone would.
func TestCuttingStagedBatchesCutsTheirIndexEntries(t *testing.T) {
	dir, plain := t.TempDir(), t.TempDir()
	l := openLog(t, dir, Options{IndexIntervalBytes: 1})
	defer l.Close()
	ref := openLog(t, plain, Options{IndexIntervalBytes: 1})
	defer ref.Close()
	fillLog(t, l, 2, 3, 100)
	fillLog(t, ref, 2, 3, 100)
	applied := len(indexFileBytes(t, dir, 0))
	b1, b2, b3 := makeBatch(t, 6, 2, 100, 2000), makeBatch(t, 8, 2, 100, 2010), makeBatch(t, 10, 2, 100, 2020)
	for i, b := range [][]byte{b1, b2, b3} {
		if _, err := l.Stage(b, uint64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.CutStagedFrom(11); err != nil { // b2 and b3 go
		t.Fatal(err)
	}
	if got := len(indexFileBytes(t, dir, 0)); got != applied+indexEntrySize {
		t.Fatalf("index after cutting two of three staged batches: %d bytes, want %d", got, applied+indexEntrySize)
	}
	if err := l.CutStaged(); err != nil {
		t.Fatal(err)
	}
	if got := len(indexFileBytes(t, dir, 0)); got != applied {
		t.Fatalf("index after cutting every staged batch: %d bytes, want %d", got, applied)
	}
	other := makeBatch(t, 6, 4, 100, 2030) // another batch at the applied end
	for _, lg := range []*Log{l, ref} {
		if _, err := lg.Append(other); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(indexFileBytes(t, dir, 0), indexFileBytes(t, plain, 0)) {
		t.Fatal("the index after the cuts and an append differs from appending alone")
	}
}
