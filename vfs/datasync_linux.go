package vfs

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// startWriteback asks the kernel to begin writing the dirty pages of
// [off, off+n) to the device without waiting for them:
// sync_file_range(2) with SYNC_FILE_RANGE_WRITE. It makes nothing durable
// (no metadata, no device cache flush); a later fdatasync finds less to
// write.
func startWriteback(f *os.File, off, n int64) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := conn.Control(func(fd uintptr) {
		for {
			werr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
			if werr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if werr != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: werr}
	}
	return nil
}
