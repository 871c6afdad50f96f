package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func plPrep(op uint64, view uint32, size int) consensus.Prepare {
	body := bytes.Repeat([]byte{byte(op)}, size)
	copy(body, fmt.Sprintf("op-%d-view-%d", op, view))
	return consensus.Prepare{Header: consensus.PrepareHeader{View: view, Op: op, Commit: op - 1, Timestamp: op * 1000,
		Checksum: op*31 + uint64(view), Operation: 130}, Body: body}
}

func plRange(from, to uint64, view uint32, size int) []consensus.Prepare {
	var out []consensus.Prepare
	for op := from; op <= to; op++ {
		out = append(out, plPrep(op, view, size))
	}
	return out
}

func openPL(t *testing.T, dir string, from uint64) (*PrepareLog, []consensus.Prepare) {
	t.Helper()
	l, entries, err := OpenPrepareLog(dir, from)
	if err != nil {
		t.Fatalf("open prepare log: %v", err)
	}
	return l, entries
}

func wantOps(t *testing.T, got []consensus.Prepare, want map[uint64]uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("recovered %d entries, want %d", len(got), len(want))
	}
	for i, p := range got {
		v, ok := want[p.Header.Op]
		if !ok || v != p.Header.View {
			t.Fatalf("entry %d: op %d view %d, want view %d (present %v)", i, p.Header.Op, p.Header.View, v, ok)
		}
		if i > 0 && got[i-1].Header.Op >= p.Header.Op {
			t.Fatalf("entries out of op order at %d", i)
		}
		if !bytes.Equal(p.Body, plPrep(p.Header.Op, p.Header.View, len(p.Body)).Body) {
			t.Fatalf("op %d: body differs", p.Header.Op)
		}
	}
}

func TestPrepareLogTruncateReappendReopen(t *testing.T) {
	dir := t.TempDir()
	l, got := openPL(t, dir, 0)
	if len(got) != 0 {
		t.Fatalf("fresh log recovered %d entries", len(got))
	}
	if err := l.Write(0, plRange(1, 10, 1, 100)); err != nil {
		t.Fatal(err)
	}
	// A view change cuts the uncommitted suffix from op 7 and re-appends.
	if err := l.Write(7, plRange(7, 8, 2, 100)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, got = openPL(t, dir, 0)
	want := map[uint64]uint32{}
	for op := uint64(1); op <= 6; op++ {
		want[op] = 1
	}
	want[7], want[8] = 2, 2
	wantOps(t, got, want)
	// fromOp filters what a checkpoint covers.
	_, got = openPL(t, dir, 5)
	delete(want, 1)
	delete(want, 2)
	delete(want, 3)
	delete(want, 4)
	wantOps(t, got, want)
}

func TestPrepareLogReclaimDeletesOnlyCoveredFiles(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	size := prepareLogRotateBytes / 4
	if err := l.Write(0, plRange(1, 5, 1, size)); err != nil { // > rotate size
		t.Fatal(err)
	}
	if err := l.Reclaim(0); err != nil { // rotates only
		t.Fatal(err)
	}
	if err := l.Write(0, plRange(6, 8, 1, 100)); err != nil {
		t.Fatal(err)
	}
	if n := countPWAL(t, dir); n != 2 {
		t.Fatalf("%d files after rotation, want 2", n)
	}
	// Checkpoint at op 5: the first file's ops are all <= 5 but op 5 is
	// the anchor, so it stays.
	if err := l.Reclaim(5); err != nil {
		t.Fatal(err)
	}
	if n := countPWAL(t, dir); n != 2 {
		t.Fatalf("%d files after a reclaim that must keep the anchor, want 2", n)
	}
	if err := l.Reclaim(6); err != nil {
		t.Fatal(err)
	}
	if n := countPWAL(t, dir); n != 1 {
		t.Fatalf("%d files after reclaim at 6, want 1", n)
	}
	if l.Bytes() > prepareLogRotateBytes {
		t.Fatalf("log still holds %d bytes", l.Bytes())
	}
	l.Close()
	_, got := openPL(t, dir, 6)
	wantOps(t, got, map[uint64]uint32{6: 1, 7: 1, 8: 1})
	// Everything covered: the last file is retired too and writes go on in a new one.
	l, _ = openPL(t, dir, 0)
	if err := l.Reclaim(9); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(0, plRange(9, 9, 1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := l.Reclaim(9); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if n := countPWAL(t, dir); n != 1 {
		t.Fatalf("%d files, want 1", n)
	}
	_, got = openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{9: 1})
}

func countPWAL(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+prepareLogSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func lastPWAL(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+prepareLogSuffix))
	if len(m) == 0 {
		t.Fatal("no prepare WAL file")
	}
	return m[len(m)-1]
}

func TestPrepareLogTornTailIsCutAndAppendsContinue(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	if err := l.Write(0, plRange(1, 3, 1, 200)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := lastPWAL(t, dir)
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-50); err != nil { // op 3 torn
		t.Fatal(err)
	}
	l, got := openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{1: 1, 2: 1})
	if err := l.Write(0, plRange(3, 4, 2, 200)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, got = openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{1: 1, 2: 1, 3: 2, 4: 2})
}

func TestPrepareLogInteriorDamageIsReported(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	if err := l.Write(0, plRange(1, 3, 1, 200)); err != nil {
		t.Fatal(err)
	}
	if err := l.Reclaim(0); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := lastPWAL(t, dir)
	data, _ := os.ReadFile(path)
	data[walHeaderBytes+40] ^= 0xff // inside op 1's payload; ops 2, 3 follow
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := OpenPrepareLog(dir, 0)
	if !errors.Is(err, ErrPrepareLogDamaged) {
		t.Fatalf("open after interior damage: %v, want ErrPrepareLogDamaged", err)
	}
}

func TestPrepareLogSyncedWritesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	for op := uint64(1); op <= 50; op++ {
		if err := l.Write(0, []consensus.Prepare{plPrep(op, 1, 64<<10)}); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if op%16 == 0 {
			if err := l.Reclaim(op); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.Close()
	_, got := openPL(t, dir, 48)
	wantOps(t, got, map[uint64]uint32{48: 1, 49: 1, 50: 1})
	if n := countPWAL(t, dir); n > 3 {
		t.Fatalf("%d files retained after reclaims", n)
	}
}

// TestPrepareLogRecordsMatchTheMetadataWALFormat: the head-plus-body
// records Write produces are byte for byte appendEntry's in the first
// format (magic "LWAL", no batch_back).
func TestPrepareLogRecordsMatchTheMetadataWALFormat(t *testing.T) {
	for _, size := range []int{0, 1, 100, 70 << 10} {
		p := plPrep(uint64(size)+3, 4, size)
		if size == 0 {
			p.Body = nil
		}
		want := firstWALFormat(appendEntry(nil, &p))
		got := append(appendEntryHead(nil, &p), p.Body...)
		if !bytes.Equal(got, want) {
			t.Fatalf("body of %d bytes: the record differs from appendEntry's", size)
		}
	}
}

func BenchmarkPrepareLogWrite(b *testing.B) {
	l, _, err := OpenPrepareLog(b.TempDir(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	entries := plRange(1, 4, 1, 1<<20)
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range entries {
			entries[j].Header.Op = uint64(i*4 + j + 1)
		}
		if err := l.Write(0, entries); err != nil {
			b.Fatal(err)
		}
		if i%8 == 7 {
			if err := l.Reclaim(uint64(i*4 + 4)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzOpenPrepareLog: any last-file content opens (a torn tail cut) or is
// reported damaged, never panics; what opens yields verified entries in op
// order, and opening again after a write keeps them (the cut is stable).
func FuzzOpenPrepareLog(f *testing.F) {
	var valid []byte
	for _, p := range plRange(1, 3, 1, 40) {
		valid = appendEntry(valid, &p)
	}
	legacy := append(append([]byte(nil), valid...), legacyTruncRecord(3)...)
	f.Add(legacy)
	valid = appendTruncRecord(valid, 2, plRange(2, 2, 1, 40))
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	flipped := append([]byte(nil), valid...)
	flipped[30] ^= 1
	f.Add(flipped)
	f.Add(append(append([]byte(nil), valid...), make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d%s", 1, prepareLogSuffix)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, entries, err := OpenPrepareLog(dir, 0)
		if err != nil {
			if !errors.Is(err, ErrPrepareLogDamaged) {
				t.Fatalf("open: %v (want ok or ErrPrepareLogDamaged)", err)
			}
			l.Close()
			return
		}
		for i := range entries {
			if i > 0 && entries[i-1].Header.Op >= entries[i].Header.Op {
				t.Fatal("entries out of op order")
			}
		}
		next := plPrep(1000, 9, 10)
		if err := l.Write(0, []consensus.Prepare{next}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		_, again, err := OpenPrepareLog(dir, 0)
		if err != nil {
			t.Fatalf("reopen after a write: %v", err)
		}
		if len(again) != len(entries)+1 || again[len(again)-1].Header.Op != 1000 {
			t.Fatalf("reopen: %d entries, want %d then op 1000", len(again), len(entries)+1)
		}
	})
}

// TestPrepareLogCloseReleasesTheFileAndWritesGoOn: an idle group closes
// its WAL; the next write reopens the last file and appends after it.
func TestPrepareLogCloseReleasesTheFileAndWritesGoOn(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	if err := l.Write(0, plRange(1, 2, 1, 50)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil || l.f != nil {
		t.Fatalf("close: %v (file still open: %v)", err, l.f != nil)
	}
	if err := l.Write(0, plRange(3, 4, 1, 50)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, got := openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{1: 1, 2: 1, 3: 1, 4: 1})
}

// TestCutPrepareLogAtDamage: a power-torn WAL (a damaged record in an
// earlier file, more records and a later file after it) is cut at the
// damage: the file is truncated there, later files go, and it opens with
// the entries before the damage and takes appends again. An intact WAL is
// left alone.
func TestCutPrepareLogAtDamage(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	if err := l.Write(0, plRange(1, 5, 1, prepareLogRotateBytes/4)); err != nil {
		t.Fatal(err)
	}
	if err := l.Reclaim(0); err != nil { // rotates
		t.Fatal(err)
	}
	if err := l.Write(0, plRange(6, 8, 1, 100)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if cut, _, _, err := CutPrepareLogAtDamage(dir, 0); err != nil || cut {
		t.Fatalf("an intact WAL: cut %v, err %v", cut, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+prepareLogSuffix))
	first := files[0]
	data, _ := os.ReadFile(first)
	recordBytes := len(data) / 5
	data[2*recordBytes+walHeaderBytes+40] ^= 0xff // inside op 3's payload
	if err := os.WriteFile(first, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenPrepareLog(dir, 0); !errors.Is(err, ErrPrepareLogDamaged) {
		t.Fatalf("open: %v, want ErrPrepareLogDamaged", err)
	}
	cut, file, at, err := CutPrepareLogAtDamage(dir, 0)
	if err != nil || !cut || file != first || at != int64(2*recordBytes) {
		t.Fatalf("cut %v at %s byte %d, err %v; want %s byte %d", cut, file, at, err, first, 2*recordBytes)
	}
	if n := countPWAL(t, dir); n != 1 {
		t.Fatalf("%d files after the cut, want 1 (the later one removed)", n)
	}
	l, got := openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{1: 1, 2: 1})
	if err := l.Write(0, plRange(3, 3, 2, 10)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, got = openPL(t, dir, 0)
	wantOps(t, got, map[uint64]uint32{1: 1, 2: 1, 3: 2})
}

// TestPrepareLogRewriteCopiesIntoAFreshFile: after a failed fsync the
// group's entries are written again into a new file (a truncation record
// and the copies, synced); a reopen reads them once, and appends go on.
func TestPrepareLogRewriteCopiesIntoAFreshFile(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	if err := l.Write(0, plRange(1, 6, 1, 100)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, entries := openPL(t, dir, 3)
	before, _ := filepath.Glob(filepath.Join(dir, "*"))
	if err := l.Rewrite(entries); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(after) != len(before)+1 {
		t.Fatalf("files before %v, after %v: want one fresh file", before, after)
	}
	if err := l.Write(0, plRange(7, 7, 1, 100)); err != nil { // appends go on after it
		t.Fatal(err)
	}
	l.Close()
	// Reading finds one copy of each op: the fresh one supersedes the old.
	_, got := openPL(t, dir, 3)
	wantOps(t, got, map[uint64]uint32{3: 1, 4: 1, 5: 1, 6: 1, 7: 1})
}

// firstWALFormat rewrites a record appendEntry made at the start of its
// write as the first format writes it: magic "LWAL", the payload without
// batch_back.
func firstWALFormat(rec []byte) []byte {
	le := binary.LittleEndian
	out := append([]byte(nil), rec[:len(rec)-4]...)
	le.PutUint32(out, walMagic)
	le.PutUint32(out[4:], uint32(len(out)-walHeaderBytes))
	le.PutUint64(out[16:], entryChecksum(out[:16], out[walHeaderBytes:]))
	return out
}
