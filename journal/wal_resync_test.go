package journal

import (
	"errors"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// TestWALOpenMakesWhatAFailedSyncLeftDurable: a process's fdatasync fails
// (the kernel may drop the pages while reads still show them: fsyncgate),
// the WAL is poisoned and the process exits; the next process opens the
// WAL, reads those records from the page cache and appends synced ones
// after them; then the power goes. The open must have made what it read
// durable, or the next open finds a hole followed by valid records
// (interior corruption) and refuses. Without resyncLocked this fails for
// about half the seeds.
func TestWALOpenMakesWhatAFailedSyncLeftDurable(t *testing.T) {
	const dir = "/m"
	for seed := uint64(1); seed <= 40; seed++ {
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0.3, Torn: 0.3})
		w, _, err := OpenWAL(dir, WithFS(m))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(prepares(1, 3)...); err != nil {
			t.Fatal(err)
		}
		if err := m.InjectSyncFailure(segPath(dir, 1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(prepares(4, 6)...); err == nil {
			t.Fatalf("seed %d: the append whose fdatasync failed succeeded", seed)
		}
		if err := w.Append(prepares(7, 7)...); !errors.Is(err, ErrWALPoisoned) {
			t.Fatalf("seed %d: append after a failed fdatasync: %v, want ErrWALPoisoned", seed, err)
		}
		m.ProcessDied() // the poisoned process exits; the page cache stays

		w, rec, err := OpenWAL(dir, WithFS(m))
		if err != nil {
			t.Fatalf("seed %d: reopen: %v", seed, err)
		}
		if len(rec) != 6 {
			t.Fatalf("seed %d: reopen found %d entries, want the 6 the page cache shows", seed, len(rec))
		}
		if err := w.Append(prepares(7, 9)...); err != nil {
			t.Fatal(err)
		}
		m.Crash() // power loss

		w, rec, err = OpenWAL(dir, WithFS(m))
		if err != nil {
			t.Fatalf("seed %d: open after the power loss: %v", seed, err)
		}
		if len(rec) != 9 || rec[8].Header.Op != 9 {
			t.Fatalf("seed %d: after the power loss %d entries, want ops 1..9", seed, len(rec))
		}
		w.Close()
	}
}
