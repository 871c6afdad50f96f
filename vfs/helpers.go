package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Glob returns the paths matching pattern (filepath.Match syntax in any
// element, like filepath.Glob), sorted within each directory. A missing
// directory matches nothing; a malformed pattern is an error.
func Glob(fsys FS, pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	dir, elem := filepath.Split(pattern)
	dir = filepath.Clean(dir) // "" becomes "."
	dirs := []string{dir}
	if hasMeta(dir) {
		var err error
		if dirs, err = Glob(fsys, dir); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, d := range dirs {
		if !hasMeta(elem) {
			p := filepath.Join(d, elem)
			if _, err := fsys.Stat(p); err == nil {
				out = append(out, p)
			}
			continue
		}
		entries, err := fsys.ReadDir(d)
		if err != nil {
			continue // not a directory, or gone: matches nothing (as filepath.Glob)
		}
		for _, e := range entries {
			if ok, _ := filepath.Match(elem, e.Name()); ok {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out, nil
}

func hasMeta(path string) bool { return strings.ContainsAny(path, `*?[\`) }

// WriteFile writes data to name (created or truncated), without a sync.
func WriteFile(fsys FS, name string, data []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// MkdirAllDurable creates path and any missing parents, like MkdirAll,
// and makes every level it created durable: each new directory's entry
// is synced in its parent (a power loss cannot then drop a directory, and
// with it every file synced under it). Nothing is synced when path exists.
// When a sync fails, the levels it created are removed again (innermost
// first, while empty): left in place, the next call would find them and
// sync nothing, and a power loss would drop them with everything synced
// under them (metadata simulator finding M17). A level a concurrent call
// also needs may be found before it is synced: trees that several
// goroutines fill use MkdirAllDurableUnder.
func MkdirAllDurable(fsys FS, path string, perm fs.FileMode) error {
	var created []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		_, err := fsys.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create %s: %w", path, err)
		}
		created = append(created, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(path, perm); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	for i := len(created) - 1; i >= 0; i-- { // outermost first
		if err := fsys.SyncDir(filepath.Dir(created[i])); err != nil {
			for _, c := range created { // innermost first
				if fsys.Remove(c) != nil {
					break
				}
			}
			return fmt.Errorf("create %s: sync %s: %w", path, filepath.Dir(created[i]), err)
		}
	}
	return nil
}

// MkdirAllDurableUnder creates path (below root, a directory already
// durable) like MkdirAll and syncs the entry of every level between root
// and path in its parent, whether this call created the level or found it.
// A level found existing may have been made by a call whose directory
// sync failed, or by a concurrent call that has not synced it yet:
// MkdirAllDurable skips it, and a power loss then drops it with everything
// synced under it (metadata simulator finding M17: a partition directory
// whose parent's entry was never synced vanished while the node's
// superblock log kept the group's state).
func MkdirAllDurableUnder(fsys FS, root, path string, perm fs.FileMode) error {
	root, path = filepath.Clean(root), filepath.Clean(path)
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("create %s: not below %s", path, root)
	}
	if err := fsys.MkdirAll(path, perm); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	var levels []string
	for p := path; p != root; p = filepath.Dir(p) {
		levels = append(levels, p)
	}
	for i := len(levels) - 1; i >= 0; i-- { // outermost first
		if err := fsys.SyncDir(filepath.Dir(levels[i])); err != nil {
			return fmt.Errorf("create %s: sync %s: %w", path, filepath.Dir(levels[i]), err)
		}
	}
	return nil
}

// RemovingSuffix names a tree RemoveAllAtomically is removing: a crash can
// leave it behind; its owner removes such leftovers.
const RemovingSuffix = ".removing"

// RemoveAllAtomically removes dir and everything under it so that a crash
// at any point leaves all of it or none of it under its name (RemoveAll
// unlinks one entry at a time, in no useful order: a crash in the middle
// leaves a partial tree behind). dir is first renamed to dir +
// RemovingSuffix and the rename synced in the parent, then the renamed
// tree is removed. Nil when dir does not exist.
func RemoveAllAtomically(fsys FS, dir string) error {
	dir = filepath.Clean(dir)
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	doomed := dir + RemovingSuffix
	if err := fsys.RemoveAll(doomed); err != nil { // a leftover of an earlier crash
		return fmt.Errorf("remove %s: %w", doomed, err)
	}
	if err := fsys.Rename(dir, doomed); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("remove %s: sync %s: %w", dir, filepath.Dir(dir), err)
	}
	if err := fsys.RemoveAll(doomed); err != nil {
		return fmt.Errorf("remove %s: %w", doomed, err)
	}
	return nil
}

// BootIDPath is where Linux publishes the id of the current boot. It is
// read through an FS, so a simulated disk (Mem) fakes a reboot by writing
// a new id there.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// BootIDBytes is the length of a boot id (a UUID string).
const BootIDBytes = 36

// BootID is the id of the boot of the machine fsys belongs to, "" when it
// is unknown (no such file, or not a UUID). Two reads return the same id
// until the machine reboots: a changed id means every write not synced
// before the reboot may be lost.
func BootID(fsys FS) string {
	b, err := fsys.ReadFile(BootIDPath)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if len(id) != BootIDBytes {
		return ""
	}
	return id
}
