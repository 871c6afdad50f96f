package vfs

import (
	"io/fs"
	"os"
)

// OS is the real file system: every call is the package os call of the
// same name (SyncDir: open, fsync, close).
var OS FS = osFS{}

type osFS struct{}

// osFile is an *os.File plus Datasync; pointer-shaped, so it sits in the
// File interface without an allocation.
type osFile struct{ *os.File }

func (f osFile) Datasync() error { return datasync(f.File) }

// StartWriteback begins writing [off, off+n) to the device without
// waiting (Writebacker).
func (f osFile) StartWriteback(off, n int64) error { return startWriteback(f.File, off, n) }

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) ReadFile(name string) ([]byte, error)         { return os.ReadFile(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Truncate(name string, size int64) error       { return os.Truncate(name, size) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SyncsInParallel reports whether the storage code may run fsyncs of one
// file system on several goroutines at once: true for OS (and a file
// system that says so with a SyncsInParallel() bool method). Mem is
// deterministic only when driven from one goroutine (its faults are drawn
// in call order), so a simulator's files are synced one after another.
func SyncsInParallel(fsys FS) bool {
	p, ok := fsys.(interface{ SyncsInParallel() bool })
	return ok && p.SyncsInParallel()
}

func (osFS) SyncsInParallel() bool { return true }

// Writebacker is a File that can begin writing a range of its dirty pages
// to the device without waiting for them (OS: sync_file_range). It is a
// hint: nothing becomes durable by it.
type Writebacker interface {
	StartWriteback(off, n int64) error
}
