package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// when the process dies at each step of the rewrite (temp file created,
// partly written, fully written and fsynced, renamed) and reopens: the WAL
// is always exactly the journal before the call or after it, never the
// truncated journal without the re-appended entries.
func TestWALTruncateAndAppendCrashAtEachStep(t *testing.T) {
	oldDir := t.TempDir()
	w := divergentWAL(t, oldDir)
	w.Close()
	oldBytes, err := os.ReadFile(filepath.Join(oldDir, walFileName))
	if err != nil {
		t.Fatal(err)
	}
	_, before := openWAL(t, oldDir)

	newDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(newDir, walFileName), oldBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	wn, _ := openWAL(t, newDir)
	if err := wn.TruncateAndAppend(4, []consensus.Prepare{reprepared(4), reprepared(5)}); err != nil {
		t.Fatal(err)
	}
	wn.Close()
	newBytes, err := os.ReadFile(filepath.Join(newDir, walFileName))
	if err != nil {
		t.Fatal(err)
	}
	_, after := openWAL(t, newDir)
	if reflect.DeepEqual(opsOf(before), opsOf(after)) {
		t.Fatal("test setup: the call changed nothing")
	}

	type crashState struct {
		name       string
		wal, tmp   []byte // journal.wal and journal.wal.tmp contents
		tmpPresent bool
		wantAfter  bool // the journal after the call (else before it)
	}
	states := []crashState{{name: "before the temp file", wal: oldBytes}}
	for _, n := range []int{0, 1, walHeaderBytes - 1, walHeaderBytes, len(newBytes) / 2, len(newBytes) - 1, len(newBytes)} {
		states = append(states, crashState{name: fmt.Sprintf("temp file holds %d of %d bytes", n, len(newBytes)),
			wal: oldBytes, tmp: newBytes[:n], tmpPresent: true})
	}
	states = append(states, crashState{name: "after the rename", wal: newBytes, wantAfter: true})
	for _, st := range states {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, walFileName), st.wal, 0o644); err != nil {
			t.Fatal(err)
		}
		if st.tmpPresent {
			if err := os.WriteFile(filepath.Join(dir, walFileName+".tmp"), st.tmp, 0o644); err != nil {
				t.Fatal(err)
			}
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
// (the temp file cannot be created): the call fails, the WAL refuses
// further writes until reopened, and the file still holds the old journal.
func TestWALTruncateAndAppendFailureKeepsOldJournal(t *testing.T) {
	dir := t.TempDir()
	w := divergentWAL(t, dir)
	w.Close()
	_, before := openWAL(t, dir)
	w, _ = openWAL(t, dir)
	obstacle := filepath.Join(dir, walFileName+".tmp")
	if err := os.MkdirAll(filepath.Join(obstacle, "occupied"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.TruncateAndAppend(4, []consensus.Prepare{reprepared(4)}); err == nil {
		t.Fatal("truncate-and-append succeeded without a temp file")
	}
	if err := w.Append(reprepared(7)); !errors.Is(err, ErrWALPoisoned) {
		t.Fatalf("append after a failed rewrite: %v, want ErrWALPoisoned", err)
	}
	w.Close()
	if err := os.RemoveAll(obstacle); err != nil {
		t.Fatal(err)
	}
	_, rec := openWAL(t, dir)
	if !reflect.DeepEqual(rec, before) {
		t.Fatalf("after the failed rewrite recovered %v\nwant %v", opsOf(rec), opsOf(before))
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
