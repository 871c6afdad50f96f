package journal

import "github.com/lodestream/lodestream/vfs"

// Option configures an opener of this package (OpenWAL, OpenPrepareLog,
// OpenSuperblock, OpenSuperblockLog, ReadSuperblockLog, WriteSnapshot,
// ReadSnapshot, CheckMetadata, TruncateWALAtDamage).
type Option func(*options)

type options struct {
	fs       vfs.FS
	resolver BodyResolver // WithBodyResolver (prepare WAL only)
}

// WithFS makes the files go through fsys instead of the real file system
// (vfs.OS): a vfs.Mem for power-loss and fault simulation.
func WithFS(fsys vfs.FS) Option {
	return func(o *options) { o.fs = fsys }
}

// resolverOf returns the body resolver opts name (nil by default).
func resolverOf(opts []Option) BodyResolver {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o.resolver
}

// fsOf returns the file system opts name (vfs.OS by default).
func fsOf(opts []Option) vfs.FS {
	o := options{fs: vfs.OS}
	for _, opt := range opts {
		opt(&o)
	}
	if o.fs == nil {
		o.fs = vfs.OS
	}
	return o.fs
}
