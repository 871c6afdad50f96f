package journal

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// procIO returns this process's rchar and wchar (/proc/self/io): bytes
// passed to read and write system calls, whatever code made them. It
// measures the WAL's I/O independently of its implementation.
func procIO(t testing.TB) (read, written int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			read = n
		case "wchar":
			written = n
		}
	}
	return read, written
}

// Benchmarks of the metadata WAL's open, compaction and truncation at two
// retained sizes (1 KiB bodies). They use only the WAL's public API, so
// the same file runs against the single-file WAL of earlier releases
// (BENCHMARKS.md puts both side by side). rw-bytes/op is what the
// operation passed to read and write system calls (/proc/self/io).

var walScaleSizes = []int64{8 << 20, 64 << 20}

const walScaleBody = 1024

func walScaleEntries(from, to uint64) []consensus.Prepare {
	body := make([]byte, walScaleBody)
	es := make([]consensus.Prepare, 0, to-from+1)
	for op := from; op <= to; op++ {
		es = append(es, consensus.Prepare{Header: consensus.PrepareHeader{View: 1, Op: op, Timestamp: op}, Body: body})
	}
	return es
}

// walScaleFill appends ops from..from+n-1 in batches of 256.
func walScaleFill(b *testing.B, w *WAL, from, n uint64) {
	b.Helper()
	for op := from; op < from+n; op += 256 {
		if err := w.Append(walScaleEntries(op, min(op+255, from+n-1))...); err != nil {
			b.Fatal(err)
		}
	}
}

func walScaleOps(size int64) uint64 {
	return uint64(size) / (walScaleBody + walHeaderBytes + prepareFixedBytes)
}

func reportIO(b *testing.B, r0, w0 int64) {
	r1, w1 := procIO(b)
	b.ReportMetric(float64(r1-r0+w1-w0)/float64(b.N), "rw-bytes/op")
}

// BenchmarkWALOpen: open (scan) and close a WAL of the given retained size.
func BenchmarkWALOpen(b *testing.B) {
	for _, size := range walScaleSizes {
		b.Run(fmt.Sprintf("retained=%dMiB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			w, _, err := OpenWAL(dir)
			if err != nil {
				b.Fatal(err)
			}
			walScaleFill(b, w, 1, walScaleOps(size))
			w.Close()
			b.ReportAllocs()
			r0, w0 := procIO(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w, _, err := OpenWAL(dir)
				if err != nil {
					b.Fatal(err)
				}
				w.Close()
			}
			b.StopTimer()
			reportIO(b, r0, w0)
		})
	}
}

// BenchmarkWALCompact: a checkpoint's compaction (512 ops released) on a
// WAL that keeps the given retained size; the 512 new ops are appended
// outside the timer.
func BenchmarkWALCompact(b *testing.B) {
	for _, size := range walScaleSizes {
		b.Run(fmt.Sprintf("retained=%dMiB", size>>20), func(b *testing.B) {
			w, _, err := OpenWAL(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			window := walScaleOps(size)
			walScaleFill(b, w, 1, window)
			next, upTo := window+1, uint64(0)
			var rw int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				walScaleFill(b, w, next, 512)
				next += 512
				upTo += 512
				r0, w0 := procIO(b)
				b.StartTimer()
				if err := w.Compact(upTo); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r1, w1 := procIO(b)
				rw += r1 - r0 + w1 - w0
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(rw)/float64(b.N), "rw-bytes/op")
		})
	}
}

// BenchmarkWALTruncate: a view change's step on a WAL of the given
// retained size: drop the last 8 ops and re-append 8 (TruncateAndAppend).
func BenchmarkWALTruncate(b *testing.B) {
	for _, size := range walScaleSizes {
		b.Run(fmt.Sprintf("retained=%dMiB", size>>20), func(b *testing.B) {
			w, _, err := OpenWAL(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			last := walScaleOps(size)
			walScaleFill(b, w, 1, last)
			tail := walScaleEntries(last-7, last)
			r0, w0 := procIO(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.TruncateAndAppend(last-7, tail); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportIO(b, r0, w0)
		})
	}
}
