package partitions

import (
	"os"
	"path/filepath"
	"testing"
)

// The open-file cache's cost on the hot path: the file is already open, so a
// call pins it (one mutex, an LRU unlink), runs the system call and unpins it
// (one mutex, an LRU push). Compared with the same call on a plain *os.File.

func benchFile(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReadAt4KiB: one 4 KiB pread from the page cache, plain and cached.
func BenchmarkReadAt4KiB(b *testing.B) {
	path := benchFile(b)
	buf := make([]byte, 4096)
	b.Run("os.File", func(b *testing.B) {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(4096)
		for i := 0; b.Loop(); i++ {
			if _, err := f.ReadAt(buf, int64(i%256)*4096); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CachedFile", func(b *testing.B) {
		h := NewFileCache(OpenFilesMin, quietLogger).Register(nil, path, os.O_RDONLY, false)
		defer h.Close()
		b.SetBytes(4096)
		for i := 0; b.Loop(); i++ {
			if _, err := h.ReadAt(buf, int64(i%256)*4096); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Every goroutine on its own file, all through one cache: the cache's
	// one mutex is shared.
	b.Run("CachedFile-parallel", func(b *testing.B) {
		c := NewFileCache(1024, quietLogger)
		b.SetBytes(4096)
		b.RunParallel(func(pb *testing.PB) {
			h := c.Register(nil, path, os.O_RDONLY, false)
			defer h.Close()
			buf := make([]byte, 4096)
			for i := 0; pb.Next(); i++ {
				if _, err := h.ReadAt(buf, int64(i%256)*4096); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("os.File-parallel", func(b *testing.B) {
		b.SetBytes(4096)
		b.RunParallel(func(pb *testing.PB) {
			f, err := os.Open(path)
			if err != nil {
				b.Error(err)
				return
			}
			defer f.Close()
			buf := make([]byte, 4096)
			for i := 0; pb.Next(); i++ {
				if _, err := f.ReadAt(buf, int64(i%256)*4096); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkPinUnpin is the cache's whole per-call overhead without the system call: Acquire and
// Release of an open file (two mutex sections, an LRU unlink and push).
func BenchmarkPinUnpin(b *testing.B) {
	h := NewFileCache(OpenFilesMin, quietLogger).Register(nil, benchFile(b), os.O_RDONLY, false)
	defer h.Close()
	if _, err := h.Acquire(); err != nil {
		b.Fatal(err)
	}
	h.Release(false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Acquire(); err != nil {
			b.Fatal(err)
		}
		h.Release(false)
	}
}
