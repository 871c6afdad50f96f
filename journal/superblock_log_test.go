package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

var sbLogID = Identity{Cluster: consensus.Uint128{Lo: 7, Hi: 9}, ReplicaID: 1, ReplicaCount: 3}

func sbKey(i int) SuperblockKey {
	var k SuperblockKey
	k[0], k[1] = byte(i), byte(i>>8)
	return k
}

func sbEntry(i int, seq uint64, view uint32) SuperblockLogEntry {
	st := SuperblockState{Identity: sbLogID, VsrState: consensus.VsrState{View: view, LogView: view, CommitMax: uint64(view) * 3}, OffsetFrontier: uint64(i)}
	return SuperblockLogEntry{Key: sbKey(i), Sequence: seq, State: st}
}

func mustLatest(t *testing.T, l *SuperblockLog, i int) (uint64, uint32) {
	t.Helper()
	seq, st, ok, err := l.Latest(sbKey(i))
	if err != nil || !ok {
		t.Fatalf("key %d: ok %v err %v", i, ok, err)
	}
	if st.OffsetFrontier != uint64(i) {
		t.Fatalf("key %d: frontier %d", i, st.OffsetFrontier)
	}
	return seq, st.View
}

// TestSuperblockLogKeepsTheNewestRecordPerKey: batches of many keys, one
// sync each; a reopen returns every key's newest record.
func TestSuperblockLogKeepsTheNewestRecordPerKey(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := uint32(1); round <= 3; round++ {
		var batch []SuperblockLogEntry
		for i := 0; i < 100; i++ {
			batch = append(batch, sbEntry(i, uint64(round), round))
		}
		if err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	// An older sequence appended later does not win.
	if err := l.Append([]SuperblockLogEntry{sbEntry(5, 2, 99)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 100; i++ {
		if seq, view := mustLatest(t, l, i); seq != 3 || view != 3 {
			t.Fatalf("key %d: seq %d view %d, want 3 3", i, seq, view)
		}
	}
	if _, _, ok, _ := l.Latest(sbKey(1000)); ok {
		t.Fatal("a key never written has a record")
	}
}

// TestSuperblockLogCutsATornTailAndRefusesDamageBeforeValidRecords.
func TestSuperblockLogCutsATornTailAndRefusesDamageBeforeValidRecords(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 1, 1), sbEntry(2, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 2, 2), sbEntry(2, 2, 2)}); err != nil {
		t.Fatal(err)
	}
	size := l.Size()
	l.Close()
	path := filepath.Join(dir, superblockLogName)
	// A batch torn in its second record: the first record of the batch
	// stands, the torn one is cut.
	if err := os.Truncate(path, size-20); err != nil {
		t.Fatal(err)
	}
	l, err = OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatalf("a torn tail refused the open: %v", err)
	}
	if seq, _ := mustLatest(t, l, 1); seq != 2 {
		t.Fatalf("key 1 at seq %d, want 2", seq)
	}
	if seq, _ := mustLatest(t, l, 2); seq != 1 {
		t.Fatalf("key 2 at seq %d, want 1 (its seq-2 record was torn)", seq)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(2, 3, 3)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// Damage in the first batch (synced) with valid records after it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[synced/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSuperblockLog(dir, sbLogID, 0, nil); !errors.Is(err, ErrSuperblockLogDamaged) {
		t.Fatalf("damage before valid records: %v, want ErrSuperblockLogDamaged", err)
	}
}

// TestSuperblockLogCompactsToTheLiveNewestRecords: past its bound the log
// is rewritten with each live key's newest record; dead keys are dropped.
func TestSuperblockLogCompactsToTheLiveNewestRecords(t *testing.T) {
	dir := t.TempDir()
	live := func(k SuperblockKey) bool { return k[0]%2 == 0 }
	l, err := OpenSuperblockLog(dir, sbLogID, 1<<20, live)
	if err != nil {
		t.Fatal(err)
	}
	compacted := false
	var last uint64
	for seq := uint64(1); seq <= 200; seq++ {
		var batch []SuperblockLogEntry
		for i := 0; i < 64; i++ {
			batch = append(batch, sbEntry(i, seq, uint32(seq)))
		}
		before := l.Size()
		if err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
		if l.Size() < before {
			compacted = true
		}
		last = seq
	}
	if !compacted {
		t.Fatalf("the log never compacted: %d bytes", l.Size())
	}
	if l.Size() > 1<<20+64*200 {
		t.Fatalf("log of %d bytes after compaction", l.Size())
	}
	l.Close()
	l, err = OpenSuperblockLog(dir, sbLogID, 1<<20, live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 64; i += 2 {
		if seq, _ := mustLatest(t, l, i); seq != last {
			t.Fatalf("live key %d at seq %d after compaction, want %d", i, seq, last)
		}
	}
}

// TestSuperblockLogRefusesAnotherIdentity.
func TestSuperblockLogRefusesAnotherIdentity(t *testing.T) {
	l, err := OpenSuperblockLog(t.TempDir(), sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := sbEntry(1, 1, 1)
	e.State.ReplicaID = 2
	if err := l.Append([]SuperblockLogEntry{e}); err == nil {
		t.Fatal("a record of another replica was appended")
	}
}

// TestReadSuperblockLogLeavesTheFileAndReportsOnlyDamage: the read-only
// reader (tools, tests beside a running server) never cuts; a torn tail is
// no finding, damage before valid records is.
func TestReadSuperblockLogLeavesTheFileAndReportsOnlyDamage(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 1, 1), sbEntry(2, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 2, 2)}); err != nil {
		t.Fatal(err)
	}
	size := l.Size()
	l.Close()
	path := filepath.Join(dir, superblockLogName)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size-5); err != nil {
		t.Fatal(err)
	}
	states, damage, err := ReadSuperblockLog(dir)
	if err != nil || damage != "" || len(states) != 2 || states[sbKey(1)].View != 1 {
		t.Fatalf("torn tail: %d states, damage %q, err %v", len(states), damage, err)
	}
	if fi, _ := os.Stat(path); fi.Size() != size-5 {
		t.Fatalf("the reader changed the file: %d bytes", fi.Size())
	}
	b := append([]byte(nil), whole...)
	b[10] ^= 1 // inside the first record's key, before the valid record of the second batch
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, damage, err := ReadSuperblockLog(dir); err != nil || damage == "" {
		t.Fatalf("damage before a valid record of a later batch not reported: %q %v", damage, err)
	}
}

// FuzzOpenSuperblockLog: any file content opens (a torn tail cut) or is
// refused with an error, never a panic; when the read-only reader finds no
// damage, the open keeps every key it read.
func FuzzOpenSuperblockLog(f *testing.F) {
	dir := f.TempDir()
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 1, 1), sbEntry(2, 1, 1)}); err != nil {
		f.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 2, 2)}); err != nil {
		f.Fatal(err)
	}
	l.Close()
	valid, err := os.ReadFile(filepath.Join(dir, superblockLogName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add([]byte{})
	f.Add([]byte("SBLR"))
	f.Add([]byte("SBL2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, superblockLogName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		states, damage, rerr := ReadSuperblockLog(dir)
		l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
		if err != nil {
			return // refused with an error: fine (a foreign identity counts as damage for the open)
		}
		defer l.Close()
		if rerr != nil || damage != "" {
			return
		}
		for _, st := range states {
			if st.Identity != sbLogID {
				return // the reader takes any identity, the open stops at it
			}
		}
		for key := range states {
			if _, _, ok, err := l.Latest(key); err != nil || !ok {
				t.Fatalf("key %x read by the reader but not kept by the open (ok %v, err %v)", key[:4], ok, err)
			}
		}
	})
}

// TestSuperblockLogReadsTheFirstFormat: records of the first format (magic
// "SBLR", no batch_back) still open, each as a batch of its own (damage
// before a later one is refused), and new records follow them.
func TestSuperblockLogReadsTheFirstFormat(t *testing.T) {
	v1 := func(e SuperblockLogEntry) []byte {
		le := binary.LittleEndian
		body := encodeSuperblock(e.Sequence, &e.State)
		b := le.AppendUint32(nil, superblockLogMagicV1)
		b = le.AppendUint32(b, uint32(superblockLogHeadV1+len(body)+superblockLogTrailer))
		b = append(b, e.Key[:]...)
		b = append(b, body...)
		return le.AppendUint64(b, xxh3.Hash(b))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, superblockLogName)
	file := append(v1(sbEntry(1, 1, 1)), v1(sbEntry(2, 1, 1))...)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 2, 2)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l, err = OpenSuperblockLog(dir, sbLogID, 0, nil); err != nil {
		t.Fatal(err)
	}
	if seq, view := mustLatest(t, l, 1); seq != 2 || view != 2 {
		t.Fatalf("key 1: seq %d view %d, want 2 2", seq, view)
	}
	if seq, _ := mustLatest(t, l, 2); seq != 1 {
		t.Fatalf("key 2: seq %d, want 1", seq)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	b[12] ^= 1 // the first record's key, before a valid record of the first format
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSuperblockLog(dir, sbLogID, 0, nil); !errors.Is(err, ErrSuperblockLogDamaged) {
		t.Fatalf("damage before a later first-format record: %v, want ErrSuperblockLogDamaged", err)
	}
}

// TestSuperblockLogTellsAHoleFromRotInTheLastBatch: in the last batch,
// before valid records of that batch, zeros from a record's start to its
// sector's end are a torn write's hole (cut); a flipped bit is rot
// (refused).
func TestSuperblockLogTellsAHoleFromRotInTheLastBatch(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	if err := l.Append([]SuperblockLogEntry{sbEntry(1, 2, 2), sbEntry(2, 2, 2), sbEntry(3, 2, 2)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := filepath.Join(dir, superblockLogName)
	whole, _ := os.ReadFile(path)
	reopen := func(b []byte) error {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenSuperblockLog(dir, sbLogID, 0, nil)
		if err == nil {
			l.Close()
		}
		return err
	}
	rotted := append([]byte(nil), whole...)
	rotted[synced+30] ^= 1
	if err := reopen(rotted); !errors.Is(err, ErrSuperblockLogDamaged) {
		t.Fatalf("a bit flipped before valid records of its batch: %v, want ErrSuperblockLogDamaged", err)
	}
	holed := append([]byte(nil), whole...)
	clear(holed[synced : (synced/tornHoleSectorBytes+1)*tornHoleSectorBytes])
	if err := reopen(holed); err != nil {
		t.Fatalf("a hole before valid records of its batch: %v, want a torn tail cut", err)
	}
}
