// Package vfs is the file-system seam of the durable storage code: an FS
// interface with what journal/ and partitions/ need, OS (a thin wrapper over package os)
// and Mem (an in-memory file system for deterministic power-loss and
// fault simulation).
//
// # The Mem model
//
// Mem keeps, per file (inode), its current content (what reads return: the
// page cache) and its durable content (what survives a power loss), and
// the list of unsynced operations (writes and truncations) between them.
// File.Sync and File.Datasync make the file's content durable (both: a
// file's size is part of its data). They do not make its name durable.
//
// Directory entries (create, mkdir, rename, remove) are operations on the
// parent directory; RemoveAll is one remove per entry under the path,
// deepest first, then the path itself (one operation for PowerOffAfter). Each is durable only once SyncDir of that parent
// succeeded (for a rename: of either parent). Undurable directory
// operations are kept in one global order; at a crash a prefix of them in
// that order survives (metadata journals commit in order, as ext4's
// does), chosen by the PRNG. An entry whose parent directory did not
// survive is lost with it (no lost+found). This is stricter than ext4,
// whose journal commit makes every earlier metadata operation durable:
// code must sync every directory it changed.
//
// Crash (power loss) resolves every surviving file from its durable
// content plus its unsynced operations, each of which, by the seeded
// PRNG, is kept, lost, or torn: a torn write keeps some of its
// sector-aligned pieces (512 bytes, SetSectorSize; any subset, with
// CrashModel.Ordered a prefix). Bytes between the old end of the file and
// a kept piece further on read as zeros (a hole, as after a delayed allocation). With
// CrashModel.Ordered, the unsynced operations of all files survive as a
// prefix in global write order, the last one possibly torn (a device
// that writes back in order: torn tails, never holes). After Crash every
// open File fails (ErrStale) and what the file system holds is durable.
//
// Faults, explicit or drawn from the seed (SetFaults):
//   - a failed fsync (File.Sync, File.Datasync, SyncDir) returns EIO. For
//     a file, its unsynced operations are then resolved at once as by a
//     crash (each kept or lost), and forgotten: reads still return the
//     current content, but a later successful Sync does not write the
//     lost part (Linux marks the dirty pages clean after a writeback
//     error). A failed SyncDir leaves the directory's operations
//     undurable.
//   - a full disk: with a capacity (SetCapacity), writes and truncations
//     that would grow the bytes held beyond it write what fits and fail
//     with ENOSPC (errors.Is(err, syscall.ENOSPC)); also drawn per write.
//   - corruption: FlipByte flips one stored byte of a file (current and
//     durable content); drawn per read, the flip lands in the range read.
//   - a power cut inside a sequence of calls: PowerOffAfter(n) fails
//     every operation after the next n (ErrPoweredOff, nothing changes)
//     until Crash.
//
// Mem is safe for concurrent use (one mutex), and deterministic when
// driven from one goroutine: no clocks, no goroutines, and nothing
// observable depends on map iteration order (listings are sorted, crash
// draws follow sorted paths).
package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// FS is the file-system surface of the durable storage code.
type FS interface {
	// OpenFile opens name like os.OpenFile (O_RDONLY, O_WRONLY, O_RDWR,
	// O_CREATE, O_EXCL, O_TRUNC, O_APPEND).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	ReadFile(name string) ([]byte, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	// RemoveAll removes name and everything under it, like os.RemoveAll
	// (nil when name does not exist).
	RemoveAll(name string) error
	// Truncate changes the size of the named file (not synced).
	Truncate(name string, size int64) error
	MkdirAll(path string, perm fs.FileMode) error
	// ReadDir lists a directory sorted by name, like os.ReadDir.
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the directory's entries (creates, renames, removes
	// in it) durable: open the directory, fsync, close.
	SyncDir(name string) error
}

// File is an open file.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	// Sync makes the file's content durable (fsync).
	Sync() error
	// Datasync makes the file's data durable, and the metadata needed to
	// read it back (fdatasync where the platform has it, else fsync).
	Datasync() error
	Truncate(size int64) error
}

// ErrStale is the error of a File opened before a Mem crash.
var ErrStale = errors.New("vfs: file handle from before a crash")

// ErrPoweredOff is the error of every Mem operation after the power
// failed (Mem.PowerOffAfter) and before Mem.Crash.
var ErrPoweredOff = errors.New("vfs: powered off")

var (
	_ FS   = osFS{}
	_ FS   = (*Mem)(nil)
	_ File = osFile{}
	_ File = (*memFile)(nil)
)
