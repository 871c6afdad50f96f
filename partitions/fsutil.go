package partitions

import (
	"fmt"
	"os"

	"github.com/lodestream/lodestream/vfs"
)

// syncDir makes directory entries (created, renamed or removed files) durable.
func syncDir(fsys vfs.FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file and a rename; with durable set the
// file and its directory are synced so the new content survives a crash.
func writeFileAtomic(fsys vfs.FS, dir, path string, data []byte, durable bool) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		fsys.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			fsys.Remove(tmp)
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if durable {
		return syncDir(fsys, dir)
	}
	return nil
}
