package partitions

import (
	"errors"
	"fmt"
	"math"
	"os"
)

// RetentionResult says what a retention pass, DeleteSegments or Purge removed.
type RetentionResult struct {
	SegmentsDeleted int
	MessagesDeleted uint64
	BytesDeleted    uint64
}

// ApplyRetention deletes whole sealed segments, oldest first: those whose newest message is expired
// (append time + messageExpiryMicros ≤ nowMicros) and then, while the partition holds more than
// maxSizeBytes, the oldest remaining sealed ones. The active segment is never deleted. An expiry or
// size of 0 or math.MaxUint64 means unlimited (the wire's "never"/"unlimited" sentinels). Offsets are
// never reused: the next offset does not change.
func (l *Log) ApplyRetention(nowMicros, messageExpiryMicros, maxSizeBytes uint64) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	expiryOn := messageExpiryMicros != 0 && messageExpiryMicros != math.MaxUint64
	sizeOn := maxSizeBytes != 0 && maxSizeBytes != math.MaxUint64
	var res RetentionResult
	for len(l.segments) > 1 {
		oldest := l.segments[0]
		// timestampMax + expiry <= now, written so it cannot overflow.
		expired := expiryOn && nowMicros >= messageExpiryMicros &&
			oldest.timestampMax <= nowMicros-messageExpiryMicros
		oversized := sizeOn && l.statsLocked().SizeBytes > maxSizeBytes
		if !expired && !oversized {
			break
		}
		if err := l.deleteOldestSegment(&res); err != nil {
			return res, err
		}
	}
	return res, l.syncDirIfDirty()
}

// DeleteSegments deletes the n oldest segments. When n reaches the active segment and it holds
// messages, it is sealed and deleted too and a new empty segment starts at the next offset.
func (l *Log) DeleteSegments(n int) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	var res RetentionResult
	for ; n > 0; n-- {
		if len(l.segments) == 1 {
			if l.active().messages == 0 {
				break
			}
			if err := l.roll(); err != nil {
				return res, err
			}
		}
		if err := l.deleteOldestSegment(&res); err != nil {
			return res, err
		}
	}
	return res, l.syncDirIfDirty()
}

// Purge deletes every message and consumer offset and resets the offset space to 0 (upstream purge
// semantics: the group's offset counter restarts with the new generation).
func (l *Log) Purge() (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	var res RetentionResult
	for _, s := range l.segments {
		res.SegmentsDeleted++
		res.MessagesDeleted += s.messages
		res.BytesDeleted += s.sizeBytes
		if err := removeSegmentFiles(l.dir, s); err != nil {
			l.failure = fmt.Errorf("%w: purge stopped half way: %v", ErrFailed, err)
			return res, l.failure
		}
	}
	l.segments = nil
	l.dirDirty = true
	s, err := l.createSegment(0)
	if err != nil {
		l.failure = fmt.Errorf("%w: purge could not create a new segment: %v", ErrFailed, err)
		return res, l.failure
	}
	l.segments = []*segment{s}
	l.nextOffset = 0
	if err := l.offsets.clear(); err != nil {
		return res, err
	}
	return res, l.syncDirIfDirty()
}

// Delete closes the log and removes its directory with everything in it (delete partition).
func (l *Log) Delete() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	closeErr := l.closeSegments()
	if err := os.RemoveAll(l.dir); err != nil {
		return errors.Join(closeErr, fmt.Errorf("delete partition directory %s: %w", l.dir, err))
	}
	return closeErr
}

func (l *Log) deleteOldestSegment(res *RetentionResult) error {
	s := l.segments[0]
	if err := removeSegmentFiles(l.dir, s); err != nil {
		return err
	}
	res.SegmentsDeleted++
	res.MessagesDeleted += s.messages
	res.BytesDeleted += s.sizeBytes
	l.segments = l.segments[1:]
	l.dirDirty = true
	l.logger.Info("deleted segment", "dir", l.dir, "start_offset", s.startOffset, "messages", s.messages,
		"bytes", s.sizeBytes)
	return nil
}

func removeSegmentFiles(dir string, s *segment) error {
	closeErr := s.close()
	for _, path := range []string{segmentLogPath(dir, s.startOffset), segmentIndexPath(dir, s.startOffset)} {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete segment file %s: %w", path, err)
		}
	}
	if closeErr != nil {
		return fmt.Errorf("close segment %d: %w", s.startOffset, closeErr)
	}
	return nil
}

func (l *Log) syncDirIfDirty() error {
	if !l.dirDirty {
		return nil
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	l.dirDirty = false
	return nil
}

// EnforceTopicSize applies a topic's max_topic_size across its partitions: while the logs together
// hold more than maxTopicSizeBytes, the sealed segment with the oldest data (smallest newest-append
// time, across all partitions) is deleted. Active segments are never deleted. 0 or math.MaxUint64 mean
// unlimited. Logs that are closed or failed are skipped.
func EnforceTopicSize(logs []*Log, maxTopicSizeBytes uint64) (RetentionResult, error) {
	var res RetentionResult
	if maxTopicSizeBytes == 0 || maxTopicSizeBytes == math.MaxUint64 {
		return res, nil
	}
	for {
		var total uint64
		var victim *Log
		var victimAge uint64
		for _, l := range logs {
			size, oldest, ok := l.sealedOldest()
			total += size
			if ok && (victim == nil || oldest < victimAge) {
				victim, victimAge = l, oldest
			}
		}
		if total <= maxTopicSizeBytes || victim == nil {
			return res, nil
		}
		if err := victim.deleteOldestSealed(&res); err != nil {
			return res, err
		}
	}
}

// sealedOldest reports the log's size and, when it has a sealed segment, the newest append time in
// its oldest one.
func (l *Log) sealedOldest() (sizeBytes, oldestTimestamp uint64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.failure != nil {
		return 0, 0, false
	}
	sizeBytes = l.statsLocked().SizeBytes
	if len(l.segments) < 2 {
		return sizeBytes, 0, false
	}
	return sizeBytes, l.segments[0].timestampMax, true
}

func (l *Log) deleteOldestSealed(res *RetentionResult) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if len(l.segments) < 2 {
		return nil // raced with another retention pass
	}
	if err := l.deleteOldestSegment(res); err != nil {
		return err
	}
	return l.syncDirIfDirty()
}
