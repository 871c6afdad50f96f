package partitions

import "github.com/lodestream/lodestream/vfs"

// A deferred roll (Options.DeferRoll, issue 9 point 3). The append that
// fills the active segment runs on the caller's loop; sealing the segment
// needs an fdatasync (a sealed segment never has a torn tail, recovery.go),
// which on a slow disk would stall that loop. With DeferRoll the append
// leaves the full segment active and the caller rolls it with Roll from
// its own writer, off the loop, before it writes anything else to the log:
// the segment boundaries stay where the appends put them (on a cluster,
// the same op on every replica), only the moment of the sync moves.

// RollDue reports a full active segment that nothing is staged past: an
// append filled it under DeferRoll, or an earlier roll failed.
func (l *Log) RollDue() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.rollDueLocked()
}

func (l *Log) rollDueLocked() bool {
	return !l.closed && l.failure == nil && len(l.staged) == 0 && l.active().sizeBytes >= l.opts.SegmentSizeBytes
}

// Roll seals a full active segment (RollDue) and starts the next one; it
// does nothing when no roll is due. The sealing fdatasync runs without the
// log's lock, so reads of the log go on meanwhile; the caller must not
// write to the log until Roll returns. A failed sync is handled as in the
// append's roll: the segment stays active, the failure is recorded for the
// next Sync (FailedSyncPending) and the next append tries again.
func (l *Log) Roll() error {
	l.mu.Lock()
	if !l.rollDueLocked() {
		l.mu.Unlock()
		return nil
	}
	s := l.active()
	logFile, indexFile := s.logFile, s.indexFile
	l.mu.Unlock()
	err := syncSegmentFiles(s.startOffset, logFile, indexFile, vfs.SyncsInParallel(l.opts.FS))
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rollDueLocked() || l.active() != s {
		return nil // rolled, cut or closed meanwhile (the caller wrote after all)
	}
	s.dirty = err != nil
	return l.seal(s, err)
}

// SegmentRoom is how many more bytes the active segment takes before it
// is full, past its staged batches (0: full). A primary stamping batches
// ahead of the log uses it to stop at the batch that fills the segment.
func (l *Log) SegmentRoom() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0
	}
	end := l.stagedEnd(l.active())
	if end >= l.opts.SegmentSizeBytes {
		return 0
	}
	return l.opts.SegmentSizeBytes - end
}
