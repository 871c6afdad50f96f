package partitions

import (
	"fmt"
	"math"
	"os"
)

// CutTail removes every record at or above offset, with the segments, index entries and hole
// markers there, and continues the log at offset. A cluster replica whose prepare WAL was lost takes
// back what it applied past its checkpoint (node/partition_vsr.go): the group applies those ops again,
// or, when an election beyond the group's fault budget dropped them, what replaced them, and the
// replicas' files stay identical (whole-node simulator finding 20). offset must be above the first
// segment's start and on a record boundary or in a hole (kept up to offset, as SkipTo(offset) leaves
// one); the cut is durable when CutTail returns.
// A crash part way leaves a prefix of the log (a truncation in flight is finished at open,
// pending_cut.go), and the cut can be made again.
func (l *Log) CutTail(offset uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.cutStagedLocked(); err != nil {
		return err
	}
	if offset >= l.nextOffset {
		return nil
	}
	if offset <= l.segments[0].startOffset {
		return fmt.Errorf("cut the tail of %s at offset %d: not above its first segment (%d)", l.dir, offset,
			l.segments[0].startOffset)
	}
	for l.active().startOffset >= offset {
		s := l.active()
		if err := removeSegmentFiles(l.opts.FS, l.dir, s); err != nil {
			l.failure = fmt.Errorf("%w: cut of the tail stopped half way: %v", ErrFailed, err)
			return l.failure
		}
		l.segments = l.segments[:len(l.segments)-1]
		l.dirDirty = true
		l.mutations++
	}
	if err := l.removeLostMarkersIn(offset, math.MaxUint64); err != nil {
		return fmt.Errorf("cut the tail of %s at offset %d: %w", l.dir, offset, err)
	}
	if err := l.syncDirIfDirty(); err != nil {
		return fmt.Errorf("cut the tail of %s at offset %d: %w", l.dir, offset, err)
	}
	if s := l.active(); s.nextOffset >= offset {
		// At open, a sealed segment followed by a recorded hole ends where the next segment starts
		// (recovery.go); its records end at the hole's marker. A cut in that hole or at its end must
		// continue the log in a segment of its own, as SkipTo left it: records appended after the
		// segment's own, past the hole, would sit in one file across offsets it never held, which
		// the next open reads as damage (whole-node simulator seed 1097).
		if m, ok := l.lostMarkerBelow(s.startOffset, offset); ok {
			s.nextOffset = m
		}
	}
	if s := l.active(); s.nextOffset > offset {
		pos, _, err := s.batchBoundary(offset, true)
		if err != nil {
			return fmt.Errorf("cut the tail of %s: %w", l.dir, err)
		}
		if err := l.truncateSegment(s, pos, offset); err != nil {
			return err
		}
	}
	s := l.active()
	if s.indexFile == nil {
		// A sealed segment is the active one again: appends write its index (Open does the same).
		s.indexFile = l.opts.Files.Register(l.opts.FS, segmentIndexPath(l.dir, s.startOffset), os.O_RDWR, l.opts.SyncOnEvict)
	}
	l.syncedBelow = min(l.syncedBelow, offset)
	if s.nextOffset == offset {
		l.nextOffset = offset
		if l.opts.RollFullAtOpen && s.sizeBytes >= l.opts.SegmentSizeBytes {
			// The cut removed the segment the append that filled this one
			// rolled to: roll again, as that append did, so the files stay
			// the peers' (metadata simulator seed 35: a replica that took
			// back the records past its checkpoint lacked the empty segment
			// its peers held). A failure here is retried by the next append.
			if err := l.roll(); err != nil {
				l.logger.Error("segment roll after a tail cut failed", "dir", l.dir, "err", err)
			}
		}
		return nil
	}
	// offset is in a hole: recorded as SkipTo records one (a marker, and a segment at offset), so a
	// reopen resumes there.
	prev := l.nextOffset
	l.nextOffset = offset
	if err := l.crossHole(); err != nil {
		l.nextOffset = prev
		return fmt.Errorf("cut the tail of %s at offset %d, in a hole: %w", l.dir, offset, err)
	}
	return l.syncDirIfDirty()
}

// truncateSegment cuts the last segment s at byte pos, durably, and rebuilds its accounting and
// index from what is left (under l.mu). The records below kept (the cut's offset) are the caller's
// applied ones (a cluster replica's, below its checkpoint, synced before the superblock that names
// it): the rebuild treats damage among them as corruption (set apart, or a QuarantineError), never
// as a torn tail to cut. Otherwise rot in the last kept batch, now at the segment's end, was cut
// and its offsets skipped as lost on this replica alone (whole-node simulator seed 47745).
func (l *Log) truncateSegment(s *segment, pos, kept uint64) error {
	start := s.startOffset
	if err := l.markPendingCut(start, pos); err != nil {
		return err
	}
	fail := func(err error) error {
		// Wrapped: damage the rebuild finds is a QuarantineError the caller
		// sets aside (node/partition_reconcile.go).
		l.failure = fmt.Errorf("%w: cut of segment %d at byte %d: %w", ErrFailed, start, pos, err)
		return l.failure
	}
	if err := s.logFile.Truncate(int64(pos)); err != nil {
		return fail(err)
	}
	if err := s.logFile.Sync(); err != nil {
		return fail(err) // the marker stays: the next open rewrites the segment
	}
	if err := l.clearPendingCut(start); err != nil {
		return fail(err)
	}
	if err := s.close(); err != nil {
		return fail(err)
	}
	// (CutTail cut the staged batches first: the walk goes to the file's end.)
	rebuilt, err := l.recoverSegment(start, math.MaxUint64, true, walkBounds{syncedBelow: max(l.opts.SyncedBelow, kept)})
	if err != nil {
		return fail(err)
	}
	l.segments[len(l.segments)-1] = rebuilt
	return nil
}
