package journal

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

// TestPrepareLogSyncCoversClosedFiles: Sync promises everything written so
// far, also what went to a file closed before it: a Write that crosses a
// rotation (its first part lands in the file the rotation closes), a
// replicated write followed by a Reclaim that rotates, a write followed
// by Close. Before the fix Sync fdatasynced only the last file, and a
// power loss (every unsynced write lost) dropped acknowledged prepares
// from the middle of the log.
func TestPrepareLogSyncCoversClosedFiles(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, l *PrepareLog) (want map[uint64]uint32)
	}{
		{"write across a rotation", func(t *testing.T, l *PrepareLog) map[uint64]uint32 {
			// 3 KiB entries, 4 KiB rotation: ops 1..2 fill file 1, the
			// second Write starts in file 1 and goes on in files 2 and 3.
			must(t, l.Write(0, plRange(1, 1, 1, 3<<10)))
			must(t, l.Sync())
			must(t, l.Write(0, plRange(2, 6, 1, 3<<10)))
			must(t, l.Sync())
			return map[uint64]uint32{1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
		}},
		{"replicated write, reclaim rotates, persisted write", func(t *testing.T, l *PrepareLog) map[uint64]uint32 {
			must(t, l.Write(0, plRange(1, 2, 1, 3<<10))) // not synced; the file passes 4 KiB
			must(t, l.Reclaim(1))                        // a full last file: rotated, nothing removed
			must(t, l.Write(0, plRange(3, 4, 1, 100)))
			must(t, l.Sync())
			return map[uint64]uint32{1: 1, 2: 1, 3: 1, 4: 1}
		}},
		{"write, close, sync", func(t *testing.T, l *PrepareLog) map[uint64]uint32 {
			must(t, l.Write(0, plRange(1, 3, 1, 100)))
			must(t, l.Close())
			must(t, l.Sync())
			return map[uint64]uint32{1: 1, 2: 1, 3: 1}
		}},
		{"write, close, write, sync", func(t *testing.T, l *PrepareLog) map[uint64]uint32 {
			must(t, l.Write(0, plRange(1, 2, 1, 100)))
			must(t, l.Close())
			must(t, l.Write(0, plRange(3, 4, 1, 100)))
			must(t, l.Sync())
			return map[uint64]uint32{1: 1, 2: 1, 3: 1, 4: 1}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				m := vfs.NewMem(seed)
				m.SetCrashModel(vfs.CrashModel{}) // a power loss loses every unsynced write
				l, _, err := OpenPrepareLog("/wal", 0, WithFS(m))
				must(t, err)
				l.SetRotateBytes(4 << 10)
				want := tc.run(t, l)
				m.Crash()
				_, got, err := OpenPrepareLog("/wal", 0, WithFS(m))
				if err != nil {
					t.Fatalf("seed %d: reopen: %v", seed, err)
				}
				wantOps(t, got, want)
			}
		})
	}
	// The extra fdatasync is only paid when a closed file holds unsynced
	// writes: a Write that stays in one file syncs one file.
	m := vfs.NewMem(1)
	l, _, err := OpenPrepareLog("/wal", 0, WithFS(m))
	must(t, err)
	must(t, l.Write(0, []consensus.Prepare{plPrep(1, 1, 10)}))
	must(t, l.Sync())
	if len(l.closedDirty) != 0 {
		t.Fatalf("closedDirty %v after a single-file write", l.closedDirty)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
