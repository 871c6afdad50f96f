package partitions

import (
	"errors"
	"fmt"
)

// A failed fsync of a segment (issue 9 point 6) is never retried on the same file as if nothing had
// happened: Linux marks the pages it could not write clean, so reads still show them while the disk
// may not hold them, and a later fsync succeeds without writing them. So the log records, durably,
// that the segment must be rewritten through a fresh file at the length it has now (the marker of a
// pending cut, pending_cut.go, at the segment's size), and refuses writes (ErrFailed) until it is
// reopened: the next Open copies what reads show to a fresh file, syncs it and renames it over the
// segment, so what the log serves is then what the disk holds. The caller reopens the log (the
// node's fence), in the same process or at a restart.

// SyncError is a failed Sync of the log. RewriteRecorded: the marker is durable, so a reopen makes
// the log's content durable through a fresh file; otherwise only the caller's own record can.
type SyncError struct {
	Err             error
	RewriteRecorded bool
}

func (e *SyncError) Error() string { return e.Err.Error() }
func (e *SyncError) Unwrap() error { return e.Err }

// syncFailed (under l.mu) records that segment start must be rewritten before it is trusted again
// and fails the log until it is reopened.
func (l *Log) syncFailed(start uint64, err error) error {
	err = fmt.Errorf("sync %s: %w", l.dir, err)
	if l.failure == nil {
		l.failure = fmt.Errorf("%w: %v (reopen to rewrite the segment through a fresh file)", ErrFailed, err)
	}
	var s *segment
	for _, c := range l.segments {
		if c.startOffset == start {
			s = c
		}
	}
	if s == nil {
		// Removed since (retention): nothing of it is served any more.
		return &SyncError{Err: err, RewriteRecorded: true}
	}
	// Staged batches included: prepare WAL references name them (stage.go).
	if merr := l.markPendingCut(start, l.stagedEnd(s)); merr != nil {
		l.logger.Error("partition segment fsync failed and the rewrite could not be recorded", "dir", l.dir,
			"segment", start, "err", err, "record_err", merr)
		return &SyncError{Err: errors.Join(err, merr)}
	}
	l.logger.Error("partition segment fsync failed: the log refuses writes until it is reopened, which rewrites the segment through a fresh file",
		"dir", l.dir, "segment", start, "bytes", l.stagedEnd(s), "err", err)
	return &SyncError{Err: err, RewriteRecorded: true}
}
