package vfs

import (
	"os"
	"syscall"
)

// datasync flushes file data (and the metadata needed to read it back).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
