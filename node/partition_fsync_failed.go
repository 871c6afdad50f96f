package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
)

// A failed fsync (issue 9 point 6) is never retried on the same file as
// if nothing had happened: after one, the kernel may have dropped the
// pages it could not write while reads still show them, and a later fsync
// succeeds without them. The group is fenced, then opened again in the
// background (reopen, as for damage found on a read), and the open works
// through fresh files:
//
//   - a segment's: partitions.Log recorded the segment's rewrite itself
//     (partitions.SyncError) and refuses writes; the open copies it
//     through a fresh file;
//   - a cluster group's prepare WAL: under `replicated` a PrepareOk leaves
//     before the WAL is synced, so the failure may have lost prepares the
//     replica acknowledged, and a restart within the same boot would not
//     mark it amnesiac. The writer that saw the failure records it at
//     once, durably, in the group's directory (fsync.failed) before the
//     loop learns of it. The open that finds the marker records the
//     group's amnesia in its superblock (takeAmnesiaMarker: no vote until
//     a primary's log is held again, as after a power loss), cuts the WAL
//     at any damage and writes its entries again through a fresh file
//     (journal.PrepareLog.Rewrite); then the marker goes.
//
// A restart does the same. If a record cannot be written, the group stays
// fenced until a restart; a cluster node then marks its boot record
// unknown (the next boot treats every group as amnesiac) and does not
// record its stop as clean. A failed sync of the node's superblock log is
// not a group's files: it fences every group of the batch until a restart.

const fsyncFailedMarkerFile = "fsync.failed"

// failedSync (the writer goroutine) records a failed fsync of the
// group's prepare WAL in dir durably and returns the error that fences it.
func failedSync(fsys vfs.FS, dir string, err error) *fsyncFailed {
	merr := replaceFileDurably(fsys, dir, fsyncFailedMarkerFile, nil)
	return &fsyncFailed{err: err, marked: merr == nil, markErr: merr}
}

// segmentSyncFailed: a segment's fsync failed; the log recorded its
// rewrite (or says why not).
func segmentSyncFailed(err error) *fsyncFailed {
	var se *partitions.SyncError
	if errors.As(err, &se) && se.RewriteRecorded {
		return &fsyncFailed{err: err, marked: true}
	}
	return &fsyncFailed{err: err, markErr: errors.New("the log did not record the segment's rewrite")}
}

// afterFsyncFailure (loop, the group just fenced by ff) reopens a group
// whose failure is recorded; an unrecorded one waits for a restart.
func (p *partitionPlane) afterFsyncFailure(e *partitionEntry, ff *fsyncFailed) {
	if errors.Is(ff, journal.ErrSuperblockLogPoisoned) {
		return
	}
	if !p.clustered() && !ff.marked {
		p.log.Error("partition fsync failed and the rewrite could not be recorded: the partition stays fenced until a restart",
			"dir", e.dir, "err", ff.err)
		return
	}
	if !ff.marked {
		e.shard.closeFailed.Store(true) // the stop is not recorded clean
		err := ff.markErr
		if p.forgetBoot != nil {
			if ferr := p.forgetBoot(); ferr != nil {
				err = errors.Join(err, ferr)
			}
		}
		p.log.Error("partition fsync failed and could not be recorded: the group stays fenced until a restart, which treats every group as amnesiac",
			"dir", e.dir, "err", err)
		return
	}
	if p.reopenInline != nil {
		p.reopenInline(e)
		return
	}
	p.reopen(e, "partition fsync failed: reopening the partition, which rewrites what failed through a fresh file")
}

// fsyncFailedMarked (open) reports whether the group's last run saw a
// failed fsync of its prepare WAL.
func (p *partitionPlane) fsyncFailedMarked(e *partitionEntry) (bool, error) {
	switch _, err := p.fsys.Stat(filepath.Join(e.dir, fsyncFailedMarkerFile)); {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("partition fsync marker: %w", err)
	}
}

// dropFsyncFailedMarker: the group's superblock records its amnesia and
// its WAL was rewritten. Not synced: a marker brought back by a crash
// only rewrites the WAL once more (harmless).
func (p *partitionPlane) dropFsyncFailedMarker(e *partitionEntry) error {
	if err := p.fsys.Remove(filepath.Join(e.dir, fsyncFailedMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the partition fsync marker: %w", err)
	}
	return nil
}
