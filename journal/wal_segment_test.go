package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

func bodyOf(op uint64, n int) string {
	b := bytes.Repeat([]byte{byte(op)}, n)
	copy(b, fmt.Sprintf("op-%d-", op))
	return string(b)
}

// appendRange appends ops from..to with bodies of n bytes, batch ops per call.
func appendRange(t testing.TB, w *WAL, from, to uint64, n, batch int) {
	t.Helper()
	var es []consensus.Prepare
	for op := from; op <= to; op++ {
		es = append(es, prep(op, bodyOf(op, n)))
		if len(es) == batch || op == to {
			if err := w.Append(es...); err != nil {
				t.Fatal(err)
			}
			es = es[:0]
		}
	}
}

func opList(rec []consensus.Prepare) []uint64 {
	var ops []uint64
	for _, p := range rec {
		ops = append(ops, p.Header.Op)
	}
	return ops
}

func seqOps(from, to uint64) []uint64 {
	var ops []uint64
	for op := from; op <= to; op++ {
		ops = append(ops, op)
	}
	return ops
}

// TestWALCompactionAndTruncationCostIsTheWork: on a WAL of ~24 MiB,
// compacting a checkpoint's worth of ops and truncating the last ops read
// nothing back and write only what they add (a tombstone and the
// re-appended entries), measured at the system-call boundary. The
// single-file WAL rewrote every retained byte for both.
func TestWALCompactionAndTruncationCostIsTheWork(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	const ops, body = 6000, 4000
	appendRange(t, w, 1, ops, body, 250)
	if w.Size() < 20<<20 {
		t.Fatalf("setup: WAL is %d bytes", w.Size())
	}
	segsBefore := w.Segments()

	r0, w0 := procIO(t)
	if err := w.Compact(1999); err != nil { // a checkpoint at op 2000
		t.Fatal(err)
	}
	r1, w1 := procIO(t)
	t.Logf("compact: %d bytes read, %d written; %d → %d segments, %d bytes left", r1-r0, w1-w0, segsBefore, w.Segments(), w.Size())
	if r1-r0 > 64<<10 || w1-w0 > 64<<10 {
		t.Fatalf("compaction of a %d-byte WAL read %d and wrote %d bytes: it rewrote records", w.Size(), r1-r0, w1-w0)
	}
	if w.Segments() >= segsBefore {
		t.Fatalf("compaction deleted no segment (%d → %d)", segsBefore, w.Segments())
	}

	re := []consensus.Prepare{reprepared(5995), reprepared(5996)}
	r0, w0 = procIO(t)
	if err := w.TruncateAndAppend(5995, re); err != nil {
		t.Fatal(err)
	}
	r1, w1 = procIO(t)
	t.Logf("truncate-and-append: %d bytes read, %d written", r1-r0, w1-w0)
	if r1-r0 > 4<<10 || w1-w0 > 4<<10 {
		t.Fatalf("truncating the last 6 ops of a %d-byte WAL read %d and wrote %d bytes", w.Size(), r1-r0, w1-w0)
	}
	r0, w0 = procIO(t)
	if err := w.TruncateFrom(5990); err != nil {
		t.Fatal(err)
	}
	r1, w1 = procIO(t)
	if r1-r0 > 4<<10 || w1-w0 > 4<<10 {
		t.Fatalf("truncating from op 5990: read %d, wrote %d bytes", r1-r0, w1-w0)
	}
	w.Close()
	_, rec := openWAL(t, dir)
	if got := opList(rec); got[0] > 2000 || got[len(got)-1] != 5989 {
		t.Fatalf("reopened ops %d..%d, want ≤2000..5989", got[0], got[len(got)-1])
	}
}

// TestWALOpenStreams: the open of a 64 MiB WAL holding one live op never
// holds the file in memory (the single-file WAL read it whole); the peak
// heap growth, sampled during the open, stays far below the file size.
func TestWALOpenStreams(t *testing.T) {
	dir := t.TempDir()
	var data []byte
	body := bodyOf(1, 64<<10)
	for i := 0; i < 1024; i++ { // op 1 superseded 1023 times
		p := prep(1, body)
		p.Header.Request = uint64(i)
		data = appendEntry(data, &p)
	}
	if err := os.WriteFile(filepath.Join(dir, walFileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	data = nil
	// A tight GC target, so that garbage (each superseded record's body)
	// does not pass for memory held.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	w, rec, err := OpenWAL(dir)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(rec) != 1 || rec[0].Header.Request != 1023 {
		t.Fatalf("recovered %d entries", len(rec))
	}
	growth := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("open of a %d-byte WAL: peak heap growth %d bytes", size, growth)
	if growth > size/4 {
		t.Fatalf("open of a %d-byte WAL grew the heap by %d bytes at peak: it holds the file", size, growth)
	}
}

// TestWALMigratesSingleFile: a data directory written by the single-file
// format (metadata/journal.wal) opens: the file becomes segment 0 by a
// rename (no copy), its records, supersessions and torn tail are read as
// before, appends continue, and later segments follow it.
func TestWALMigratesSingleFile(t *testing.T) {
	dir := t.TempDir()
	var legacy []byte
	for _, p := range []consensus.Prepare{prep(1, "one"), prep(2, "two"), prep(3, "three"), prep(2, "two-v2")} {
		legacy = appendEntry(legacy, &p)
	}
	legacy = append(legacy, "LWAL\x10"...) // a torn append
	os.WriteFile(filepath.Join(dir, walFileName), legacy, 0o644)
	w, rec := openWAL(t, dir)
	if got := opsOf(rec); !reflect.DeepEqual(got, opsOf([]consensus.Prepare{prep(1, ""), prep(2, ""), prep(3, "")})) || string(rec[1].Body) != "two-v2" {
		t.Fatalf("migrated %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, walFileName)); !os.IsNotExist(err) {
		t.Fatalf("journal.wal still there: %v", err)
	}
	if st, err := os.Stat(segPath(dir, 0)); err != nil || st.Size() != int64(len(legacy)-5) {
		t.Fatalf("segment 0: %v (%v bytes, want %d)", err, st, len(legacy)-5)
	}
	if f, at, n := w.TornTailFile(), w.tornAt, w.tornBytes; filepath.Base(f) != walSegmentName(0) || n != 5 || at != int64(len(legacy)-5) {
		t.Fatalf("torn tail %s@%d (%d bytes)", f, at, n)
	}
	appendRange(t, w, 4, 700, 10, 100)
	if w.Segments() < 3 {
		t.Fatalf("%d segments after 700 ops", w.Segments())
	}
	if err := w.Compact(650); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Stat(segPath(dir, 0)); !os.IsNotExist(err) {
		t.Fatalf("segment 0 not compacted away: %v", err)
	}
	_, rec = openWAL(t, dir)
	if got := opList(rec); got[len(got)-1] != 700 || got[0] > 651 {
		t.Fatalf("reopened %d..%d", got[0], got[len(got)-1])
	}

	// journal.wal beside segments is not something this code leaves.
	os.WriteFile(filepath.Join(dir, walFileName), legacy[:len(legacy)-5], 0o644)
	if _, _, err := OpenWAL(dir); !errors.Is(err, ErrWALCorrupt) || !strings.Contains(err.Error(), "both") {
		t.Fatalf("open with journal.wal beside segments: %v", err)
	}
}

// segmentedWAL writes ops 1..ops in batches of 50, over several segments,
// and returns the bytes of each segment.
func segmentedWAL(t *testing.T, dir string, ops uint64) [][]byte {
	t.Helper()
	w, _ := openWAL(t, dir)
	appendRange(t, w, 1, ops, 20, 50)
	n := w.Segments()
	w.Close()
	var segs [][]byte
	for i := 1; i <= n; i++ {
		b, err := os.ReadFile(segPath(dir, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, b)
	}
	return segs
}

func writeSegments(t *testing.T, segs [][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for i, b := range segs {
		if b == nil {
			continue
		}
		if err := os.WriteFile(segPath(dir, uint64(i+1)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func flipped(b []byte, at int64) []byte {
	c := append([]byte(nil), b...)
	c[at] ^= 0x40
	return c
}

// TestWALDamageAcrossSegments: damage is judged over the whole log, not
// one file: a bad record followed by a valid one in a later segment is
// interior corruption, damage in a sealed segment is never a torn tail,
// a torn tail is cut only in the last segment, and a missing segment
// refuses. The offline check agrees with the open in every case.
func TestWALDamageAcrossSegments(t *testing.T) {
	segs := segmentedWAL(t, t.TempDir(), 700) // 300 + 300 + 100 records
	if len(segs) != 3 {
		t.Fatalf("setup: %d segments", len(segs))
	}
	lastOf := func(b []byte) int64 { s := recordStarts(t, b); return s[len(s)-1] }
	cases := []struct {
		name   string
		segs   [][]byte
		refuse string // substring of the refusal; "" = opens
		ops    int    // entries recovered when it opens
	}{
		{"last record of segment 1 flipped", [][]byte{flipped(segs[0], lastOf(segs[0])+40), segs[1], segs[2]}, "valid entry (op 301) follows at byte 0 of", 0},
		{"segment 1 cut inside its last record", [][]byte{segs[0][:len(segs[0])-3], segs[1], segs[2]}, "interior corruption", 0},
		{"segment 2 cut, segment 3 empty", [][]byte{segs[0], segs[1][:len(segs[1])-3], {}}, "sealed segment", 0},
		{"segment 2 zero tail, segment 3 empty", [][]byte{segs[0], append(append([]byte(nil), segs[1]...), make([]byte, 100)...), {}}, "sealed segment", 0},
		{"segment 3 torn", [][]byte{segs[0], segs[1], segs[2][:len(segs[2])-3]}, "", 699},
		{"segment 3 torn to nothing", [][]byte{segs[0], segs[1], segs[2][:10]}, "", 600},
		{"segment 3 empty (created, never written)", [][]byte{segs[0], segs[1], {}}, "", 600},
		{"segment 2 missing", [][]byte{segs[0], nil, segs[2]}, "is missing", 0},
		{"segment 3 last record flipped", [][]byte{segs[0], segs[1], flipped(segs[2], lastOf(segs[2])+40)}, "complete but fails verification", 0},
	}
	for _, tc := range cases {
		dir := writeSegments(t, tc.segs)
		file, _, reason, cerr := firstWALDamage(vfs.OS, dir)
		w, rec, err := OpenWAL(dir)
		if tc.refuse != "" {
			if !errors.Is(err, ErrWALCorrupt) || !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("%s: open %v, want a refusal with %q", tc.name, err, tc.refuse)
			}
			if tc.refuse != "is missing" && (cerr != nil || !strings.Contains(reason, "refuses to boot")) {
				t.Fatalf("%s: the check says %s %q %v", tc.name, file, reason, cerr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: open: %v", tc.name, err)
		}
		w.Close()
		if len(rec) != tc.ops || !reflect.DeepEqual(opList(rec), seqOps(1, uint64(tc.ops))) {
			t.Fatalf("%s: recovered %d entries, want %d", tc.name, len(rec), tc.ops)
		}
		if file != "" && !strings.Contains(reason, "torn tail") {
			t.Fatalf("%s: the check says %s %q", tc.name, file, reason)
		}
	}

	// The repair cuts at the damage and drops the later segments; the WAL
	// then opens with everything before the damage.
	dir := writeSegments(t, [][]byte{flipped(segs[0], lastOf(segs[0])+40), segs[1], segs[2]})
	cut, err := TruncateWALAtDamage(dir)
	if err != nil || cut == nil || cut.File != walSegmentName(1) || cut.At != lastOf(segs[0]) ||
		!reflect.DeepEqual(cut.Removed, []string{walSegmentName(2), walSegmentName(3)}) ||
		cut.Dropped != int64(len(segs[0]))-lastOf(segs[0])+int64(len(segs[1])+len(segs[2])) {
		t.Fatalf("repair: %+v %v", cut, err)
	}
	if f := CheckMetadata(dir); len(f) != 0 {
		t.Fatalf("after the repair: %v", f)
	}
	_, rec := openWAL(t, dir)
	if !reflect.DeepEqual(opList(rec), seqOps(1, 299)) {
		t.Fatalf("after the repair recovered %d entries", len(rec))
	}
}

// TestWALTombstoneReappendReopen: tombstones remove earlier records in
// any segment, records after them count, and all of it survives a reopen
// and a compaction that deletes the segment holding the removed records.
func TestWALTombstoneReappendReopen(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	appendRange(t, w, 1, 600, 20, 50) // segments 1 (1..300), 2 (301..600)
	// Ops 290..600 were divergent: a new primary's 290..295 replace them.
	var re []consensus.Prepare
	for op := uint64(290); op <= 295; op++ {
		re = append(re, reprepared(op))
	}
	if err := w.TruncateAndAppend(290, re); err != nil {
		t.Fatal(err)
	}
	if err := w.TruncateFrom(295); err != nil { // and 295 again
		t.Fatal(err)
	}
	if err := w.Append(prep(295, "final-295"), prep(296, "final-296")); err != nil {
		t.Fatal(err)
	}
	check := func(what string, rec []consensus.Prepare, from uint64) {
		t.Helper()
		if !reflect.DeepEqual(opList(rec), seqOps(from, 296)) {
			t.Fatalf("%s: ops %v", what, opList(rec))
		}
		for _, p := range rec {
			op := p.Header.Op
			switch {
			case op < 290 && string(p.Body) != bodyOf(op, 20),
				op >= 290 && op < 295 && !reflect.DeepEqual(p, reprepared(op)),
				op >= 295 && string(p.Body) != fmt.Sprintf("final-%d", op):
				t.Fatalf("%s: op %d is %q", what, op, p.Body)
			}
		}
	}
	w.Close()
	w, rec := openWAL(t, dir)
	check("reopen", rec, 1)
	// Segment 1 holds 1..300, segment 2 301..600 (all removed by the
	// tombstone), segment 3 the tombstones and 290..296: a checkpoint at
	// 250 keeps everything (segment 1 still holds 251..289), one at 289
	// deletes segments 1 and 2.
	if err := w.Compact(250); err != nil || w.Segments() != 3 {
		t.Fatalf("compact 250: %v, %d segments", err, w.Segments())
	}
	if err := w.Compact(289); err != nil || w.Segments() != 1 {
		t.Fatalf("compact 289: %v, %d segments", err, w.Segments())
	}
	if p, ok, err := w.Read(292); err != nil || !ok || !reflect.DeepEqual(p, reprepared(292)) {
		t.Fatalf("read 292: %v %v", ok, err)
	}
	w.Close()
	_, rec = openWAL(t, dir)
	check("reopen after compaction", rec, 290)
}

// TestWALTombstoneMarksRefused: an entry carrying the tombstone marks is
// never appended (it would read back as a truncation).
func TestWALTombstoneMarksRefused(t *testing.T) {
	w, _ := openWAL(t, t.TempDir())
	if err := w.Append(walTombstone(5, 0)); err == nil {
		t.Fatal("a tombstone-marked entry was appended")
	}
}

// TestWALCrashBetweenSteps: the files a crash can leave between the steps
// of a rollover, a compaction or the migration all open to the journal
// the last completed step made.
func TestWALCrashBetweenSteps(t *testing.T) {
	segs := segmentedWAL(t, t.TempDir(), 700)
	// Compaction deletes oldest first, one directory fsync each: a crash
	// leaves a suffix of the log (segment 1 gone, 2 and 3 kept).
	dir := writeSegments(t, [][]byte{nil, segs[1], segs[2]})
	_, rec := openWAL(t, dir)
	if !reflect.DeepEqual(opList(rec), seqOps(301, 700)) {
		t.Fatalf("after a compaction cut short: %d entries", len(rec))
	}
	// A rollover (or a compaction of everything) created the next segment
	// and crashed before writing it (or before deleting the old ones).
	dir = writeSegments(t, [][]byte{segs[0], segs[1], segs[2], {}})
	w, rec := openWAL(t, dir)
	if len(rec) != 700 {
		t.Fatalf("with an empty segment 4: %d entries", len(rec))
	}
	if err := w.Append(prep(701, "x")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, _ := os.Stat(segPath(dir, 4)); st == nil || st.Size() == 0 {
		t.Fatal("the append did not go to the empty segment 4")
	}
	// The single-file WAL's rewrite temp, left beside segments.
	os.WriteFile(filepath.Join(dir, walFileName+".tmp"), []byte("half"), 0o644)
	_, rec = openWAL(t, dir)
	if len(rec) != 701 {
		t.Fatalf("with a stale journal.wal.tmp: %d entries", len(rec))
	}
	// Compaction of everything: a fresh segment, the old ones deleted.
	w, _ = openWAL(t, dir)
	if err := w.Compact(701); err != nil || w.Segments() != 1 || w.Size() != 0 {
		t.Fatalf("compact everything: %v, %d segments, %d bytes", err, w.Segments(), w.Size())
	}
	if err := w.Append(prep(702, "y")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, rec = openWAL(t, dir)
	if !reflect.DeepEqual(opList(rec), []uint64{702}) {
		t.Fatalf("after compacting everything: %v", opList(rec))
	}
}

// TestWALSegmentBounds: a segment is sealed at walSegmentRecordsMax
// records or walSegmentBytesMax bytes, and one append is never split.
func TestWALSegmentBounds(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	appendRange(t, w, 1, walSegmentRecordsMax, 8, 1)
	if w.Segments() != 1 {
		t.Fatalf("%d records made %d segments", walSegmentRecordsMax, w.Segments())
	}
	appendRange(t, w, walSegmentRecordsMax+1, walSegmentRecordsMax+1, 8, 1)
	if w.Segments() != 2 {
		t.Fatalf("record %d did not start segment 2", walSegmentRecordsMax+1)
	}
	big := bodyOf(1, walSegmentBytesMax/3)
	if err := w.Append(prep(1000, big), prep(1001, big), prep(1002, big), prep(1003, big)); err != nil {
		t.Fatal(err)
	}
	if w.Segments() != 2 {
		t.Fatal("an append was split over segments")
	}
	if err := w.Append(prep(1004, "small")); err != nil || w.Segments() != 3 {
		t.Fatalf("an append after %d bytes: %v, %d segments", walSegmentBytesMax, err, w.Segments())
	}
}
