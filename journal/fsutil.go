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

	"github.com/lodestream/lodestream/vfs"
)

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(fsys vfs.FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// datasync flushes file data (and the metadata needed to read it back):
// fdatasync where the platform has it.
func datasync(f vfs.File) error { return f.Datasync() }

// replaceFile durably replaces path with data: write path.tmp, fsync it,
// rename over path, fsync the directory. A crash at any point leaves
// either the old file or the new one (plus possibly a stale .tmp, which
// readers ignore and the next write overwrites).
func replaceFile(fsys vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
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
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s over %s: %w", tmp, path, err)
	}
	return syncDir(fsys, filepath.Dir(path))
}

// ensureDir creates dir (and parents), each created level synced in its
// parent.
func ensureDir(fsys vfs.FS, dir string) error {
	return vfs.MkdirAllDurable(fsys, dir, 0o755)
}
