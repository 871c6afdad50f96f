package partitions

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// salvageFixture is a log of two full segments (6 messages each) whose
// second segment is damaged in its second batch, on a Mem file system.
func salvageFixture(t *testing.T) (*vfs.Mem, Options, *QuarantineError) {
	t.Helper()
	m := vfs.NewMem(5)
	memPartitionDir(t, m, "/p")
	opts := Options{FS: m, SegmentSizeBytes: 4096, Logger: quietLogger}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", opts)
	fillLog(t, l, 6, 2, 700)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segmentLogPath("/p", 6)
	st, err := m.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.FlipByte(seg, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	_, err = Open("/p", opts)
	var q *QuarantineError
	if !errors.As(err, &q) || q.Offset <= 6 || q.Position == 0 {
		t.Fatalf("open of the damaged log: %v, want a quarantine inside segment 6", err)
	}
	return m, opts, q
}

// TestSetAsideDamageOnAFullDiskChangesNothing: the verified prefix is
// copied before anything is renamed, so a full disk fails the set-aside
// with the log as it was (metadata simulator seed 125156: the damaged
// segment was renamed, the copy failed, and the retried open found no
// segment at all). Once space returns it succeeds and keeps the prefix.
func TestSetAsideDamageOnAFullDiskChangesNothing(t *testing.T) {
	m, opts, q := salvageFixture(t)
	before := dirNames(t, m)
	m.SetCapacity(m.Used())
	if err := SetAsideDamage(q); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("set aside on a full disk: %v, want ENOSPC", err)
	}
	if after := dirNames(t, m); after != before {
		t.Fatalf("a failed set-aside changed the directory:\n%s\nwas\n%s", after, before)
	}
	m.SetCapacity(0)
	if err := SetAsideDamage(q); err != nil {
		t.Fatal(err)
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", opts)
	defer l.Close()
	if l.NextOffset() != q.Offset {
		t.Fatalf("after the set-aside the log resumes at %d, want the damage's offset %d", l.NextOffset(), q.Offset)
	}
}

// TestSetAsideDamageCutAtEveryStepKeepsTheVerifiedPrefix: a process
// killed at any file operation of SetAsideDamage leaves a directory that
// the next open, setting the damage aside again where it is still found,
// serves up to the damage's offset: never less (a prefix lost to the cut)
// and never the damaged batch.
func TestSetAsideDamageCutAtEveryStepKeepsTheVerifiedPrefix(t *testing.T) {
	cuts := 0
	for n := 0; ; n++ {
		m, opts, q := salvageFixture(t)
		m.KillAfter(n)
		err := SetAsideDamage(q)
		m.ProcessDied()
		if err != nil {
			cuts++
		}
		var l *Log
		for attempt := 0; l == nil; attempt++ {
			opts.Files = NewFileCache(OpenFilesMin, quietLogger)
			var again *QuarantineError
			l, err = Open("/p", opts)
			switch {
			case err == nil:
			case errors.As(err, &again) && attempt < 2:
				if err := SetAsideDamage(again); err != nil {
					t.Fatalf("cut after %d operations: the rerun set-aside: %v", n, err)
				}
			default:
				t.Fatalf("cut after %d operations: open: %v", n, err)
			}
		}
		next := l.NextOffset()
		l.Close()
		if next != q.Offset {
			t.Fatalf("cut after %d operations: the log resumes at %d, want the damage's offset %d (directory:\n%s)",
				n, next, q.Offset, dirNames(t, m))
		}
		if err == nil && cuts == n {
			break // the set-aside ran to its end uncut
		}
		if n > 100 {
			t.Fatal("the set-aside never ran uncut")
		}
	}
	if cuts < 4 {
		t.Fatalf("only %d cuts inside the set-aside: the test no longer reaches it", cuts)
	}
}

func dirNames(t *testing.T, m *vfs.Mem) string {
	t.Helper()
	entries, err := m.ReadDir("/p")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, "\n")
}
