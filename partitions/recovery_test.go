package partitions

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// copyDir copies the flat files and the offsets tree of a partition directory.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// captureLogger records log lines so tests can assert on warnings and quarantine errors.
func captureLogger() (*slog.Logger, *bytes.Buffer, *sync.Mutex) {
	var buf bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf, &mu
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func segmentFile(dir string, start uint64) string { return segmentLogPath(dir, start) }

func TestRestartRecoversTheExactLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1000})
	fillLog(t, l, 20, 3, 500)
	if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 1, 33); err != nil {
		t.Fatal(err)
	}
	before := l.Stats()
	want := poll(t, l, wire.PollFirst, 0, 1000).Records
	indexes := map[uint64][]indexEntry{}
	for _, s := range l.segments {
		indexes[s.startOffset] = append([]indexEntry(nil), s.index...)
	}
	// No Close: a crash after the data reached the files. Sync stands for the persisted barrier.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, dir, Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 1000})
	defer again.Close()
	if got := again.Stats(); got != before {
		t.Fatalf("stats after restart %+v, before %+v", got, before)
	}
	if got := poll(t, again, wire.PollFirst, 0, 1000).Records; !bytes.Equal(got, want) {
		t.Fatal("records after restart differ")
	}
	for _, s := range again.segments {
		if len(s.index) != len(indexes[s.startOffset]) {
			t.Fatalf("segment %d index has %d entries after restart, %d before", s.startOffset, len(s.index),
				len(indexes[s.startOffset]))
		}
	}
	if off, ok := again.ConsumerOffset(wire.ConsumerKindSingle, 1); !ok || off != 33 {
		t.Fatalf("consumer offset after restart %d %v", off, ok)
	}
	fillLog(t, again, 1, 1, 8)
	expectOffsets(t, "append after restart", poll(t, again, wire.PollLast, 0, 2), 59, 2)
}

func TestTornTailAtManyByteOffsetsTruncatesToTheLastWholeBatch(t *testing.T) {
	src := t.TempDir()
	l := openLog(t, src, Options{IndexIntervalBytes: 1})
	fillLog(t, l, 4, 2, 40) // four batches of two messages
	var ends []uint64
	for _, e := range l.segments[0].index {
		ends = append(ends, e.position)
	}
	size := l.segments[0].sizeBytes
	ends = append(ends[1:], size) // end position of each batch
	l.Close()
	full, err := os.ReadFile(segmentFile(src, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Cut points: every byte around each batch boundary, then a stride through headers and frames of
	// the last two batches (each cut costs a few fsyncs, so not every byte).
	var cuts []uint64
	for cut := ends[1] - 4; cut < size; cut++ {
		nearBoundary := false
		for _, e := range ends {
			nearBoundary = nearBoundary || (cut+4 >= e && cut <= e+4)
		}
		if nearBoundary || cut%17 == 0 {
			cuts = append(cuts, cut)
		}
	}
	for _, cut := range cuts {
		dir := t.TempDir()
		copyDir(t, src, dir)
		if err := os.WriteFile(segmentFile(dir, 0), full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		whole := 0
		for whole < len(ends) && ends[whole] <= cut {
			whole++
		}
		r := openLog(t, dir, Options{IndexIntervalBytes: 1})
		if got := r.NextOffset(); got != uint64(2*whole) {
			t.Fatalf("cut at %d: next offset %d, want %d", cut, got, 2*whole)
		}
		info, err := os.Stat(segmentFile(dir, 0))
		if err != nil || uint64(info.Size()) != ends[whole-1] {
			t.Fatalf("cut at %d: file is %d bytes, want %d (%v)", cut, info.Size(), ends[whole-1], err)
		}
		idx, _ := os.ReadFile(segmentIndexPath(dir, 0))
		if len(idx) != whole*indexEntrySize {
			t.Fatalf("cut at %d: index holds %d bytes, want %d", cut, len(idx), whole*indexEntrySize)
		}
		fillLog(t, r, 1, 1, 8) // the repaired log takes appends at the right offset
		expectOffsets(t, "after repair", poll(t, r, wire.PollFirst, 0, 100), 0, 2*whole+1)
		r.Close()
	}
}

func TestTornTailVariantsAreTruncated(t *testing.T) {
	cases := map[string]func(full []byte, lastStart int) []byte{
		"zeroed tail of the last batch": func(full []byte, lastStart int) []byte {
			b := append([]byte(nil), full...)
			clear(b[lastStart+300:])
			return b
		},
		"garbage appended": func(full []byte, _ int) []byte {
			return append(append([]byte(nil), full...), bytes.Repeat([]byte{0xAB}, 777)...)
		},
		"zeros appended": func(full []byte, _ int) []byte {
			return append(append([]byte(nil), full...), make([]byte, 5000)...)
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, Options{IndexIntervalBytes: 1})
			fillLog(t, l, 3, 2, 400)
			lastStart := int(l.segments[0].index[2].position)
			l.Close()
			full, _ := os.ReadFile(segmentFile(dir, 0))
			if err := os.WriteFile(segmentFile(dir, 0), mutate(full, lastStart), 0o644); err != nil {
				t.Fatal(err)
			}
			logger, buf, mu := captureLogger()
			r := openLog(t, dir, Options{IndexIntervalBytes: 1, Logger: logger})
			defer r.Close()
			wantNext := uint64(6)
			if name == "zeroed tail of the last batch" {
				wantNext = 4
			}
			if r.NextOffset() != wantNext {
				t.Fatalf("next offset %d, want %d", r.NextOffset(), wantNext)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(buf.String(), "truncating torn tail") {
				t.Fatalf("no warning logged:\n%s", buf.String())
			}
		})
	}
}

func TestInteriorCorruptionQuarantines(t *testing.T) {
	build := func(t *testing.T) (string, *Log) {
		dir := t.TempDir()
		l := openLog(t, dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1})
		fillLog(t, l, 8, 2, 700) // ~3 segments
		return dir, l
	}
	t.Run("bit flip before a valid batch in the active segment", func(t *testing.T) {
		dir, l := build(t)
		fillLog(t, l, 1, 1, 8) // the active segment now holds three batches
		active := l.active()
		start := active.startOffset
		l.Close()
		flipByte(t, segmentFile(dir, start), wire.BatchHeaderSize+60)
		expectQuarantine(t, dir, segmentBaseName(start)+".log")
	})
	t.Run("bit flip in a sealed segment", func(t *testing.T) {
		dir, l := build(t)
		l.Close()
		flipByte(t, segmentFile(dir, 0), 100)
		expectQuarantine(t, dir, segmentBaseName(0)+".log")
	})
	t.Run("sealed segment truncated", func(t *testing.T) {
		dir, l := build(t)
		l.Close()
		if err := os.Truncate(segmentFile(dir, 0), 1000); err != nil {
			t.Fatal(err)
		}
		expectQuarantine(t, dir, segmentBaseName(0)+".log")
	})
	t.Run("missing middle segment", func(t *testing.T) {
		dir, l := build(t)
		second := l.segments[1].startOffset
		l.Close()
		if err := os.Remove(segmentFile(dir, second)); err != nil {
			t.Fatal(err)
		}
		expectQuarantine(t, dir, segmentBaseName(l.segments[2].startOffset)+".log")
	})
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func expectQuarantine(t *testing.T, dir, file string) {
	t.Helper()
	logger, buf, mu := captureLogger()
	_, err := Open(dir, Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1, Logger: logger})
	if !errors.Is(err, ErrQuarantined) {
		t.Fatalf("Open: %v, want ErrQuarantined", err)
	}
	var qe *QuarantineError
	if !errors.As(err, &qe) || qe.File != file || !strings.Contains(err.Error(), file) {
		t.Fatalf("quarantine error %v does not name %s", err, file)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "quarantined") || !strings.Contains(buf.String(), file) {
		t.Fatalf("no quarantine log line naming %s:\n%s", file, buf.String())
	}
}

func TestIndexRebuiltWhenMissingShortOrWrong(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{IndexIntervalBytes: 1})
	fillLog(t, l, 5, 2, 40)
	l.Close()
	good, err := os.ReadFile(segmentIndexPath(dir, 0))
	if err != nil || len(good) != 5*indexEntrySize {
		t.Fatalf("index file %d bytes, %v", len(good), err)
	}
	damage := map[string]func(){
		"missing": func() { os.Remove(segmentIndexPath(dir, 0)) },
		"short":   func() { os.WriteFile(segmentIndexPath(dir, 0), good[:30], 0o644) },
		"wrong": func() {
			b := append([]byte(nil), good...)
			b[30] ^= 1
			os.WriteFile(segmentIndexPath(dir, 0), b, 0o644)
		},
		"long": func() {
			os.WriteFile(segmentIndexPath(dir, 0), append(append([]byte(nil), good...), good[:24]...), 0o644)
		},
	}
	for name, apply := range damage {
		apply()
		r := openLog(t, dir, Options{IndexIntervalBytes: 1})
		expectOffsets(t, name, poll(t, r, wire.PollOffset, 7, 10), 7, 3)
		r.Close()
		got, err := os.ReadFile(segmentIndexPath(dir, 0))
		if err != nil || !bytes.Equal(got, good) {
			t.Fatalf("%s: index not rebuilt (%d bytes, %v)", name, len(got), err)
		}
	}
}

// TestSetAsideDamageKeepsTheVerifiedPrefix: interior corruption quarantines
// the log; SetAsideDamage keeps the batches before the damage (the damaged
// and later segments renamed aside) and the log opens there, ready to be
// refilled.
func TestSetAsideDamageKeepsTheVerifiedPrefix(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	fillLog(t, l, 12, 2, 700) // segments of 6 messages
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, segmentBaseName(6)+logSuffix)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xFF // inside the second batch of the second segment
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{SegmentSizeBytes: 4096, Logger: quietLogger})
	var q *QuarantineError
	if !errors.As(err, &q) {
		t.Fatalf("open of a damaged sealed segment: %v, want a quarantine", err)
	}
	if err := SetAsideDamage(q); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	defer again.Close()
	if again.NextOffset() != q.Offset || q.Offset < 6 || q.Offset >= 12 {
		t.Fatalf("after setting the damage aside: next offset %d, the damage was at offset %d", again.NextOffset(), q.Offset)
	}
	if _, err := again.Append(makeBatch(t, q.Offset, 2, 700, 9000)); err != nil {
		t.Fatalf("refill at the damage: %v", err)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "*.corrupt-*"))
	if len(aside) < 2 {
		t.Fatalf("set-aside files %v: want the damaged segment and the later ones kept", aside)
	}
}
