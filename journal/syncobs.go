package journal

import (
	"sync/atomic"
	"time"
)

// Fsync observation: a process-wide hook the server's metrics set once
// (httpapi), so this package needs no metrics library. Kinds name what the
// sync made durable.
const (
	SyncMetadataWAL = "metadata_wal" // a WAL append's fdatasync
	SyncSuperblock  = "superblock"   // a superblock write: file fsync, rename, directory fsync
	SyncSnapshot    = "snapshot"     // a snapshot file's durable replace
	SyncSegment     = "segment"      // a partition segment's log and index fdatasync
)

var syncObserver atomic.Pointer[func(kind string, d time.Duration)]

// SetSyncObserver installs f (nil removes it); f must be cheap and safe for
// concurrent use.
func SetSyncObserver(f func(kind string, d time.Duration)) {
	if f == nil {
		syncObserver.Store(nil)
		return
	}
	syncObserver.Store(&f)
}

// ObserveSync reports a sync of kind that began at start.
func ObserveSync(kind string, start time.Time) {
	if f := syncObserver.Load(); f != nil {
		(*f)(kind, time.Since(start))
	}
}
