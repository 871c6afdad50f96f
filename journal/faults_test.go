package journal

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// Explicit storage faults on a vfs.Mem: a failed fsync and a full disk,
// for each journal file. (The power-loss tests draw the same faults from
// their seeds.)

// TestFsyncFailurePoisonsPrepareLog: a failed fdatasync (of the last file,
// or of a file closed with unsynced writes) poisons the log: every later
// Write, Sync and Reclaim fails, so nothing claims the writes durable;
// what the last good Sync covered survives the power loss.
func TestFsyncFailurePoisonsPrepareLog(t *testing.T) {
	for _, closed := range []bool{false, true} {
		m := vfs.NewMem(1)
		m.SetCrashModel(vfs.CrashModel{Keep: 0.5})
		l, _, err := OpenPrepareLog("/wal", 0, WithFS(m))
		must(t, err)
		l.SetRotateBytes(4 << 10)
		must(t, l.Write(0, plRange(1, 3, 1, 100)))
		must(t, l.Sync())
		victim := l.path(l.files[len(l.files)-1].seq)
		if closed {
			// ops 4 and 5 fill the file past the rotation size; op 6 opens
			// the next one, and the Sync must fdatasync the closed one.
			must(t, l.Write(0, plRange(4, 6, 1, 3<<10)))
			if len(l.files) < 2 {
				t.Fatalf("no rotation: %d files", len(l.files))
			}
		} else {
			must(t, l.Write(0, plRange(4, 6, 1, 100)))
		}
		must(t, m.InjectSyncFailure(victim))
		err = l.Sync()
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "poisoned") {
			t.Fatalf("closed %v: Sync after an injected fsync failure: %v", closed, err)
		}
		if l.Write(0, plRange(7, 7, 1, 10)) == nil || l.Sync() == nil || l.Reclaim(1) == nil {
			t.Fatalf("closed %v: a poisoned log accepted a later call", closed)
		}
		m.Crash()
		_, got, err := OpenPrepareLog("/wal", 0, WithFS(m))
		if err != nil && !errors.Is(err, ErrPrepareLogDamaged) {
			t.Fatalf("closed %v: reopen: %v", closed, err)
		}
		if len(got) < 3 {
			t.Fatalf("closed %v: %d entries after the crash, the 3 synced ones at least", closed, len(got))
		}
		wantOps(t, got[:3], map[uint64]uint32{1: 1, 2: 1, 3: 1})
	}
}

// TestFsyncFailurePoisonsMetadataWAL: a failed fdatasync fails the append
// and poisons the WAL (ErrWALPoisoned after); what was appended before
// survives the power loss and the WAL reopens.
func TestFsyncFailurePoisonsMetadataWAL(t *testing.T) {
	m := vfs.NewMem(2)
	w, _, err := OpenWAL("/meta", WithFS(m))
	must(t, err)
	must(t, w.Append(prepares(1, 5)...))
	must(t, m.InjectSyncFailure(w.segs[len(w.segs)-1].path))
	if err := w.Append(prepares(6, 6)...); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fdatasync: %v", err)
	}
	if err := w.Append(prepares(7, 7)...); !errors.Is(err, ErrWALPoisoned) {
		t.Fatalf("append after it: %v, want ErrWALPoisoned", err)
	}
	if err := w.TruncateFrom(3); !errors.Is(err, ErrWALPoisoned) {
		t.Fatalf("truncate after it: %v, want ErrWALPoisoned", err)
	}
	m.Crash()
	_, got, err := OpenWAL("/meta", WithFS(m))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if len(got) < 5 || len(got) > 6 || got[4].Header.Op != 5 {
		t.Fatalf("after the crash: %v", opsOf(got))
	}
	// A failed directory fsync when a segment is created poisons too:
	// whether the segment exists after a crash is unknown.
	m = vfs.NewMem(3)
	w, _, err = OpenWAL("/meta", WithFS(m))
	must(t, err)
	must(t, w.Append(prepares(1, walSegmentRecordsMax)...))
	must(t, m.InjectSyncFailure("/meta"))
	if err := w.Append(prepares(walSegmentRecordsMax+1, walSegmentRecordsMax+1)...); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append into a new segment whose directory fsync fails: %v", err)
	}
	if err := w.Append(prepares(1000, 1000)...); !errors.Is(err, ErrWALPoisoned) {
		t.Fatalf("append after it: %v, want ErrWALPoisoned", err)
	}
}

// TestFullDiskPrepareLog: a full disk fails the Write with ENOSPC, cuts
// the partial record back, does not poison; the log stays readable with
// every entry written before, and goes on once there is room.
func TestFullDiskPrepareLog(t *testing.T) {
	m := vfs.NewMem(4)
	l, _, err := OpenPrepareLog("/wal", 0, WithFS(m))
	must(t, err)
	m.SetCapacity(20 << 10)
	var op uint64
	for {
		op++
		err = l.Write(0, plRange(op, op, 1, 3<<10))
		if err != nil {
			break
		}
		must(t, l.Sync())
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "prepare WAL") {
		t.Fatalf("write on a full disk: %v", err)
	}
	if l.poisoned != nil || op < 3 {
		t.Fatalf("after ENOSPC at op %d: poisoned %v", op, l.poisoned)
	}
	want := map[uint64]uint32{}
	for o := uint64(1); o < op; o++ {
		want[o] = 1
	}
	_, got, err := OpenPrepareLog("/wal", 0, WithFS(m)) // no crash: the file as it stands
	if err != nil {
		t.Fatalf("open beside the full log: %v", err)
	}
	wantOps(t, got, want)
	m.SetCapacity(0)
	must(t, l.Write(0, plRange(op, op, 1, 3<<10)))
	must(t, l.Sync())
	want[op] = 1
	m.Crash()
	_, got, err = OpenPrepareLog("/wal", 0, WithFS(m))
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	wantOps(t, got, want)
}

// TestFullDiskMetadataWAL: an append on a full disk fails with ENOSPC and
// is cut back; the WAL is not poisoned, reopens with every earlier entry
// (no torn tail left), and appends again once there is room.
func TestFullDiskMetadataWAL(t *testing.T) {
	m := vfs.NewMem(5)
	w, _, err := OpenWAL("/meta", WithFS(m))
	must(t, err)
	m.SetCapacity(m.Used() + 4000)
	var op uint64
	for {
		op++
		if err = w.Append(plPrep(op, 1, 900)); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if w.poisoned || op < 3 {
		t.Fatalf("after ENOSPC at op %d: poisoned %v", op, w.poisoned)
	}
	w2, got, err := OpenWAL("/meta", WithFS(m))
	if err != nil || len(got) != int(op-1) {
		t.Fatalf("open beside the full WAL: %v, %d entries, want %d", err, len(got), op-1)
	}
	if _, n := w2.TornTail(); n != 0 {
		t.Fatalf("a %d-byte torn tail left by the failed append", n)
	}
	m.SetCapacity(0)
	must(t, w.Append(plPrep(op, 1, 900)))
	m.Crash()
	_, got, err = OpenWAL("/meta", WithFS(m))
	if err != nil || len(got) != int(op) {
		t.Fatalf("reopen after the crash: %v, %d entries, want %d", err, len(got), op)
	}
}

// TestFullDiskSuperblockAndSnapshot: a superblock or snapshot write that
// finds the disk full fails with ENOSPC and leaves the previous state
// readable (only the temp file is short); with room again it succeeds.
func TestFullDiskSuperblockAndSnapshot(t *testing.T) {
	m := vfs.NewMem(6)
	sb, _, err := OpenSuperblock("/meta", testIdentity, WithFS(m))
	must(t, err)
	must(t, sb.Write(sbState(1, 10)))
	must(t, WriteSnapshot("/meta", snap(10, "ten"), WithFS(m)))
	m.SetCapacity(m.Used() + 20)
	if err := sb.Write(sbState(2, 20)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("superblock write on a full disk: %v", err)
	}
	if err := WriteSnapshot("/meta", snap(20, strings.Repeat("twenty", 10)), WithFS(m)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("snapshot write on a full disk: %v", err)
	}
	_, st, err := OpenSuperblock("/meta", testIdentity, WithFS(m))
	if err != nil || st == nil || st.View != 1 {
		t.Fatalf("superblock after ENOSPC: %v %v", st, err)
	}
	if s, err := ReadSnapshot("/meta", WithFS(m)); err != nil || s == nil || s.Op != 10 {
		t.Fatalf("snapshot after ENOSPC: %v %v", s, err)
	}
	if f := CheckMetadata("/meta", WithFS(m)); len(f) != 0 {
		t.Fatalf("check after ENOSPC: %v", f)
	}
	m.SetCapacity(0)
	must(t, sb.Write(sbState(2, 20)))
	must(t, WriteSnapshot("/meta", snap(20, "twenty"), WithFS(m)))
	m.Crash()
	_, st, err = OpenSuperblock("/meta", testIdentity, WithFS(m))
	if err != nil || st == nil || st.View != 2 {
		t.Fatalf("superblock after the crash: %v %v", st, err)
	}
	if s, err := ReadSnapshot("/meta", WithFS(m)); err != nil || s == nil || s.Op != 20 {
		t.Fatalf("snapshot after the crash: %v %v", s, err)
	}
}
