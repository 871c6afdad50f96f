package node

import (
	"context"
	"errors"
	"time"
)

// The metadata group's storage work runs on its driver goroutine
// (processReady: journal appends, superblock, snapshots, compaction). A
// write stuck in the kernel there stops the whole driver, and with it the
// fence clock that would stop the process (storage_fence.go). A watchdog
// beside it reports storage work out longer than
// superblock_wedged_fatal_timeout as wedged storage, as for a fence that
// old (partition writes: partition_hung_write.go).

// errMetadataWriteNeverReturned is a hung metadata write's cause.
var errMetadataWriteNeverReturned = errors.New("a metadata storage write (journal, superblock or snapshot) has not returned")

// watchStorage reports (once, on out) storage work that began at since()
// (zero: none under way) and has been out for timeout, checking every
// interval until ctx ends.
func watchStorage(ctx context.Context, since func() time.Time, timeout, interval time.Duration, out chan<- error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			began := since()
			if began.IsZero() || now.Sub(began) < timeout {
				continue
			}
			select {
			case out <- &wedgedError{since: now.Sub(began), lastErr: errMetadataWriteNeverReturned}:
			default:
			}
			return
		}
	}
}

// storageBegan is the driver's storage work under way (zero: none).
func (d *driver) storageBegan() time.Time {
	ns := d.storageSince.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
