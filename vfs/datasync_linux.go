package vfs

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// datasync flushes file data (and the metadata needed to read it back)
// without forcing an inode timestamp update: fdatasync(2), retried on
// EINTR.
func datasync(f *os.File) error {
	return onDescriptor(f, "fdatasync", func(fd int) error { return syscall.Fdatasync(fd) })
}

// startWriteback asks the kernel to begin writing the dirty pages of
// [off, off+n) to the device without waiting for them:
// sync_file_range(2) with SYNC_FILE_RANGE_WRITE. It makes nothing durable
// (no metadata, no device cache flush); a later fdatasync finds less to
// write.
func startWriteback(f *os.File, off, n int64) error {
	return onDescriptor(f, "sync_file_range", func(fd int) error {
		return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// onDescriptor runs call on f's descriptor, retried on EINTR. It goes
// through SyscallConn rather than Fd, which would switch the descriptor to
// blocking mode.
func onDescriptor(f *os.File, op string, call func(fd int) error) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var callErr error
	if err := conn.Control(func(fd uintptr) {
		for {
			callErr = call(int(fd))
			if callErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if callErr != nil {
		return &os.PathError{Op: op, Path: f.Name(), Err: callErr}
	}
	return nil
}
