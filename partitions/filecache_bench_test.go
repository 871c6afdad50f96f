package partitions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/wire"
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
		h := NewFileCache(OpenFilesMin, quietLogger).Register(path, os.O_RDONLY, false)
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
			h := c.Register(path, os.O_RDONLY, false)
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

// BenchmarkAppendSmall appends one 100-byte message per op (fixed costs dominate; no sync).
func BenchmarkAppendSmall(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 64 << 20})
	defer l.Close()
	batch := makeBatch(b, 0, 1, 100, 1)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	appended := 0
	for b.Loop() {
		if appended == 100_000 {
			if _, err := l.Purge(); err != nil {
				b.Fatal(err)
			}
			appended = 0
		}
		if err := wire.StampBatch(batch, 0, l.NextOffset(), 1); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		appended++
	}
}

// BenchmarkPollSmall polls 10 messages of 100 bytes (fixed costs dominate).
func BenchmarkPollSmall(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{SegmentSizeBytes: 16 << 20})
	defer l.Close()
	for i := 0; i < 1000; i++ {
		if _, err := l.Append(makeBatch(b, l.NextOffset(), 10, 100, uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	start := uint64(0)
	for b.Loop() {
		res, err := l.PollInto(buf[:0], PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: start},
			Count: 10})
		if err != nil || res.MessagesCount != 10 {
			b.Fatalf("poll: %d messages, %v", res.MessagesCount, err)
		}
		start = (start + 10) % 9990
	}
}
