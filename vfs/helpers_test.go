package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGlobMatchesTheLastElementOnEitherFS(t *testing.T) {
	for name, fsys := range map[string]FS{"os": OS, "mem": NewMem(1)} {
		dir := "/g"
		if name == "os" {
			dir = t.TempDir()
		}
		if err := fsys.MkdirAll(filepath.Join(dir, "wal.damaged-2"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"b.log", "a.log", "a.index", "wal.damaged-1"} {
			if err := WriteFile(fsys, filepath.Join(dir, f), []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Glob(fsys, filepath.Join(dir, "*.log"))
		want := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: Glob *.log = %v, %v; want %v", name, got, err, want)
		}
		got, _ = Glob(fsys, filepath.Join(dir, "wal.damaged-*"))
		if len(got) != 2 {
			t.Fatalf("%s: Glob wal.damaged-* = %v, want the file and the directory", name, got)
		}
		if got, err := Glob(fsys, filepath.Join(dir, "missing", "*")); err != nil || got != nil {
			t.Fatalf("%s: Glob in a missing directory = %v, %v", name, got, err)
		}
		if _, err := Glob(fsys, filepath.Join(dir, "[")); err == nil {
			t.Fatalf("%s: a malformed pattern was accepted", name)
		}
	}
}

func TestGlobExpandsWildcardsInEveryElement(t *testing.T) {
	fsys := NewMem(2)
	for _, d := range []string{"/r/1/topics/1/partitions/1", "/r/1/topics/2/partitions/1", "/r/2/topics/1/partitions/3", "/r/3/other"} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Glob(fsys, "/r/*/topics/*/partitions/*")
	want := []string{"/r/1/topics/1/partitions/1", "/r/1/topics/2/partitions/1", "/r/2/topics/1/partitions/3"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Glob = %v, %v; want %v", got, err, want)
	}
	osWant, _ := filepath.Glob("/proc/self/fd")
	if got, _ := Glob(OS, "/proc/self/fd"); !slices.Equal(got, osWant) {
		t.Fatalf("a literal pattern: %v, want %v", got, osWant)
	}
}

// A directory tree made by MkdirAllDurable survives a power loss whole; a
// plain MkdirAll under the same root may not (the Mem model keeps an
// unsynced directory entry only by chance).
func TestMkdirAllDurableSurvivesAPowerLoss(t *testing.T) {
	lost := 0
	for seed := uint64(1); seed <= 20; seed++ {
		fsys := NewMem(seed)
		if err := MkdirAllDurable(fsys, "/data/a/b/c", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fsys.MkdirAll("/plain/a/b/c", 0o755); err != nil {
			t.Fatal(err)
		}
		fsys.Crash()
		if _, err := fsys.Stat("/data/a/b/c"); err != nil {
			t.Fatalf("seed %d: the durable tree lost a level: %v", seed, err)
		}
		if _, err := fsys.Stat("/plain/a/b/c"); err != nil {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no seed lost the unsynced tree: the test cannot tell the two apart")
	}
	if err := MkdirAllDurable(OS, filepath.Join(t.TempDir(), "x", "y"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Whenever the power goes during RemoveAllAtomically, the tree is whole or
// gone under its name; a plain RemoveAll can leave part of it (the test
// shows that too, so it can tell the two apart).
func TestRemoveAllAtomicallyLeavesAllOrNothing(t *testing.T) {
	files := []string{"a/0.index", "a/0.log", "a/offsets/x", "a/partition.meta"}
	build := func(seed uint64) *Mem {
		m := NewMem(seed)
		if err := MkdirAllDurable(m, "/d/a/offsets", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := WriteFile(m, "/d/"+f, []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range []string{"/d/a", "/d/a/offsets"} {
			if err := m.SyncDir(d); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	partialPlain := 0
	for seed := uint64(1); seed <= 30; seed++ {
		for cut := 0; cut < 6; cut++ {
			for _, atomic := range []bool{true, false} {
				m := build(seed)
				m.PowerOffAfter(cut)
				if atomic {
					_ = RemoveAllAtomically(m, "/d/a")
				} else {
					_ = m.RemoveAll("/d/a")
				}
				m.Crash()
				present := 0
				for _, f := range files {
					if _, err := m.Stat("/d/" + f); err == nil {
						present++
					}
				}
				if present != 0 && present != len(files) {
					if atomic {
						t.Fatalf("seed %d cut %d: %d of %d files left under the name", seed, cut, present, len(files))
					}
					partialPlain++
				}
			}
		}
	}
	if partialPlain == 0 {
		t.Fatal("a plain RemoveAll never left a partial tree: the test cannot tell the two apart")
	}
}

// TestMkdirAllDurableUnderSyncsLevelsAnEarlierCallLeftUnsynced: the
// levels of one partition directory exist but their entries were never
// synced (its creation's directory sync failed half way up, or a
// concurrent creator has not synced them yet); a second directory beside
// it is created and a file synced in it; then the power goes. The second
// directory and its file must survive (metadata simulator M17: found
// existing, those levels were not synced, and the power loss dropped the
// partition with its synced files).
func TestMkdirAllDurableUnderSyncsLevelsAnEarlierCallLeftUnsynced(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		m := NewMem(seed)
		if err := MkdirAllDurable(m, "/data", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := m.MkdirAll("/data/s/t/p/0", 0o755); err != nil { // never synced
			t.Fatal(err)
		}
		if err := MkdirAllDurableUnder(m, "/data", "/data/s/t/p/1", 0o755); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		f, err := m.OpenFile("/data/s/t/p/1/f", os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("synced")); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := m.SyncDir("/data/s/t/p/1"); err != nil {
			t.Fatal(err)
		}
		m.Crash()
		if b, err := m.ReadFile("/data/s/t/p/1/f"); err != nil || string(b) != "synced" {
			t.Fatalf("seed %d: the synced file under the second directory after the power loss: %q %v", seed, b, err)
		}
	}
	if err := MkdirAllDurableUnder(NewMem(1), "/data", "/other/x", 0o755); err == nil {
		t.Fatal("a path outside the root was accepted")
	}
}

// TestMkdirAllDurableUndoesWhatAFailedSyncLeft: a directory sync fails
// half way up; the levels the call created are removed, so the next call
// creates them again and syncs them, and a power loss after it keeps the
// directory with the file synced in it (metadata simulator M17's shape,
// for the single-opener directories: a WAL's, the superblock log's).
func TestMkdirAllDurableUndoesWhatAFailedSyncLeft(t *testing.T) {
	m := NewMem(1)
	if err := MkdirAllDurable(m, "/data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.InjectSyncFailure("/data"); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAllDurable(m, "/data/a/wal", 0o755); err == nil {
		t.Fatal("the creation whose directory sync failed succeeded")
	}
	if _, err := m.Stat("/data/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed creation left /data/a: %v", err)
	}
	if err := MkdirAllDurable(m, "/data/a/wal", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/data/a/wal/1", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("synced"))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := m.SyncDir("/data/a/wal"); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	if b, err := m.ReadFile("/data/a/wal/1"); err != nil || string(b) != "synced" {
		t.Fatalf("after the power loss: %q %v", b, err)
	}
}
