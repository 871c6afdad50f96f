package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"syscall"
)

// memFile is an open Mem file (or directory, read-only: its Sync is
// SyncDir).
type memFile struct {
	m                   *Mem
	ino                 *inode
	name                string // as opened (Name)
	path                string // cleaned
	gen                 uint64
	pos                 int64
	read, write, append bool
	closed              bool
}

// check validates the handle under m.mu (and counts the operation
// against PowerOffAfter).
func (f *memFile) check(op string) error {
	if err := f.m.powerLocked(op, f.name); err != nil {
		return err
	}
	switch {
	case f.closed:
		return perr(op, f.name, fs.ErrClosed)
	case f.gen != f.m.gen:
		return perr(op, f.name, ErrStale)
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("close"); err != nil {
		return err
	}
	f.closed = true
	f.ino.open--
	f.m.releaseIfDead(f.ino)
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	return infoOf(path.Base(f.path), f.ino), nil
}

// readable and writable check the handle's mode (after check).
func (f *memFile) readable(op string) error {
	switch {
	case f.ino.dir:
		return perr(op, f.name, syscall.EISDIR)
	case !f.read:
		return perr(op, f.name, syscall.EBADF)
	}
	return nil
}

// killedHere: a KillAfter cut landed in this call on a handle that could
// write (Mem.killedWriteLocked).
func (f *memFile) killedHere() bool {
	return f.m.killTears && f.m.cutNow && !f.closed && f.gen == f.m.gen && f.write
}

func (f *memFile) writable(op string) error {
	if !f.write {
		return perr(op, f.name, syscall.EBADF)
	}
	return nil
}

// readAtLocked copies from off; n < len(p) only at the end of the file.
func (f *memFile) readAtLocked(p []byte, off int64) int {
	data := f.ino.data
	if off >= int64(len(data)) {
		return 0
	}
	f.m.maybeCorruptLocked(f.ino, off, int64(len(p)))
	return copy(p, data[off:])
}

func (f *memFile) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil // as os: no system call
	}
	if err := f.readable("read"); err != nil {
		return 0, err
	}
	n := f.readAtLocked(p, f.pos)
	f.pos += int64(n)
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, perr("readat", f.name, errors.New("negative offset"))
	}
	if len(p) == 0 {
		return 0, nil // as os: no system call
	}
	if err := f.readable("read"); err != nil {
		return 0, err
	}
	n := f.readAtLocked(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("write"); err != nil {
		if f.killedHere() {
			if f.append {
				f.pos = int64(len(f.ino.data))
			}
			n := f.m.killedWriteLocked(f.ino, f.pos, p)
			f.pos += int64(n)
			return n, err
		}
		return 0, err
	}
	if err := f.writable("write"); err != nil {
		return 0, err
	}
	if f.append {
		f.pos = int64(len(f.ino.data))
	}
	n, err := f.m.writeLocked(f.ino, f.pos, p)
	f.pos += int64(n)
	if err != nil {
		return n, perr("write", f.name, err)
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("write"); err != nil {
		if f.killedHere() && !f.append && off >= 0 {
			return f.m.killedWriteLocked(f.ino, off, p), err
		}
		return 0, err
	}
	switch {
	case f.append:
		return 0, errors.New("vfs: invalid use of WriteAt on file opened with O_APPEND")
	case off < 0:
		return 0, perr("writeat", f.name, errors.New("negative offset"))
	case len(p) == 0:
		return 0, nil // as os: no system call
	}
	if err := f.writable("write"); err != nil {
		return 0, err
	}
	n, err := f.m.writeLocked(f.ino, off, p)
	if err != nil {
		return n, perr("write", f.name, err)
	}
	return n, nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("seek"); err != nil {
		return 0, err
	}
	var pos int64
	switch whence {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = f.pos + offset
	case io.SeekEnd:
		pos = int64(len(f.ino.data)) + offset
	default:
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	if pos < 0 {
		return 0, perr("seek", f.name, syscall.EINVAL)
	}
	f.pos = pos
	return pos, nil
}

func (f *memFile) Sync() error { return f.sync("sync") }

func (f *memFile) Datasync() error { return f.sync("fdatasync") }

func (f *memFile) sync(op string) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check(op); err != nil {
		return err
	}
	if f.ino.dir {
		return f.m.syncDirLocked(f.path, f.name, f.ino)
	}
	if err := f.m.syncFileLocked(f.ino); err != nil {
		return perr(op, f.name, err)
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if err := f.writable("truncate"); err != nil {
		return err
	}
	if f.ino.dir || size < 0 {
		return perr("truncate", f.name, syscall.EINVAL)
	}
	if err := f.m.truncateLocked(f.ino, size); err != nil {
		return perr("truncate", f.name, err)
	}
	return nil
}
