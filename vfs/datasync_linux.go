package vfs

import (
	"os"
	"syscall"
)

// datasync flushes file data (and the metadata needed to read it back)
// without forcing an inode timestamp update: fdatasync(2), retried on
// EINTR. It goes through SyscallConn rather than Fd, which would switch
// the descriptor to blocking mode.
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
	if syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syncErr}
	}
	return nil
}
