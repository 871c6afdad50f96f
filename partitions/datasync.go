package partitions

import "github.com/lodestream/lodestream/vfs"

// datasync flushes file data (and the metadata needed to read it back) without forcing an inode
// timestamp update: vfs.File.Datasync, which on vfs.OS is fdatasync(2) retried on EINTR.
func datasync(f vfs.File) error { return f.Datasync() }
