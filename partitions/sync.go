package partitions

import "github.com/lodestream/lodestream/vfs"

// Sync makes everything appended so far durable: fdatasync of every dirty segment's log and index,
// and of the directory when segments were created or removed. This is the persisted-durability
// barrier.
//
// The fdatasyncs run under the read lock, not the exclusive one: polls and reads of the log go on
// while the disk works (a slow or stuck fdatasync no longer holds every reader of the partition),
// and writers wait, as before. What the sync covers is taken under the exclusive lock first, and
// marked clean after only if nothing changed in between (mutations); otherwise it stays dirty for
// the next Sync, which costs a sync, never a promise.
func (l *Log) Sync() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.syncRecoveredTail()
	if l.rollSyncErr != nil {
		defer l.mu.Unlock()
		return l.syncLocked() // reports the roll's failure
	}
	plan := l.planSync()
	l.mu.Unlock()

	l.mu.RLock()
	if l.closed || l.mutations != plan.mutations {
		// Changed between the two locks: sync as before, holding the lock.
		l.mu.RUnlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return ErrClosed
		}
		return l.syncLocked()
	}
	failed, err := plan.run(l)
	l.mu.RUnlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finishSync(plan, failed, err)
}

// syncLocked is Sync under the exclusive lock (Close, and Sync when the log changed between its
// locks or a roll's failure is to be reported).
func (l *Log) syncLocked() error {
	l.syncRecoveredTail()
	if err := l.rollSyncErr; err != nil {
		l.rollSyncErr = nil
		return l.syncFailed(l.rollSyncSegment, err)
	}
	plan := l.planSync()
	failed, err := plan.run(l)
	return l.finishSync(plan, failed, err)
}

// finishSync (under the exclusive lock) records a run plan's outcome: a segment's failure through
// syncFailed, the directory's as it is; on success it marks clean what the plan covered, unless the
// log changed since the plan was taken.
func (l *Log) finishSync(plan syncPlan, failed *segment, err error) error {
	if err != nil {
		if failed != nil {
			return l.syncFailed(failed.startOffset, err)
		}
		return err
	}
	if l.mutations == plan.mutations {
		for _, s := range plan.segments {
			s.dirty = false
		}
		if plan.dir {
			l.dirDirty = false
		}
		l.syncedBelow = max(l.syncedBelow, plan.nextOffset)
	}
	return nil
}

// syncPlan is what one Sync covers, taken under the exclusive lock.
type syncPlan struct {
	segments   []*segment
	logs       []*CachedFile
	indexes    []*CachedFile
	dir        bool
	mutations  uint64
	nextOffset uint64
}

func (l *Log) planSync() syncPlan {
	p := syncPlan{dir: l.dirDirty, mutations: l.mutations, nextOffset: l.nextOffset}
	for _, s := range l.segments {
		if s.dirty {
			p.segments = append(p.segments, s)
			p.logs = append(p.logs, s.logFile)
			p.indexes = append(p.indexes, s.indexFile)
		}
	}
	return p
}

// run fdatasyncs the plan's segments in order and then the directory (under the read lock: no
// segment field is written). It returns the segment whose sync failed (nil for the directory).
func (p *syncPlan) run(l *Log) (*segment, error) {
	parallel := vfs.SyncsInParallel(l.opts.FS)
	for i, s := range p.segments {
		if err := syncSegmentFiles(s.startOffset, p.logs[i], p.indexes[i], parallel); err != nil {
			return s, err
		}
	}
	if p.dir {
		if err := syncDir(l.opts.FS, l.dir); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
