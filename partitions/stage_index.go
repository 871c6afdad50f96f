package partitions

import "fmt"

// Staged index entries (issue 9 point 3). Append notes a batch in the
// segment's sparse index and, when the rule asks for one, writes the
// entry to the .index file. Adopting a staged batch ran that write on the
// caller's loop (a shard's apply), where a page-cache write can still be
// throttled behind a busy disk. So Stage writes the entry too, off the
// loop, at the slot Append will give it: staged batches are adopted in
// order and nothing else changes the active segment while any is staged,
// so the entry (its slot, its position, the segment's running
// timestampMax) is known when the batch is staged. Append then writes
// only when what it notes differs from what was staged.
//
// Staged entries past the applied index are harmless on disk: reads use
// the index in memory, and an open rebuilds the index from the walk and
// rewrites a file that disagrees. Whatever removes staged batches removes
// their entries (cutStagedLocked, CutStagedFrom); a repair that reloads
// the active segment rewrites its index file, so the staged batches keep
// their entries only in memory and Append writes them (forgetStagedIndex).

// stagedIndex is the sparse-index accounting after a staged batch, and
// the entry staged for it.
type stagedIndex struct {
	lastIndexed  uint64 // segment.lastIndexed after the batch
	timestampMax uint64 // segment.timestampMax after the batch
	count        int    // index entries after the batch
	force        bool   // segment.forceIndex after the batch
	written      bool   // entry was written at slot count-1 when the batch was staged
	entry        indexEntry
}

// stageIndexEntry (under l.mu, st the batch being staged at st.position
// of s) works out the index accounting after it and writes its entry
// when the sparse rule asks for one, at the slot Append will use.
func (l *Log) stageIndexEntry(s *segment, st *stagedBatch, baseTimestamp uint64) error {
	prev := stagedIndex{lastIndexed: s.lastIndexed, timestampMax: s.timestampMax, count: len(s.index), force: s.forceIndex}
	if n := len(l.staged); n > 0 {
		prev = l.staged[n-1].index
	}
	next := stagedIndex{lastIndexed: prev.lastIndexed, timestampMax: max(prev.timestampMax, baseTimestamp),
		count: prev.count, force: prev.force}
	if !indexEntryDue(prev.count, prev.force, prev.lastIndexed, st.position, l.opts.IndexIntervalBytes) {
		st.index = next
		return nil
	}
	e := indexEntry{offset: st.offset, timestamp: baseTimestamp, position: st.position, timestampMax: next.timestampMax}
	buf := l.indexEntryBuf[:]
	e.encode(buf)
	if _, err := s.indexFile.WriteAt(buf, int64(prev.count*indexEntrySize)); err != nil {
		return fmt.Errorf("write the staged batch's index entry: %w", err)
	}
	next.lastIndexed, next.count, next.force = st.position, prev.count+1, false
	next.written, next.entry = true, e
	st.index = next
	return nil
}

// stagedIndexWritten (Append adopting the first staged batch, under l.mu)
// reports whether e, noted at slot, is on disk already.
func (l *Log) stagedIndexWritten(slot int, e indexEntry) bool {
	if len(l.staged) == 0 {
		return false
	}
	si := l.staged[0].index
	return si.written && si.count-1 == slot && si.entry == e
}

// cutStagedIndexFrom (under l.mu) removes the index entries staged for
// l.staged[i:], before those batches go.
func (l *Log) cutStagedIndexFrom(s *segment, i int) error {
	written := false
	for _, st := range l.staged[i:] {
		written = written || st.index.written
	}
	if !written {
		return nil
	}
	keep := len(s.index)
	if i > 0 {
		keep = l.staged[i-1].index.count
	}
	if err := s.indexFile.Truncate(int64(keep * indexEntrySize)); err != nil {
		l.failure = fmt.Errorf("%w: cutting the staged batches' index entries failed: %v", ErrFailed, err)
		return l.failure
	}
	return nil
}

// forgetStagedIndex (under l.mu): the active segment's index file was
// rewritten from what is applied; the staged batches' entries are no
// longer on disk, and Append writes them.
func (l *Log) forgetStagedIndex() {
	for i := range l.staged {
		l.staged[i].index.written = false
	}
}
