package vfs

import (
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sort"
	"testing"
)

// TestMemReadDirIndexFollowsTheNamespace: after random creations,
// renames (of files and of directories with their subtrees), removals,
// directory syncs and crashes, ReadDir of every directory lists exactly
// the names a scan of the whole namespace finds.
func TestMemReadDirIndexFollowsTheNamespace(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		m := NewMem(seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		dirs := []string{"/a", "/b", "/a/x", "/b/y", "/c"}
		pick := func(list []string) string { return list[rng.IntN(len(list))] }
		name := func() string { return path.Join(pick(dirs), string(rune('p'+rng.IntN(4)))) }
		for step := 0; step < 400; step++ {
			switch rng.IntN(8) {
			case 0:
				_ = m.MkdirAll(pick(dirs), 0o755)
			case 1, 2:
				if f, err := m.OpenFile(name(), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
					_ = f.Close()
				}
			case 3:
				_ = m.Rename(name(), name())
			case 4:
				_ = m.Rename(pick(dirs), pick(dirs)+"-moved")
			case 5:
				_ = m.Remove(name())
			case 6:
				if rng.IntN(4) == 0 {
					_ = m.RemoveAll(pick(dirs))
				} else {
					_ = m.SyncDir(pick(dirs))
				}
			case 7:
				if rng.IntN(8) == 0 {
					m.Crash()
				}
			}
			checkMemIndex(t, m, seed, step)
		}
	}
}

func checkMemIndex(t *testing.T, m *Mem, seed uint64, step int) {
	t.Helper()
	m.mu.Lock()
	want := map[string][]string{}
	var dirs []string
	for k, ino := range m.names {
		if ino.dir {
			dirs = append(dirs, k)
		}
		if k != "/" {
			want[parentDir(k)] = append(want[parentDir(k)], path.Base(k))
		}
	}
	m.mu.Unlock()
	for _, d := range dirs {
		entries, err := m.ReadDir(d)
		if err != nil {
			t.Fatalf("seed %d step %d: ReadDir(%s): %v", seed, step, d, err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		w := want[d]
		sort.Strings(w)
		if !slices.Equal(got, w) {
			t.Fatalf("seed %d step %d: ReadDir(%s) = %v, the namespace holds %v", seed, step, d, got, w)
		}
	}
}
