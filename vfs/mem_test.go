package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"sync"
	"syscall"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeFile creates (or truncates) name with data; sync makes the data
// durable (not the name).
func writeFile(t *testing.T, fsys FS, name string, data []byte, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	must(t, err)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		must(t, f.Sync())
	}
	must(t, f.Close())
}

func readOrNil(fsys FS, name string) []byte {
	b, err := fsys.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}

func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}

func TestMemBasics(t *testing.T) {
	m := NewMem(1)
	must(t, m.MkdirAll("/a/b", 0o755))
	if _, err := m.Open("/a/b/x"); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("open missing: %v", err)
	}
	if _, err := m.OpenFile("/nope/x", os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in a missing directory: %v", err)
	}
	f, err := m.OpenFile("/a/b/x", os.O_CREATE|os.O_RDWR, 0o600)
	must(t, err)
	if _, err := f.Write([]byte("hello world")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("W"), 6); err != nil {
		t.Fatal(err)
	}
	if pos, err := f.Seek(0, io.SeekStart); err != nil || pos != 0 {
		t.Fatalf("seek: %d %v", pos, err)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != "hello World" {
		t.Fatalf("read back %q %v", got, err)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF || string(buf[:3]) != "rld" {
		t.Fatalf("short ReadAt: %d %v %q", n, err, buf[:n])
	}
	// A write past the end leaves a zero-filled gap.
	if _, err := f.WriteAt([]byte("!"), 14); err != nil {
		t.Fatal(err)
	}
	if got := readOrNil(m, "/a/b/x"); string(got) != "hello World\x00\x00\x00!" {
		t.Fatalf("gap: %q", got)
	}
	must(t, f.Truncate(5))
	st, err := f.Stat()
	if err != nil || st.Size() != 5 || st.Name() != "x" || st.IsDir() || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %+v %v", st, err)
	}
	if f.Name() != "/a/b/x" {
		t.Fatalf("name %q", f.Name())
	}
	must(t, f.Close())
	if _, err := f.Read(buf); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("double close: %v", err)
	}
	if _, err := m.OpenFile("/a/b/x", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on an existing file: %v", err)
	}
	// O_APPEND writes at the end; WriteAt is refused as by os.
	f, err = m.OpenFile("/a/b/x", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	if _, err := f.Write([]byte("++")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("?"), 0); err == nil {
		t.Fatal("WriteAt on O_APPEND succeeded")
	}
	if _, err := f.Read(buf); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("read on a write-only handle: %v", err)
	}
	f.Close()
	if got := readOrNil(m, "/a/b/x"); string(got) != "hello++" {
		t.Fatalf("append: %q", got)
	}
	// Listings are sorted; directories cannot be written or removed while
	// they hold entries; a file is not a directory.
	writeFile(t, m, "/a/b/c", nil, false)
	writeFile(t, m, "/a/b/a", nil, false)
	must(t, m.MkdirAll("/a/b/d", 0o755))
	des, err := m.ReadDir("/a/b")
	must(t, err)
	var names []string
	for _, de := range des {
		names = append(names, fmt.Sprintf("%s:%v", de.Name(), de.IsDir()))
	}
	if fmt.Sprint(names) != "[a:false c:false d:true x:false]" {
		t.Fatalf("ReadDir: %v", names)
	}
	if err := m.Remove("/a/b"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove a non-empty directory: %v", err)
	}
	if _, err := m.OpenFile("/a/b", os.O_WRONLY, 0); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("open a directory for writing: %v", err)
	}
	if err := m.MkdirAll("/a/b/x/y", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("mkdir under a file: %v", err)
	}
	if _, err := m.ReadDir("/a/b/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("ReadDir of a file: %v", err)
	}
	// Rename replaces a file atomically; a directory moves with its subtree.
	writeFile(t, m, "/a/b/c", []byte("new"), false)
	must(t, m.Rename("/a/b/c", "/a/b/x"))
	if got := readOrNil(m, "/a/b/x"); string(got) != "new" {
		t.Fatalf("rename over: %q", got)
	}
	if _, err := m.Stat("/a/b/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name after rename: %v", err)
	}
	must(t, m.Rename("/a/b", "/a/z"))
	if got := readOrNil(m, "/a/z/x"); string(got) != "new" {
		t.Fatalf("after a directory rename: %q", got)
	}
	if err := m.Rename("/a", "/a/z/in"); err == nil {
		t.Fatal("renamed a directory into itself")
	}
	must(t, m.Truncate("/a/z/x", 1))
	if got := readOrNil(m, "/a/z/x"); string(got) != "n" {
		t.Fatalf("Truncate: %q", got)
	}
	must(t, m.Remove("/a/z/x"))
	if _, err := m.Stat("/a/z/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after remove: %v", err)
	}
}

// TestMemAgreesWithOS drives the same random operations on the real file
// system and on Mem and compares every result: contents, sizes, listings,
// and which calls fail with which class of error.
func TestMemAgreesWithOS(t *testing.T) {
	classes := []error{fs.ErrNotExist, fs.ErrExist, syscall.ENOTEMPTY, syscall.EISDIR, syscall.ENOTDIR, io.EOF}
	class := func(err error) string {
		if err == nil {
			return "ok"
		}
		for _, c := range classes {
			if errors.Is(err, c) {
				return c.Error()
			}
		}
		return "error"
	}
	for seed := uint64(1); seed <= 60; seed++ {
		root := t.TempDir()
		m := NewMem(seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		names := []string{"a", "b", "d", "d/a", "d/b", "e"}
		type handle struct{ o, m File }
		var open []handle
		for step := 0; step < 300; step++ {
			name := names[rng.IntN(len(names))]
			other := names[rng.IntN(len(names))]
			var ro, rm string
			op := rng.IntN(14)
			switch op {
			case 0:
				flag := []int{os.O_CREATE | os.O_RDWR, os.O_CREATE | os.O_EXCL | os.O_WRONLY, os.O_RDWR, os.O_CREATE | os.O_TRUNC | os.O_RDWR, os.O_RDONLY, os.O_WRONLY | os.O_APPEND}[rng.IntN(6)]
				fo, eo := os.OpenFile(path.Join(root, name), flag, 0o644)
				fm, em := m.OpenFile("/"+name, flag, 0o644)
				ro, rm = class(eo), class(em)
				if eo == nil && em == nil {
					open = append(open, handle{osFile{fo}, fm})
				} else {
					if eo == nil {
						fo.Close()
					}
					if em == nil {
						fm.Close()
					}
				}
			case 1, 2:
				if len(open) == 0 {
					continue
				}
				h := open[rng.IntN(len(open))]
				data := pattern(byte(step), rng.IntN(700))
				off := rng.Int64N(1500)
				no, eo := h.o.WriteAt(data, off)
				nm, em := h.m.WriteAt(data, off)
				ro, rm = fmt.Sprint(no, class(eo)), fmt.Sprint(nm, class(em))
			case 3:
				if len(open) == 0 {
					continue
				}
				h := open[rng.IntN(len(open))]
				bo, bm := make([]byte, rng.IntN(900)), make([]byte, 0)
				bm = make([]byte, len(bo))
				off := rng.Int64N(1500)
				no, eo := h.o.ReadAt(bo, off)
				nm, em := h.m.ReadAt(bm, off)
				ro, rm = fmt.Sprint(no, class(eo), bo[:no]), fmt.Sprint(nm, class(em), bm[:nm])
			case 4:
				if len(open) == 0 {
					continue
				}
				i := rng.IntN(len(open))
				size := rng.Int64N(1200)
				ro, rm = class(open[i].o.Truncate(size)), class(open[i].m.Truncate(size))
			case 5:
				if len(open) == 0 {
					continue
				}
				i := rng.IntN(len(open))
				ro, rm = class(open[i].o.Close()), class(open[i].m.Close())
				open = append(open[:i], open[i+1:]...)
			case 6:
				ro = class(os.Rename(path.Join(root, name), path.Join(root, other)))
				rm = class(m.Rename("/"+name, "/"+other))
			case 7:
				ro, rm = class(os.Remove(path.Join(root, name))), class(m.Remove("/"+name))
			case 8:
				ro, rm = class(os.MkdirAll(path.Join(root, name), 0o755)), class(m.MkdirAll("/"+name, 0o755))
			case 9:
				bo, eo := os.ReadFile(path.Join(root, name))
				bm, em := m.ReadFile("/" + name)
				ro, rm = fmt.Sprint(class(eo), bo), fmt.Sprint(class(em), bm)
			case 10:
				so, eo := os.Stat(path.Join(root, name))
				sm, em := m.Stat("/" + name)
				ro, rm = class(eo), class(em)
				if eo == nil && em == nil {
					ro, rm = fmt.Sprint(so.Name(), so.IsDir(), so.IsDir() || so.Size() == sm.Size()), fmt.Sprint(sm.Name(), sm.IsDir(), true)
				}
			case 11:
				dir := []string{"", "d"}[rng.IntN(2)]
				do, eo := os.ReadDir(path.Join(root, dir))
				dm, em := m.ReadDir("/" + dir)
				list := func(des []fs.DirEntry) (s []string) {
					for _, de := range des {
						s = append(s, fmt.Sprint(de.Name(), de.IsDir()))
					}
					return s
				}
				ro, rm = fmt.Sprint(class(eo), list(do)), fmt.Sprint(class(em), list(dm))
			case 12:
				if len(open) == 0 {
					continue
				}
				h := open[rng.IntN(len(open))]
				if st, _ := h.m.Stat(); st.IsDir() {
					continue // a directory's offset is the file system's business
				}
				off, whence := rng.Int64N(1200)-200, rng.IntN(3)
				po, eo := h.o.Seek(off, whence)
				pm, em := h.m.Seek(off, whence)
				ro, rm = fmt.Sprint(po, eo == nil), fmt.Sprint(pm, em == nil)
			case 13:
				if len(open) == 0 {
					continue
				}
				h := open[rng.IntN(len(open))]
				if rng.IntN(2) == 0 {
					data := pattern(byte(step), rng.IntN(300))
					no, eo := h.o.Write(data)
					nm, em := h.m.Write(data)
					ro, rm = fmt.Sprint(no, class(eo)), fmt.Sprint(nm, class(em))
				} else {
					bo, bm := make([]byte, rng.IntN(300)), make([]byte, 0)
					bm = make([]byte, len(bo))
					no, eo := h.o.Read(bo)
					nm, em := h.m.Read(bm)
					ro, rm = fmt.Sprint(no, class(eo), bo[:no]), fmt.Sprint(nm, class(em), bm[:nm])
				}
			}
			if ro != rm {
				t.Fatalf("seed %d step %d op %d (%s, %s): os %s, mem %s", seed, step, op, name, other, ro, rm)
			}
		}
		for _, h := range open {
			h.o.Close()
		}
	}
}

func TestMemSyncedDataAndEntriesSurviveACrash(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		m := NewMem(seed)
		must(t, m.MkdirAll("/d", 0o755))
		must(t, m.SyncDir("/"))
		writeFile(t, m, "/d/f", pattern(1, 3000), true)
		must(t, m.SyncDir("/d"))
		// Unsynced changes after that: an overwrite, an append, a new file.
		f, err := m.OpenFile("/d/f", os.O_RDWR, 0)
		must(t, err)
		f.WriteAt(pattern(9, 100), 10)
		f.WriteAt(pattern(8, 700), 3000)
		writeFile(t, m, "/d/g", []byte("g"), true)
		m.Crash()
		if _, err := f.Write([]byte("x")); !errors.Is(err, ErrStale) {
			t.Fatalf("seed %d: write on a handle from before the crash: %v", seed, err)
		}
		got := readOrNil(m, "/d/f")
		want := pattern(1, 3000)
		if len(got) < 3000 || !bytes.Equal(got[:10], want[:10]) || !bytes.Equal(got[110:3000], want[110:]) {
			t.Fatalf("seed %d: synced content damaged (%d bytes)", seed, len(got))
		}
		if g := readOrNil(m, "/d/g"); g != nil && string(g) != "g" {
			t.Fatalf("seed %d: /d/g = %q", seed, g)
		}
		if d, n := m.Pending(); d != 0 || n != 0 {
			t.Fatalf("seed %d: %d data and %d directory operations pending after a crash", seed, d, n)
		}
	}
}

// TestMemUnsyncedWritesKeptLostOrTornBySector: every outcome happens, and
// a torn write is torn at sector boundaries of the file offset.
func TestMemUnsyncedWritesKeptLostOrTornBySector(t *testing.T) {
	old, upd := pattern(1, 4096), pattern(100, 2000)
	const off = 700 // not sector aligned: pieces 700..1024, 1024..1536, ...
	outcomes := map[string]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		m := NewMem(seed)
		writeFile(t, m, "/f", old, true)
		must(t, m.SyncDir("/"))
		f, _ := m.OpenFile("/f", os.O_RDWR, 0)
		f.WriteAt(upd, off)
		m.Crash()
		got := readOrNil(m, "/f")
		if len(got) != len(old) {
			t.Fatalf("seed %d: size %d", seed, len(got))
		}
		kept := 0
		for s := int64(0); s < 4096; s += 512 {
			lo, hi := max(s, off), min(s+512, off+int64(len(upd)))
			if lo >= hi {
				if !bytes.Equal(got[s:s+512], old[s:s+512]) {
					t.Fatalf("seed %d: sector at %d outside the write changed", seed, s)
				}
				continue
			}
			switch {
			case bytes.Equal(got[lo:hi], upd[lo-off:hi-off]):
				kept++
			case !bytes.Equal(got[lo:hi], old[lo:hi]):
				t.Fatalf("seed %d: sector at %d is neither old nor new", seed, s)
			}
		}
		switch kept {
		case 0:
			outcomes["lost"]++
		case 5:
			outcomes["kept"]++
		default:
			outcomes["torn"]++
		}
	}
	if outcomes["lost"] == 0 || outcomes["kept"] == 0 || outcomes["torn"] == 0 {
		t.Fatalf("outcomes %v: each must happen", outcomes)
	}
}

// TestMemHolesAndOrderedTails: independent outcomes can leave a zero hole
// before a kept append; the ordered model only ever leaves a prefix of the
// appends (a torn tail).
func TestMemHolesAndOrderedTails(t *testing.T) {
	var full []byte
	for i := 0; i < 6; i++ {
		full = append(full, pattern(byte(10*i+1), 1000)...)
	}
	holes := 0
	for _, ordered := range []bool{false, true} {
		lengths := map[int]bool{}
		for seed := uint64(1); seed <= 300; seed++ {
			m := NewMem(seed)
			m.SetCrashModel(CrashModel{Keep: 0.4, Torn: 0.3, Ordered: ordered})
			writeFile(t, m, "/f", nil, true)
			must(t, m.SyncDir("/"))
			f, _ := m.OpenFile("/f", os.O_WRONLY, 0)
			for i := 0; i < 6; i++ {
				f.Write(full[i*1000 : (i+1)*1000])
			}
			m.Crash()
			got := readOrNil(m, "/f")
			if ordered {
				if !bytes.Equal(got, full[:len(got)]) {
					t.Fatalf("seed %d: ordered crash left something other than a prefix (%d bytes)", seed, len(got))
				}
				lengths[len(got)] = true
				continue
			}
			for i := 0; i < len(got); i++ {
				if got[i] != full[i] && got[i] != 0 {
					t.Fatalf("seed %d: byte %d is neither written nor zero", seed, i)
				}
				if got[i] == 0 && full[i] != 0 {
					holes++
					break
				}
			}
		}
		if ordered && len(lengths) < 6 {
			t.Fatalf("ordered crashes left only lengths %v", lengths)
		}
	}
	if holes == 0 {
		t.Fatal("no independent crash left a hole")
	}
}

// TestMemDirectoryOperationsNeedSyncDir: undurable creates survive as a
// prefix in order; SyncDir makes them durable; a durable entry whose
// parent directory is not durable is lost with it.
func TestMemDirectoryOperationsNeedSyncDir(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		m := NewMem(seed)
		for _, n := range []string{"/a", "/b", "/c"} {
			writeFile(t, m, n, []byte(n), true)
		}
		m.Crash()
		var got string
		for _, n := range []string{"/a", "/b", "/c"} {
			if b := readOrNil(m, n); b != nil {
				if string(b) != n {
					t.Fatalf("seed %d: %s holds %q", seed, n, b)
				}
				got += n
			}
		}
		if got != "" && got != "/a" && got != "/a/b" && got != "/a/b/c" {
			t.Fatalf("seed %d: surviving creates %q are not a prefix", seed, got)
		}
		seen[got] = true

		m = NewMem(seed)
		writeFile(t, m, "/a", []byte("a"), true)
		must(t, m.SyncDir("/"))
		m.Crash()
		if string(readOrNil(m, "/a")) != "a" {
			t.Fatalf("seed %d: a synced create was lost", seed)
		}

		// /d is not durable in /, so /d/f goes with it.
		m = NewMem(seed)
		must(t, m.MkdirAll("/d", 0o755))
		writeFile(t, m, "/d/f", []byte("f"), true)
		must(t, m.SyncDir("/d"))
		m.Crash()
		if b := readOrNil(m, "/d/f"); b != nil {
			seen["orphan kept"] = true
		} else {
			seen["orphan lost"] = true
		}
	}
	for _, k := range []string{"", "/a", "/a/b", "/a/b/c", "orphan kept", "orphan lost"} {
		if !seen[k] {
			t.Fatalf("outcome %q never happened (%v)", k, seen)
		}
	}
}

// TestMemAtomicReplace: write tmp, fsync, rename over, crash: the old or
// the new content, never a mix or nothing; after SyncDir always the new.
func TestMemAtomicReplace(t *testing.T) {
	outcomes := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		for _, syncDir := range []bool{false, true} {
			m := NewMem(seed)
			writeFile(t, m, "/sb", []byte("old"), true)
			must(t, m.SyncDir("/"))
			writeFile(t, m, "/sb.tmp", []byte("new!"), true)
			must(t, m.Rename("/sb.tmp", "/sb"))
			if syncDir {
				must(t, m.SyncDir("/"))
			}
			m.Crash()
			got := string(readOrNil(m, "/sb"))
			if got != "old" && got != "new!" || syncDir && got != "new!" {
				t.Fatalf("seed %d (dir synced %v): %q", seed, syncDir, got)
			}
			if tmp := readOrNil(m, "/sb.tmp"); tmp != nil && string(tmp) != "new!" {
				t.Fatalf("seed %d: tmp holds %q", seed, tmp)
			}
			outcomes[fmt.Sprintf("%v %s", syncDir, got)]++
		}
	}
	if outcomes["false old"] == 0 || outcomes["false new!"] == 0 {
		t.Fatalf("outcomes %v", outcomes)
	}
}

func TestMemUndurableRemoveComesBack(t *testing.T) {
	back := 0
	for seed := uint64(1); seed <= 50; seed++ {
		m := NewMem(seed)
		writeFile(t, m, "/f", []byte("durable"), true)
		must(t, m.SyncDir("/"))
		f, _ := m.OpenFile("/f", os.O_WRONLY, 0)
		f.Write([]byte("DURABLE, unsynced"))
		must(t, m.Remove("/f"))
		m.Crash()
		if b := readOrNil(m, "/f"); b != nil {
			back++
			if !bytes.HasPrefix(b, []byte("DURABLE")) && !bytes.HasPrefix(b, []byte("durable")) {
				t.Fatalf("seed %d: resurrected content %q", seed, b)
			}
		}
		m = NewMem(seed)
		writeFile(t, m, "/f", []byte("durable"), true)
		must(t, m.SyncDir("/"))
		must(t, m.Remove("/f"))
		must(t, m.SyncDir("/"))
		m.Crash()
		if readOrNil(m, "/f") != nil {
			t.Fatalf("seed %d: a durable remove came back", seed)
		}
	}
	if back == 0 || back == 50 {
		t.Fatalf("an undurable remove came back %d times of 50", back)
	}
}

func TestMemDirectoryRenameMovesTheSubtreeDurably(t *testing.T) {
	m := NewMem(3)
	must(t, m.MkdirAll("/p/wal", 0o755))
	must(t, m.SyncDir("/"))
	must(t, m.SyncDir("/p"))
	writeFile(t, m, "/p/wal/1", []byte("one"), true)
	must(t, m.SyncDir("/p/wal"))
	must(t, m.Rename("/p/wal", "/p/wal.aside"))
	must(t, m.SyncDir("/p"))
	m.Crash()
	if got := string(readOrNil(m, "/p/wal.aside/1")); got != "one" {
		t.Fatalf("after a durable directory rename: %q", got)
	}
	if _, err := m.Stat("/p/wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old directory name: %v", err)
	}
}

// TestMemDirectoryRenameTakesItsPendingEntries: a file created in a
// directory and not yet durable belongs to that directory: after the
// directory is renamed (durably) and a new one made under the old name, a
// crash never puts the file in the new one (whole-node simulator: a
// re-created partition's directory got the deleted incarnation's segment
// back after a power loss).
func TestMemDirectoryRenameTakesItsPendingEntries(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		m := NewMem(seed)
		must(t, m.MkdirAll("/p/0", 0o755))
		must(t, m.SyncDir("/"))
		must(t, m.SyncDir("/p"))
		writeFile(t, m, "/p/0/old", []byte("old"), true) // its entry not durable
		must(t, m.Rename("/p/0", "/p/0.removing"))
		must(t, m.SyncDir("/p"))
		must(t, m.MkdirAll("/p/0", 0o755))
		writeFile(t, m, "/p/0/new", []byte("new"), true)
		must(t, m.SyncDir("/p/0"))
		must(t, m.SyncDir("/p"))
		m.Crash()
		if got := readOrNil(m, "/p/0/old"); got != nil {
			t.Fatalf("seed %d: the renamed directory's pending entry came back in the new one: %q", seed, got)
		}
		if got := string(readOrNil(m, "/p/0/new")); got != "new" {
			t.Fatalf("seed %d: the new directory's durable file: %q", seed, got)
		}
		if got := readOrNil(m, "/p/0.removing/old"); got != nil && string(got) != "old" {
			t.Fatalf("seed %d: the renamed directory's entry holds %q", seed, got)
		}
	}
}

// TestMemFsyncFailure: EIO, the page cache still shows the write, a later
// sync succeeds but what the failure dropped stays lost (fsyncgate).
func TestMemFsyncFailure(t *testing.T) {
	lost, kept := 0, 0
	for seed := uint64(1); seed <= 100; seed++ {
		m := NewMem(seed)
		m.SetCrashModel(CrashModel{Keep: 0.5})
		writeFile(t, m, "/f", []byte("aaaa"), true)
		must(t, m.SyncDir("/"))
		f, _ := m.OpenFile("/f", os.O_RDWR, 0)
		f.WriteAt([]byte("bbbb"), 4)
		must(t, m.InjectSyncFailure("/f"))
		if err := f.Datasync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("seed %d: injected fsync failure: %v", seed, err)
		}
		if got := string(readOrNil(m, "/f")); got != "aaaabbbb" {
			t.Fatalf("seed %d: page cache after the failure: %q", seed, got)
		}
		must(t, f.Sync())
		f.WriteAt([]byte("cc"), 8)
		must(t, f.Sync())
		m.Crash()
		switch got := string(readOrNil(m, "/f")); got {
		case "aaaa\x00\x00\x00\x00cc":
			lost++
		case "aaaabbbbcc":
			kept++
		default:
			t.Fatalf("seed %d: after the crash %q", seed, got)
		}
	}
	if lost == 0 || kept == 0 {
		t.Fatalf("lost %d kept %d", lost, kept)
	}
	// A failed SyncDir leaves the entry undurable; the next one works.
	m := NewMem(1)
	writeFile(t, m, "/f", nil, true)
	must(t, m.InjectSyncFailure("/"))
	if err := m.SyncDir("/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected SyncDir failure: %v", err)
	}
	if _, n := m.Pending(); n != 1 {
		t.Fatalf("%d directory operations pending after a failed SyncDir", n)
	}
	must(t, m.SyncDir("/"))
	if _, n := m.Pending(); n != 0 {
		t.Fatalf("%d directory operations pending after SyncDir", n)
	}
	// Drawn from the seed.
	m.SetFaults(Faults{SyncFail: 1})
	f, _ := m.OpenFile("/f", os.O_WRONLY, 0)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncFail=1: %v", err)
	}
	if err := m.SyncDir("/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncFail=1 SyncDir: %v", err)
	}
	if m.Stats().SyncFailures != 3 {
		t.Fatalf("stats %+v", m.Stats())
	}
}

func TestMemFullDisk(t *testing.T) {
	m := NewMem(1)
	m.SetCapacity(1000)
	f, err := m.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o644)
	must(t, err)
	if _, err := f.Write(pattern(1, 600)); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write(pattern(2, 600))
	if n != 400 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the capacity: %d %v", n, err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/f" {
		t.Fatalf("ENOSPC is not a PathError naming the file: %v", err)
	}
	if m.Used() != 1000 {
		t.Fatalf("used %d", m.Used())
	}
	// Overwriting held bytes needs no space; growth does.
	if _, err := f.WriteAt(pattern(3, 100), 0); err != nil {
		t.Fatalf("overwrite on a full disk: %v", err)
	}
	if err := f.Truncate(1001); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("growing truncate on a full disk: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync on a full disk: %v", err)
	}
	got := readOrNil(m, "/f")
	want := append(append(pattern(3, 100), pattern(1, 600)[100:]...), pattern(2, 400)...)
	if !bytes.Equal(got, want) {
		t.Fatal("content after ENOSPC differs")
	}
	// Space held by a removed file comes back when its last handle closes.
	must(t, m.Remove("/f"))
	if m.Used() != 1000 {
		t.Fatalf("used %d with the removed file still open", m.Used())
	}
	f.Close()
	if m.Used() != 0 {
		t.Fatalf("used %d after the close", m.Used())
	}
	writeFile(t, m, "/g", pattern(4, 1000), false)
	// Drawn from the seed: the write fails whole.
	m.SetCapacity(0)
	m.SetFaults(Faults{NoSpace: 1})
	g, _ := m.OpenFile("/g", os.O_WRONLY, 0)
	if n, err := g.WriteAt([]byte("x"), 5000); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("NoSpace=1: %d %v", n, err)
	}
	if st, _ := m.Stat("/g"); st.Size() != 1000 {
		t.Fatalf("size %d after a refused write", st.Size())
	}
}

func TestMemCorruption(t *testing.T) {
	m := NewMem(5)
	writeFile(t, m, "/f", pattern(1, 1000), true)
	must(t, m.FlipByte("/f", 10))
	got := readOrNil(m, "/f")
	want := pattern(1, 1000)
	if got[10] != want[10]^0xFF || !bytes.Equal(got[:10], want[:10]) || !bytes.Equal(got[11:], want[11:]) {
		t.Fatal("FlipByte did not flip exactly byte 10")
	}
	must(t, m.SyncDir("/"))
	m.Crash()
	if got := readOrNil(m, "/f"); got[10] != want[10]^0xFF {
		t.Fatal("the flip did not reach the durable content")
	}
	name, off, ok := m.FlipRandomByte()
	if !ok || name != "/f" || off < 0 || off >= 1000 {
		t.Fatalf("FlipRandomByte: %s %d %v", name, off, ok)
	}
	// Drawn per read: one byte in the range read.
	m = NewMem(6)
	writeFile(t, m, "/f", pattern(1, 1000), true)
	m.SetFaults(Faults{CorruptRead: 1})
	f, _ := m.Open("/f")
	buf := make([]byte, 100)
	f.ReadAt(buf, 300)
	diff := 0
	for i := range buf {
		if buf[i] != want[300+i] {
			diff++
		}
	}
	m.SetFaults(Faults{})
	all := readOrNil(m, "/f")
	if diff != 1 || bytes.Equal(all[:300], want[:300]) == false || bytes.Equal(all[400:], want[400:]) == false {
		t.Fatalf("a corrupt read flipped %d bytes of its range, or outside it", diff)
	}
	if m.Stats().Flips != 1 {
		t.Fatalf("stats %+v", m.Stats())
	}
}

// fingerprint hashes the whole visible tree (names, kinds, contents).
func fingerprint(t *testing.T, m *Mem) uint64 {
	h := fnv.New64a()
	var walk func(dir string)
	walk = func(dir string) {
		des, err := m.ReadDir(dir)
		must(t, err)
		for _, de := range des {
			p := path.Join(dir, de.Name())
			fmt.Fprintf(h, "%s %v\n", p, de.IsDir())
			if de.IsDir() {
				walk(p)
			} else {
				h.Write(readOrNil(m, p))
			}
		}
	}
	walk("/")
	return h.Sum64()
}

// memWorkload drives m with every kind of operation, fault and crash,
// from a PRNG of its own; it returns a trace of results.
func memWorkload(t *testing.T, m *Mem, seed uint64, steps int) string {
	rng := rand.New(rand.NewPCG(seed, 99))
	m.SetFaults(Faults{SyncFail: 0.05, NoSpace: 0.02, CorruptRead: 0.01})
	m.SetCapacity(64 << 10)
	var trace bytes.Buffer
	files := []string{"/d/a", "/d/b", "/d/c", "/e/a", "/x"}
	var open []File
	for i := 0; i < steps; i++ {
		name := files[rng.IntN(len(files))]
		var err error
		switch rng.IntN(10) {
		case 0:
			err = m.MkdirAll(path.Dir(name), 0o755)
		case 1:
			var f File
			f, err = m.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err == nil {
				open = append(open, f)
			}
		case 2, 3:
			if len(open) > 0 {
				_, err = open[rng.IntN(len(open))].WriteAt(pattern(byte(i), rng.IntN(3000)), rng.Int64N(8000))
			}
		case 4:
			if len(open) > 0 {
				err = open[rng.IntN(len(open))].Sync()
			}
		case 5:
			err = m.SyncDir(path.Dir(name))
		case 6:
			err = m.Rename(name, files[rng.IntN(len(files))])
		case 7:
			err = m.Remove(name)
		case 8:
			if len(open) > 0 {
				b := make([]byte, 500)
				var n int
				n, err = open[rng.IntN(len(open))].ReadAt(b, rng.Int64N(4000))
				trace.Write(b[:n])
			}
		case 9:
			if rng.IntN(5) == 0 {
				m.Crash()
				open = nil
				fmt.Fprintf(&trace, "crash %x\n", fingerprint(t, m))
			}
		}
		fmt.Fprintf(&trace, "%d %v\n", i, err)
	}
	fmt.Fprintf(&trace, "%+v %x", m.Stats(), fingerprint(t, m))
	return trace.String()
}

func TestMemDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		a := memWorkload(t, NewMem(seed), seed, 2000)
		b := memWorkload(t, NewMem(seed), seed, 2000)
		if a != b {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if c := memWorkload(t, NewMem(seed+1000), seed, 2000); c == a {
			t.Fatalf("seed %d: a different Mem seed gave the same run", seed)
		}
	}
	m := NewMem(1)
	memWorkload(t, m, 1, 5000)
	st := m.Stats()
	if st.Crashes == 0 || st.WritesKept == 0 || st.WritesLost == 0 || st.WritesTorn == 0 || st.DirOpsKept == 0 ||
		st.DirOpsLost == 0 || st.SyncFailures == 0 || st.NoSpace == 0 || st.Flips == 0 {
		t.Fatalf("the workload did not exercise everything: %+v", st)
	}
}

// TestMemConcurrentUse: run with -race; handles on several goroutines.
func TestMemConcurrentUse(t *testing.T) {
	m := NewMem(1)
	must(t, m.MkdirAll("/d", 0o755))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("/d/%d", g)
			f, err := m.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < 200; i++ {
				f.Write(pattern(byte(g), 100))
				if i%10 == 0 {
					f.Sync()
					m.SyncDir("/d")
					m.ReadDir("/d")
				}
			}
			f.Close()
		}()
	}
	wg.Wait()
	for g := 0; g < 4; g++ {
		if st, err := m.Stat(fmt.Sprintf("/d/%d", g)); err != nil || st.Size() != 20000 {
			t.Fatalf("file %d: %v %v", g, st, err)
		}
	}
}

// TestMemPowerOffAfter: the power fails after n operations; everything
// then fails without effect until Crash, which resolves what was
// unsynced; Unsynced and UnsyncedFiles name the files at risk, a removed
// one included while its removal is not durable.
func TestMemPowerOffAfter(t *testing.T) {
	m := NewMem(1)
	writeFile(t, m, "/f", []byte("durable"), true)
	writeFile(t, m, "/gone", []byte("old"), true)
	must(t, m.SyncDir("/"))
	f, err := m.OpenFile("/f", os.O_RDWR, 0)
	must(t, err)
	g, err := m.OpenFile("/gone", os.O_RDWR, 0)
	must(t, err)
	g.WriteAt([]byte("OLD"), 0)
	g.Close()
	must(t, m.Remove("/gone"))
	m.PowerOffAfter(1)
	if _, err := f.WriteAt([]byte("D"), 0); err != nil {
		t.Fatalf("the one operation left: %v", err)
	}
	if m.PoweredOff() {
		t.Fatal("powered off before the next operation")
	}
	if err := f.Sync(); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("sync after the cut: %v", err)
	}
	for _, err := range []error{
		m.SyncDir("/"), m.Remove("/f"), m.Rename("/f", "/h"), m.MkdirAll("/d", 0o755), m.Truncate("/f", 0),
	} {
		if !errors.Is(err, ErrPoweredOff) {
			t.Fatalf("after the cut: %v", err)
		}
	}
	if _, err := m.ReadFile("/f"); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("read after the cut: %v", err)
	}
	if !m.PoweredOff() || m.Unsynced("/f") != 1 || m.Unsynced("/nope") != 0 {
		t.Fatalf("powered off %v, unsynced %d", m.PoweredOff(), m.Unsynced("/f"))
	}
	if got := fmt.Sprint(m.UnsyncedFiles()); got != "[/f /gone]" {
		t.Fatalf("UnsyncedFiles %s", got)
	}
	m.Crash()
	if m.PoweredOff() {
		t.Fatal("still powered off after Crash")
	}
	if got := string(readOrNil(m, "/f")); got != "durable" && got != "Durable" {
		t.Fatalf("after the crash: %q", got)
	}
	if got := readOrNil(m, "/gone"); got != nil && string(got) != "old" && string(got) != "OLD" {
		t.Fatalf("the removed file came back as %q", got)
	}
	if len(m.UnsyncedFiles()) != 0 {
		t.Fatalf("UnsyncedFiles after a crash: %v", m.UnsyncedFiles())
	}
	// A negative count cancels.
	m.PowerOffAfter(0)
	m.PowerOffAfter(-1)
	must(t, m.SyncDir("/"))
}

// TestMemProcessDied: a process killed inside a sequence of operations
// (PowerOffAfter) keeps what it did before the cut, synced or not, loses
// the operations that failed, and its handles go stale.
func TestMemProcessDied(t *testing.T) {
	m := NewMem(1)
	writeFile(t, m, "/f", []byte("durable"), true)
	must(t, m.SyncDir("/"))
	f, err := m.OpenFile("/f", os.O_RDWR, 0)
	must(t, err)
	m.PowerOffAfter(1)
	if _, err := f.WriteAt([]byte("D"), 0); err != nil {
		t.Fatalf("the one operation left: %v", err)
	}
	if _, err := f.WriteAt([]byte("XX"), 1); !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("write after the cut: %v", err)
	}
	m.ProcessDied()
	if m.PoweredOff() {
		t.Fatal("still cut off after ProcessDied")
	}
	if got := string(readOrNil(m, "/f")); got != "Durable" {
		t.Fatalf("after the process died: %q, want the unsynced write before the cut and not the one after", got)
	}
	if m.Unsynced("/f") != 1 {
		t.Fatalf("unsynced operations %d: the page cache keeps the write", m.Unsynced("/f"))
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, ErrStale) {
		t.Fatalf("a handle of the dead process: %v", err)
	}
	m.Crash()
	if got := string(readOrNil(m, "/f")); got != "durable" && got != "Durable" {
		t.Fatalf("a power loss after it: %q", got)
	}
}

// TestMemKillAfterTearsTheWriteItLandsIn: a process killed inside a write
// keeps a prefix of it that ends at a page boundary of the file, never all
// of it; ProcessDied then keeps that prefix.
func TestMemKillAfterTearsTheWriteItLandsIn(t *testing.T) {
	seen := map[int]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		m := NewMem(seed)
		f, err := m.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		if _, err := f.Write(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		m.KillAfter(0)
		n, err := f.Write(bytes.Repeat([]byte{'x'}, 3*memPageBytes))
		if !errors.Is(err, ErrPoweredOff) || (100+n)%memPageBytes != 0 && n != 0 || n >= 3*memPageBytes {
			t.Fatalf("seed %d: killed write wrote %d bytes (%v): want a prefix to a page boundary, not all, and the cut", seed, n, err)
		}
		m.ProcessDied()
		if got := len(readOrNil(m, "/f")); got != 100+n {
			t.Fatalf("seed %d: the file holds %d bytes after the death, the write reported %d", seed, got, n)
		}
		seen[n] = true
	}
	if len(seen) < 3 {
		t.Fatalf("killed writes kept only %v: the prefix is not drawn", seen)
	}
	// A cut of PowerOffAfter tears nothing: the operation fails whole.
	m := NewMem(1)
	f, err := m.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	m.PowerOffAfter(0)
	if n, err := f.Write(bytes.Repeat([]byte{'x'}, 3*memPageBytes)); n != 0 || !errors.Is(err, ErrPoweredOff) {
		t.Fatalf("power cut write: %d, %v", n, err)
	}
}
