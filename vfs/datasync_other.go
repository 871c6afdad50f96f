//go:build !linux

package vfs

import "os"

// datasync falls back to a full fsync where fdatasync is unavailable.
func datasync(f *os.File) error { return f.Sync() }

// startWriteback is a no-op where sync_file_range is unavailable.
func startWriteback(*os.File, int64, int64) error { return nil }
