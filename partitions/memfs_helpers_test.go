package partitions

import (
	"fmt"
	"os"
	"path"
	"testing"

	"github.com/lodestream/lodestream/vfs"
)

// memPartitionDir creates dir on m durably, as the node does before it opens a partition's log.
func memPartitionDir(t *testing.T, m *vfs.Mem, dir string) {
	t.Helper()
	if err := m.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/"; d = path.Dir(d) {
		if err := m.SyncDir(path.Dir(d)); err != nil {
			t.Fatal(err)
		}
	}
}

// writeBootID gives the simulated machine a boot id (a new one per boot fakes a reboot for the offset
// reservation, which reads it through the log's file system).
func writeBootID(m *vfs.Mem, boot int) error {
	if err := m.MkdirAll("/proc/sys/kernel/random", 0o755); err != nil {
		return err
	}
	f, err := m.OpenFile(vfs.BootIDPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "00000000-0000-0000-0000-%012d\n", boot); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
