//go:build linux

package partitions

import (
	"os"
	"syscall"
)

// datasync flushes file data (and the metadata needed to read it back) without forcing an inode
// timestamp update: fdatasync(2).
func datasync(f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var syncErr error
	if err := conn.Control(func(fd uintptr) {
		for {
			syncErr = syscall.Fdatasync(int(fd))
			if syncErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return syncErr
}
