package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func prep(op uint64, body string) consensus.Prepare {
	p := consensus.Prepare{Header: consensus.PrepareHeader{
		View: 2, Op: op, Commit: op - 1, Timestamp: op * 1000, Parent: op*7 + 1, Checksum: op*7 + 8,
		Client: consensus.Uint128{Lo: op, Hi: 9}, Session: 3, Request: op, ReqSum: 11,
		Operation: 128, UserID: 5,
	}}
	if body != "" {
		p.Body = []byte(body)
	}
	return p
}

func prepares(from, to uint64) []consensus.Prepare {
	var out []consensus.Prepare
	for op := from; op <= to; op++ {
		out = append(out, prep(op, fmt.Sprintf("body-of-op-%d", op)))
	}
	return out
}

// segPath is the path of WAL segment seq in dir (a fresh WAL starts at 1).
func segPath(dir string, seq uint64) string { return filepath.Join(dir, walSegmentName(seq)) }

// recordStarts lists the byte positions of the records in a segment's
// bytes, by their framing.
func recordStarts(t *testing.T, data []byte) []int64 {
	t.Helper()
	var starts []int64
	for off := 0; off+walHeaderBytes <= len(data); off += walHeaderBytes + int(binary.LittleEndian.Uint32(data[off+4:])) {
		starts = append(starts, int64(off))
	}
	return starts
}

func openWAL(t *testing.T, dir string) (*WAL, []consensus.Prepare) {
	t.Helper()
	w, rec, err := OpenWAL(dir)
	if err != nil {
		t.Fatalf("open WAL: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, rec
}

func TestWALRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, rec := openWAL(t, dir)
	if len(rec) != 0 {
		t.Fatalf("fresh WAL recovered %d entries", len(rec))
	}
	want := prepares(1, 5)
	want = append(want, prep(6, "")) // empty body
	if err := w.Append(want[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(want[2:]...); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := w.Read(3); err != nil || !ok || !reflect.DeepEqual(p, want[2]) {
		t.Fatalf("read op 3: %+v %v %v", p, ok, err)
	}
	if _, ok, _ := w.Read(9); ok {
		t.Fatal("read of absent op succeeded")
	}
	w.Close()
	_, rec = openWAL(t, dir)
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("recovered %+v\nwant %+v", rec, want)
	}
}

// TestWALTornTailEveryOffset cuts the file at every byte offset inside the
// last entry: open must truncate to the previous entry and keep the rest.
func TestWALTornTailEveryOffset(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 3)...); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(segPath(src, 1))
	if err != nil {
		t.Fatal(err)
	}
	lastStart := recordStarts(t, full)[2]
	for cut := lastStart; cut < int64(len(full)); cut++ {
		dir := t.TempDir()
		path := segPath(dir, 1)
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		w2, rec, err := OpenWAL(dir)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(rec) != 2 || rec[1].Header.Op != 2 {
			t.Fatalf("cut at %d: recovered %d entries", cut, len(rec))
		}
		if st, _ := os.Stat(path); st.Size() != lastStart {
			t.Fatalf("cut at %d: file is %d bytes, want %d", cut, st.Size(), lastStart)
		}
		// The WAL keeps working after the repair.
		if err := w2.Append(prep(3, "rewritten")); err != nil {
			t.Fatalf("cut at %d: append after repair: %v", cut, err)
		}
		w2.Close()
	}
}

func TestWALGarbageTailTruncated(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	if err := w.Append(prepares(1, 2)...); err != nil {
		t.Fatal(err)
	}
	size := w.Size()
	w.Close()
	f, _ := os.OpenFile(segPath(dir, 1), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("LWAL\xff\xff\xff\xffgarbage that is not an entry"))
	f.Close()
	w2, rec := openWAL(t, dir)
	if len(rec) != 2 || w2.Size() != size {
		t.Fatalf("recovered %d entries, size %d (want 2, %d)", len(rec), w2.Size(), size)
	}
}

// TestWALInteriorCorruptionRefuses flips each byte of the first entry in
// turn: a valid entry follows, so open must refuse (and leave the file).
func TestWALInteriorCorruptionRefuses(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 3)...); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(segPath(src, 1))
	firstSize := recordStarts(t, full)[1]
	for i := int64(0); i < firstSize; i++ {
		dir := t.TempDir()
		bad := append([]byte(nil), full...)
		bad[i] ^= 0x01
		path := segPath(dir, 1)
		os.WriteFile(path, bad, 0o644)
		_, _, err := OpenWAL(dir)
		if err == nil || !strings.Contains(err.Error(), "interior corruption") {
			t.Fatalf("flip at byte %d: err %v, want interior corruption", i, err)
		}
		if st, _ := os.Stat(path); st.Size() != int64(len(full)) {
			t.Fatalf("flip at byte %d: refused open modified the file", i)
		}
	}
}

// TestWALDamagedLastEntriesAreCorruptionNotATornTail (issue 15 point 5): every
// appended record was fdatasynced before Append returned, so a whole last
// record (or two) that fails verification is corruption: the open refuses,
// naming the file, byte and op, and leaves the file as it is. Only an
// incomplete record (or a zero-filled tail) is a torn append, cut and reported.
func TestWALDamagedLastEntriesAreCorruptionNotATornTail(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 3)...); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(segPath(src, 1))
	starts := recordStarts(t, full)
	second, last := walEntryLoc{offset: starts[1]}, walEntryLoc{offset: starts[2]}
	lengthField := func(i int64, rec walEntryLoc) bool { return i >= rec.offset+4 && i < rec.offset+8 }
	for _, tc := range []struct {
		name  string
		flips []int64
	}{
		{"last entry's payload", []int64{int64(len(full)) - 1}},
		{"last entry's checksum", []int64{last.offset + 17}},
		{"last entry's magic", []int64{last.offset}},
		{"last two entries", []int64{second.offset + 40, last.offset + 40}},
	} {
		dir := t.TempDir()
		bad := append([]byte(nil), full...)
		for _, i := range tc.flips {
			if lengthField(i, last) {
				t.Fatal("test flips a length field")
			}
			bad[i] ^= 0x01
		}
		path := segPath(dir, 1)
		os.WriteFile(path, bad, 0o644)
		_, _, err := OpenWAL(dir)
		if !errors.Is(err, ErrWALCorrupt) || !strings.Contains(err.Error(), walSegmentName(1)) || !strings.Contains(err.Error(), "byte") {
			t.Fatalf("%s: open: %v, want corruption naming the file and byte", tc.name, err)
		}
		if st, _ := os.Stat(path); st.Size() != int64(len(full)) {
			t.Fatalf("%s: the refused open changed the file", tc.name)
		}
	}
	// A zero-filled tail (a torn append's unwritten page) is cut and reported.
	dir := t.TempDir()
	os.WriteFile(segPath(dir, 1), append(append([]byte(nil), full...), make([]byte, 4096)...), 0o644)
	w2, rec := openWAL(t, dir)
	if at, n := w2.TornTail(); len(rec) != 3 || at != int64(len(full)) || n != 4096 {
		t.Fatalf("zero-filled tail: %d entries, torn tail at %d (%d bytes)", len(rec), at, n)
	}
}

func TestWALTruncateAndCompact(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	if err := w.Append(prepares(1, 10)...); err != nil {
		t.Fatal(err)
	}
	if err := w.TruncateFrom(8); err != nil {
		t.Fatal(err)
	}
	if _, last, _ := w.Ops(); last != 7 {
		t.Fatalf("last op after truncate %d", last)
	}
	if err := w.Append(prep(8, "divergent-replacement")); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(4); err != nil {
		t.Fatal(err)
	}
	if first, last, ok := w.Ops(); !ok || first != 5 || last != 8 {
		t.Fatalf("ops after compact %d..%d %v", first, last, ok)
	}
	if p, ok, err := w.Read(6); err != nil || !ok || string(p.Body) != "body-of-op-6" {
		t.Fatalf("read after compact: %v %v %v", p, ok, err)
	}
	if err := w.Append(prep(9, "after-compact")); err != nil {
		t.Fatal(err)
	}
	if err := w.Compact(2); err != nil { // nothing at or below 2 left: no-op
		t.Fatal(err)
	}
	w.Close()
	// Compaction deletes whole segments only: ops 1..4 share the one
	// segment with the rest, so they come back at the open (the node drops
	// entries below its snapshot op); everything from 5 on is as left.
	_, rec := openWAL(t, dir)
	var ops []uint64
	for _, p := range rec {
		ops = append(ops, p.Header.Op)
	}
	if !reflect.DeepEqual(ops, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}) || string(rec[7].Body) != "divergent-replacement" {
		t.Fatalf("recovered ops %v", ops)
	}
	// Compacting everything leaves an empty, usable WAL.
	w3, _ := openWAL(t, t.TempDir())
	w3.Append(prepares(1, 3)...)
	if err := w3.Compact(3); err != nil || w3.Size() != 0 {
		t.Fatalf("full compact: %v size %d", err, w3.Size())
	}
	if err := w3.Append(prep(4, "x")); err != nil {
		t.Fatal(err)
	}
}

// TestWALStaleCompactTemp: a crash during a rewrite of the single-file WAL
// of earlier releases left journal.wal.tmp; the original is intact and the
// temp is discarded at open.
func TestWALStaleCompactTemp(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	w.Append(prepares(1, 3)...)
	w.Close()
	os.WriteFile(filepath.Join(dir, walFileName+".tmp"), []byte("half-written"), 0o644)
	_, rec := openWAL(t, dir)
	if len(rec) != 3 {
		t.Fatalf("recovered %d", len(rec))
	}
	if _, err := os.Stat(filepath.Join(dir, walFileName+".tmp")); !os.IsNotExist(err) {
		t.Fatal("stale temp not removed")
	}
}

func TestWALEntryBound(t *testing.T) {
	w, _ := openWAL(t, t.TempDir())
	big := consensus.Prepare{Header: consensus.PrepareHeader{Op: 1}, Body: make([]byte, WALEntryBytesMax)}
	if err := w.Append(big); err == nil {
		t.Fatal("oversized entry accepted")
	}
}

// TestWALOutOfOrderAndSupersede: journal repair may write a lower op after
// higher ones, and a later record for an op replaces the earlier one.
func TestWALOutOfOrderAndSupersede(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	if err := w.Append(prep(1, "one"), prep(2, "two"), prep(5, "five")); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(prep(4, "four"), prep(3, "three"), prep(2, "two-v2")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, rec := openWAL(t, dir)
	var got []string
	for _, p := range rec {
		got = append(got, fmt.Sprintf("%d:%s", p.Header.Op, p.Body))
	}
	want := []string{"1:one", "2:two-v2", "3:three", "4:four", "5:five"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
	// Truncating from 4 is not a file tail here (3 and 2 were written after
	// 5): the tombstone removes 4 and 5 and keeps 3 and 2.
	if err := w.TruncateFrom(4); err != nil {
		t.Fatal(err)
	}
	if first, last, _ := w.Ops(); first != 1 || last != 3 {
		t.Fatalf("ops after truncate %d..%d", first, last)
	}
	if p, ok, _ := w.Read(2); !ok || string(p.Body) != "two-v2" {
		t.Fatalf("op 2 after rewrite: %q %v", p.Body, ok)
	}
	w.Append(prep(4, "four-new"))
	w.Close()
	_, rec = openWAL(t, dir)
	if len(rec) != 4 || string(rec[3].Body) != "four-new" || string(rec[1].Body) != "two-v2" {
		t.Fatalf("after truncate+append: %+v", rec)
	}
}

// TestWALTornAppendWhoseHeaderSectorWasLost: a power loss during the last
// append kept a later sector of its record and lost the first one, header
// included (pages reach the disk in any order). The zeros then the bytes
// are a hole, not a complete record damaged after its sync: the open cuts
// them as a torn tail (it refused the boot, and a cluster replica set its
// WAL aside, metadata simulator finding M21).
func TestWALTornAppendWhoseHeaderSectorWasLost(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(prep(3, strings.Repeat("x", 1500))); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(segPath(src, 1))
	last := recordStarts(t, full)[2]
	holeEnd := (last/512 + 1) * 512 // the sector holding the header
	if holeEnd-last < walHeaderBytes {
		holeEnd += 512
	}
	bad := append([]byte(nil), full...)
	clear(bad[last:holeEnd])
	dir := t.TempDir()
	if err := os.WriteFile(segPath(dir, 1), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	w2, rec, err := OpenWAL(dir)
	if err != nil {
		t.Fatalf("open after the torn append: %v", err)
	}
	defer w2.Close()
	if at, _ := w2.TornTail(); len(rec) != 2 || at != last {
		t.Fatalf("%d entries, torn tail at %d; want 2 and %d", len(rec), at, last)
	}
}

// TestWALWriteTornWithAHoleBeforeItsOwnRecords: the last append's first
// sector never reached the disk while its last record did (pages persist
// in any order until the fdatasync returns): the write is torn, cut at the
// hole, and the records before it stand. A bit flip there instead is
// damage (rot), and a hole before a record of a later write is damage to
// a synced write (metadata simulator finding M21).
func TestWALWriteTornWithAHoleBeforeItsOwnRecords(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 2)...); err != nil {
		t.Fatal(err)
	}
	synced, _ := os.ReadFile(segPath(src, 1))
	if err := w.Append(prep(3, strings.Repeat("a", 600)), prep(4, strings.Repeat("b", 600)), prep(5, "c")); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(segPath(src, 1))
	at := int64(len(synced))
	holeEnd := (at/tornHoleSectorBytes + 2) * tornHoleSectorBytes // ends inside op 4's record, before op 5's
	open := func(b []byte) ([]consensus.Prepare, error) {
		dir := t.TempDir()
		if err := os.WriteFile(segPath(dir, 1), b, 0o644); err != nil {
			t.Fatal(err)
		}
		w, rec, err := OpenWAL(dir)
		if err == nil {
			w.Close()
		}
		return rec, err
	}
	holed := append([]byte(nil), full...)
	clear(holed[at:holeEnd])
	if rec, err := open(holed); err != nil || len(rec) != 2 {
		t.Fatalf("the last write torn with a hole: %d entries, err %v; want the 2 synced ones", len(rec), err)
	}
	flipped := append([]byte(nil), full...)
	flipped[at+40] ^= 1
	if _, err := open(flipped); !errors.Is(err, ErrWALCorrupt) {
		t.Fatalf("a bit flipped in the last write before its own valid records: %v, want ErrWALCorrupt", err)
	}
	// The same hole in the first write, with the second write after it.
	early := append([]byte(nil), full...)
	clear(early[:tornHoleSectorBytes/2])
	if _, err := open(early); !errors.Is(err, ErrWALCorrupt) {
		t.Fatalf("a hole in a write a later one follows: %v, want ErrWALCorrupt", err)
	}
}

// TestWALLastRecordWithALostMiddleSectorIsTorn: the last append's record
// spans four sectors; its first and last reached the disk, a middle one
// did not (zeros). Whole by its framing, it is still a torn write, cut; a
// bit flip in the same place is damage to a synced record (M21).
func TestWALLastRecordWithALostMiddleSectorIsTorn(t *testing.T) {
	src := t.TempDir()
	w, _ := openWAL(t, src)
	if err := w.Append(prepares(1, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(prep(3, strings.Repeat("m", 1800))); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(segPath(src, 1))
	last := recordStarts(t, full)[2]
	middle := (last/tornHoleSectorBytes + 1) * tornHoleSectorBytes
	open := func(b []byte) ([]consensus.Prepare, error) {
		dir := t.TempDir()
		os.WriteFile(segPath(dir, 1), b, 0o644)
		w, rec, err := OpenWAL(dir)
		if err == nil {
			w.Close()
		}
		return rec, err
	}
	holed := append([]byte(nil), full...)
	clear(holed[middle : middle+tornHoleSectorBytes])
	if rec, err := open(holed); err != nil || len(rec) != 2 {
		t.Fatalf("a middle sector lost: %d entries, err %v; want the 2 synced ones", len(rec), err)
	}
	flipped := append([]byte(nil), full...)
	flipped[middle+10] ^= 1
	if _, err := open(flipped); !errors.Is(err, ErrWALCorrupt) {
		t.Fatalf("a bit flipped in the last record: %v, want ErrWALCorrupt", err)
	}
}

// TestWALReadsTheFirstFormatAndAppendsAfterIt: a segment written by an
// earlier release (magic "LWAL", no batch_back) opens, new records follow
// it, and both read back; damage in a first-format record before a later
// valid one is refused (each such record is a write of its own).
func TestWALReadsTheFirstFormatAndAppendsAfterIt(t *testing.T) {
	dir := t.TempDir()
	var old []byte
	for _, p := range prepares(1, 3) {
		old = append(old, firstWALFormat(appendEntry(nil, &p))...)
	}
	if err := os.WriteFile(segPath(dir, 1), old, 0o644); err != nil {
		t.Fatal(err)
	}
	w, rec := openWAL(t, dir)
	if len(rec) != 3 {
		t.Fatalf("%d entries from the first format, want 3", len(rec))
	}
	if err := w.Append(prepares(4, 5)...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, rec := openWAL(t, dir); len(rec) != 5 {
		t.Fatalf("%d entries after appending, want 5", len(rec))
	}
	b, _ := os.ReadFile(segPath(dir, 1))
	clear(b[:walHeaderBytes]) // the first record's header, a first-format write of its own
	os.WriteFile(segPath(dir, 1), b, 0o644)
	if _, _, err := OpenWAL(dir); !errors.Is(err, ErrWALCorrupt) {
		t.Fatalf("damage in a first-format record before valid ones: %v, want ErrWALCorrupt", err)
	}
}
