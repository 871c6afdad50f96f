package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// memTree creates /p/d/x, /p/d/e/y and /p/z, all durable by content and name.
func memTree(t *testing.T, m *Mem) {
	t.Helper()
	must(t, m.MkdirAll("/p/d/e", 0o755))
	writeFile(t, m, "/p/d/x", []byte("x"), true)
	writeFile(t, m, "/p/d/e/y", []byte("y"), true)
	writeFile(t, m, "/p/z", []byte("z"), true)
	for _, d := range []string{"/", "/p", "/p/d", "/p/d/e"} {
		must(t, m.SyncDir(d))
	}
}

func TestMemRemoveAllAgreesWithOS(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "p/d/e"), 0o755))
	for _, f := range []string{"p/d/x", "p/d/e/y", "p/z"} {
		must(t, os.WriteFile(filepath.Join(root, f), []byte("f"), 0o644))
	}
	m := NewMem(1)
	memTree(t, m)
	for _, name := range []string{"p/d", "p/missing", "p/z/below-a-file", "p/z"} {
		eo, em := OS.RemoveAll(filepath.Join(root, name)), m.RemoveAll("/"+name)
		if (eo == nil) != (em == nil) || (eo != nil && errors.Is(eo, fs.ErrNotExist) != errors.Is(em, fs.ErrNotExist)) {
			t.Fatalf("RemoveAll(%s): os %v, mem %v", name, eo, em)
		}
	}
	des, err := m.ReadDir("/p")
	must(t, err)
	if len(des) != 0 {
		t.Fatalf("left in /p: %v", des)
	}
	if err := m.RemoveAll("/"); err == nil {
		t.Fatal("RemoveAll of the root succeeded")
	}
}

// TestMemRemoveAllDurability: removed by a synced parent directory, the
// tree stays gone after a crash; unsynced, a crash keeps a prefix of the
// removals, never an entry without its directory.
func TestMemRemoveAllDurability(t *testing.T) {
	back, gone := 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		m := NewMem(seed)
		memTree(t, m)
		must(t, m.RemoveAll("/p/d"))
		m.Crash()
		for _, p := range []string{"/p/d/x", "/p/d/e", "/p/d/e/y"} {
			if _, err := m.Stat(p); err == nil {
				if _, err := m.Stat(filepath.Dir(p)); err != nil {
					t.Fatalf("seed %d: %s survived without its directory", seed, p)
				}
			}
		}
		if _, err := m.Stat("/p/d"); err == nil {
			back++
		} else {
			gone++
		}
		if string(readOrNil(m, "/p/z")) != "z" {
			t.Fatalf("seed %d: a sibling of the removed tree was lost", seed)
		}

		m = NewMem(seed)
		memTree(t, m)
		must(t, m.RemoveAll("/p/d"))
		must(t, m.SyncDir("/p"))
		m.Crash()
		if _, err := m.Stat("/p/d/e/y"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("seed %d: a durably removed tree came back: %v", seed, err)
		}
	}
	if back == 0 || gone == 0 {
		t.Fatalf("an undurable RemoveAll came back %d times, stayed gone %d times", back, gone)
	}
}

func TestMemRemoveAllIsOneOperationForPowerOff(t *testing.T) {
	m := NewMem(1)
	memTree(t, m)
	m.PowerOffAfter(1)
	must(t, m.RemoveAll("/p/d"))
	if err := m.RemoveAll("/p/z"); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("after the power cut: %v", err)
	}
}
