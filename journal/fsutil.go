// Package journal holds the durable files of a consensus group: the
// metadata WAL (journal.wal), the two-slot superblock (superblock.a/.b)
// and the application snapshot (snapshot.bin). Every write that must
// survive a crash is fsynced before the call returns; files replaced
// atomically go through temp file → fsync → rename → directory fsync.
package journal

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// replaceFile durably replaces path with data: write path.tmp, fsync it,
// rename over path, fsync the directory. A crash at any point leaves
// either the old file or the new one (plus possibly a stale .tmp, which
// readers ignore and the next write overwrites).
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s over %s: %w", tmp, path, err)
	}
	return syncDir(filepath.Dir(path))
}

// ensureDir creates dir (and parents) and fsyncs its parent when created.
func ensureDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create dir %s: %w", dir, err)
	}
	return syncDir(filepath.Dir(dir))
}
