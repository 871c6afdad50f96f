package partitions

import "errors"

// ErrSyncAheadInconclusive: a SyncAhead proved nothing, and nothing failed: the log was closed, or
// a file it was syncing was closed meanwhile (its segment deleted). Sync again to know.
var ErrSyncAheadInconclusive = errors.New("partition log sync ahead inconclusive: a file was closed meanwhile")

// SyncAhead makes everything the log holds when it is called durable, as Sync does, without holding
// the log's lock during the fdatasyncs: appends, stages and reads go on meanwhile. A cluster
// replica syncs its log this way ahead of a checkpoint (node/partition_presync.go), so a
// checkpoint's fdatasync, which takes a hundred milliseconds and more under load, no longer holds
// the partition's writes.
//
// On success every batch below the returned offset (the log's next offset when called) is
// durable. What it covers is taken under the exclusive lock and marked clean after only if nothing
// changed in between, as in Sync. The cached files it syncs are safe for concurrent use; one
// closed meanwhile answers ErrSyncAheadInconclusive, not a failure. A failed fdatasync is recorded
// as Sync records it (the log refuses writes until it is reopened).
func (l *Log) SyncAhead() (uint64, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrSyncAheadInconclusive
	}
	if l.rollSyncErr != nil {
		defer l.mu.Unlock()
		return 0, l.syncLocked() // reports the roll's failure
	}
	l.syncRecoveredTail()
	plan := l.planSync()
	l.mu.Unlock()

	failed, err := plan.run(l)

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && (errors.Is(err, ErrFileCacheClosed) || l.closed) {
		return 0, ErrSyncAheadInconclusive
	}
	if err := l.finishSync(plan, failed, err); err != nil {
		return 0, err
	}
	return plan.nextOffset, nil
}
