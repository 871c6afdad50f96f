package journal

import (
	"testing"
)

// Write-path benchmarks through the public API only, so the same file runs
// before and after a change below it (the vfs port: BENCHMARKS.md and
// docs/simulator.md "Storage model: vfs" compare them side by side).

// BenchmarkPrepareLogWriteSmall: a replicated topic's Ready, 4 prepares of
// 1 KiB, written without fsync (the CPU cost of the write path).
func BenchmarkPrepareLogWriteSmall(b *testing.B) {
	l, _, err := OpenPrepareLog(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	entries := plRange(1, 4, 1, 1<<10)
	b.SetBytes(4 << 10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range entries {
			entries[j].Header.Op = uint64(i*4 + j + 1)
		}
		if err := l.Write(0, entries); err != nil {
			b.Fatal(err)
		}
		if i%256 == 255 {
			if err := l.Reclaim(uint64(i*4 + 4)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPrepareLogWriteSync: a persisted topic's Ready, one 1 KiB
// prepare written and fdatasynced.
func BenchmarkPrepareLogWriteSync(b *testing.B) {
	l, _, err := OpenPrepareLog(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	entries := plRange(1, 1, 1, 1<<10)
	b.SetBytes(1 << 10)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		entries[0].Header.Op = uint64(i + 1)
		if err := l.Write(0, entries); err != nil {
			b.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			if err := l.Reclaim(uint64(i + 1)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
