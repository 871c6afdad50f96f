package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// reprepared is a different prepare for op (a new primary's version).
func reprepared(op uint64) consensus.Prepare {
	p := prep(op, fmt.Sprintf("re-prepared-op-%d", op))
	p.Header.View, p.Header.Checksum = 3, op*7+9000
	return p
}

// divergentWAL writes ops 1..6 with a superseded op 2 and the records out
// of op order, so the rewrite is exercised beyond a clean tail cut.
func divergentWAL(t *testing.T, dir string) *WAL {
	t.Helper()
	w, _ := openWAL(t, dir)
	for _, batch := range [][]consensus.Prepare{prepares(1, 4), {prep(6, "six")}, {prep(5, "five")}, {prep(2, "two-again")}} {
		if err := w.Append(batch...); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func opsOf(entries []consensus.Prepare) []string {
	var out []string
	for _, p := range entries {
		out = append(out, fmt.Sprintf("%d/v%d/%x", p.Header.Op, p.Header.View, p.Header.Checksum))
	}
	return out
}

func TestWALTruncateAndAppend(t *testing.T) {
	dir := t.TempDir()
	w := divergentWAL(t, dir)
	if err := w.TruncateAndAppend(4, []consensus.Prepare{reprepared(4), reprepared(5)}); err != nil {
		t.Fatal(err)
	}
	want := []consensus.Prepare{prep(1, "body-of-op-1"), prep(2, "two-again"), prep(3, "body-of-op-3"), reprepared(4), reprepared(5)}
	if p, ok, err := w.Read(4); err != nil || !ok || !reflect.DeepEqual(p, want[3]) {
		t.Fatalf("read op 4 after truncate-and-append: %+v %v %v", p, ok, err)
	}
	if _, ok, _ := w.Read(6); ok {
		t.Fatal("op 6 survived the truncation")
	}
	// Appends continue after the rewrite.
	if err := w.Append(reprepared(6)); err != nil {
		t.Fatal(err)
	}
	want = append(want, reprepared(6))
	w.Close()
	w2, rec := openWAL(t, dir)
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("recovered %v\nwant %v", opsOf(rec), opsOf(want))
	}
	// No entries: a plain truncation, atomic as well.
	if err := w2.TruncateAndAppend(3, nil); err != nil {
		t.Fatal(err)
	}
	if first, last, ok := w2.Ops(); !ok || first != 1 || last != 2 {
		t.Fatalf("after truncate from 3: ops %d..%d %v", first, last, ok)
	}
	if err := w2.TruncateAndAppend(0, nil); err == nil {
		t.Fatal("truncation from op 0 accepted")
	}
}

// TestWALTruncateAndAppendCrashAtEachStep recreates what the disk holds
// when the process dies while the tombstone group (tombstone + re-appended
// entries, one write) is being written: the segment holds the old bytes
// plus any prefix of the group, or the group followed by a zero-filled
// page. Every reopen gives exactly the journal before the call or after
// it, never the truncated journal without the re-appended entries.
func TestWALTruncateAndAppendCrashAtEachStep(t *testing.T) {
	oldDir := t.TempDir()
	w := divergentWAL(t, oldDir)
	w.Close()
	oldBytes, err := os.ReadFile(segPath(oldDir, 1))
	if err != nil {
		t.Fatal(err)
	}
	_, before := openWAL(t, oldDir)

	newDir := t.TempDir()
	if err := os.WriteFile(segPath(newDir, 1), oldBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	wn, _ := openWAL(t, newDir)
	if err := wn.TruncateAndAppend(4, []consensus.Prepare{reprepared(4), reprepared(5)}); err != nil {
		t.Fatal(err)
	}
	wn.Close()
	newBytes, err := os.ReadFile(segPath(newDir, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(newBytes[:len(oldBytes)], oldBytes) {
		t.Fatal("the truncation rewrote bytes already on disk")
	}
	_, after := openWAL(t, newDir)
	if reflect.DeepEqual(opsOf(before), opsOf(after)) {
		t.Fatal("test setup: the call changed nothing")
	}
	type crashState struct {
		name      string
		seg       []byte
		wantAfter bool
	}
	var states []crashState
	for n := len(oldBytes); n <= len(newBytes); n++ {
		states = append(states, crashState{fmt.Sprintf("segment holds %d of %d bytes", n, len(newBytes)), newBytes[:n], n == len(newBytes)})
	}
	for _, n := range []int{len(oldBytes), len(newBytes)} {
		// the file grew but the pages never reached the disk: zeros
		torn := append(append([]byte(nil), newBytes[:n]...), make([]byte, len(newBytes)-len(oldBytes)+512)...)
		states = append(states, crashState{fmt.Sprintf("%d bytes then zeros", n), torn, n == len(newBytes)})
	}
	// The group's entries reached the disk but the sector holding its
	// tombstone's start did not (the write's pages persist in any order
	// until its fdatasync returns): the write is torn, cut whole, never
	// half applied: the WAL is what it was before the call.
	holed := append([]byte(nil), newBytes...)
	hole := len(oldBytes) + int(tornHoleSectorBytes-int64(len(oldBytes))%tornHoleSectorBytes)
	clear(holed[len(oldBytes):hole])
	dir := t.TempDir()
	os.WriteFile(segPath(dir, 1), holed, 0o644)
	if _, got, err := OpenWAL(dir); err != nil || !reflect.DeepEqual(opsOf(got), opsOf(before)) {
		t.Fatalf("tombstone's sector lost, entries kept: open %v, ops %v, want the ops before the call %v", err, opsOf(got), opsOf(before))
	}
	// Its header's bytes damaged in place, not a lost sector: rot, or a
	// write the disk mangled; refused as corruption, never half applied.
	rotted := append([]byte(nil), newBytes...)
	copy(rotted[len(oldBytes):], make([]byte, walHeaderBytes))
	dir = t.TempDir()
	os.WriteFile(segPath(dir, 1), rotted, 0o644)
	if _, _, err := OpenWAL(dir); !errors.Is(err, ErrWALCorrupt) {
		t.Fatalf("tombstone's header damaged, entries kept: open %v, want ErrWALCorrupt", err)
	}
	for _, st := range states {
		dir := t.TempDir()
		if err := os.WriteFile(segPath(dir, 1), st.seg, 0o644); err != nil {
			t.Fatal(err)
		}
		w, rec, err := OpenWAL(dir)
		if err != nil {
			t.Fatalf("%s: reopen refused: %v", st.name, err)
		}
		w.Close()
		want := before
		if st.wantAfter {
			want = after
		}
		if !reflect.DeepEqual(rec, want) {
			t.Fatalf("%s: recovered %v\nwant %v", st.name, opsOf(rec), opsOf(want))
		}
	}
}

// TestWALTruncateAndAppendFailureKeepsOldJournal injects a real failure
// (the segment's file descriptor is gone, so the write fails and so does
// cutting it back): the call fails, the WAL refuses further writes until
// reopened, and the disk still holds the old journal.
func TestWALTruncateAndAppendFailureKeepsOldJournal(t *testing.T) {
	dir := t.TempDir()
	w := divergentWAL(t, dir)
	w.Close()
	_, before := openWAL(t, dir)
	w, _ = openWAL(t, dir)
	w.segs[len(w.segs)-1].f.Close()
	if err := w.TruncateAndAppend(4, []consensus.Prepare{reprepared(4)}); err == nil {
		t.Fatal("truncate-and-append succeeded on a closed file")
	}
	if err := w.Append(reprepared(7)); !errors.Is(err, ErrWALPoisoned) {
		t.Fatalf("append after a failed write: %v, want ErrWALPoisoned", err)
	}
	_, rec := openWAL(t, dir)
	if !reflect.DeepEqual(rec, before) {
		t.Fatalf("after the failed write recovered %v\nwant %v", opsOf(rec), opsOf(before))
	}
}

// BenchmarkWALTruncateAndAppend: a view change's step on a full
// checkpoint window (1024 ops of ~200 bytes): drop the last 8 ops and
// re-append 8, one rewrite (write, fsync, rename, dir fsync) per call.
func BenchmarkWALTruncateAndAppend(b *testing.B) {
	w, _, err := OpenWAL(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	body := make([]byte, 200)
	window := make([]consensus.Prepare, 1024)
	for i := range window {
		window[i] = consensus.Prepare{Header: consensus.PrepareHeader{Op: uint64(i + 1)}, Body: body}
	}
	if err := w.Append(window...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.TruncateAndAppend(1017, window[1016:]); err != nil {
			b.Fatal(err)
		}
	}
}
