package partitions

// SegmentEndOffset returns the offset that follows the n oldest segments: the start offset of segment
// n (0-based) or, when n reaches the active segment, the log's next offset. DeleteSegments(n) turns
// into a watermark with it, so every replica deletes the same messages (DeleteSegmentsBefore).
func (l *Log) SegmentEndOffset(n int) uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n <= 0 {
		if len(l.segments) == 0 {
			return l.nextOffset
		}
		return l.segments[0].startOffset
	}
	if n < len(l.segments) {
		return l.segments[n].startOffset
	}
	return l.nextOffset
}

// DeleteSegmentsBefore deletes every segment whose messages all lie below offset (the DeleteSegments
// watermark). When the watermark covers the active segment and it holds messages, it is sealed and
// deleted too and a new empty segment starts at the next offset. Offsets are never reused.
func (l *Log) DeleteSegmentsBefore(offset uint64) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	var res RetentionResult
	for len(l.segments) > 0 {
		oldest := l.segments[0]
		if len(l.segments) == 1 {
			if oldest.messages == 0 || l.nextOffset > offset {
				break
			}
			if err := l.roll(); err != nil {
				return res, err
			}
			continue
		}
		if l.segments[1].startOffset > offset {
			break
		}
		if err := l.deleteOldestSegment(&res); err != nil {
			return res, err
		}
	}
	// Hole markers below the first kept segment mark nothing any more. Open would drop them;
	// dropping them here keeps every replica's files alike whether it restarts or not (a retry of
	// a cut that failed here drops them then: one directory listing per cut).
	if err := l.removeLostMarkers(l.segments[0].startOffset); err != nil {
		return res, err
	}
	return res, l.syncDirIfDirty()
}
