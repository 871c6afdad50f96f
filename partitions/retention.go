package partitions

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/lodestream/lodestream/vfs"
)

// RetentionResult says what a retention pass, DeleteSegments or Purge removed.
type RetentionResult struct {
	SegmentsDeleted int
	MessagesDeleted uint64
	BytesDeleted    uint64
}

// ApplyRetention deletes whole sealed segments, oldest first, as the topic-options catalog defines
// retention: a segment goes when its newest message is expired (append time + messageExpiryMicros ≤
// nowMicros) or while the partition's SEALED bytes exceed maxSizeBytes (max_topic_size is a
// per-partition limit on sealed segment bytes). The active segment is never deleted and its bytes
// do not count. A segment whose end offset exceeds the lowest stored consumer or consumer-group
// offset is retained (with no stored offsets there is no such barrier). An expiry or size of 0 or
// math.MaxUint64 means unlimited (the wire's "never"/"unlimited" sentinels). Offsets are never
// reused: the next offset does not change.
func (l *Log) ApplyRetention(nowMicros, messageExpiryMicros, maxSizeBytes uint64) (RetentionResult, error) {
	before, ok := l.RetentionCut(nowMicros, messageExpiryMicros, maxSizeBytes)
	if !ok {
		return RetentionResult{}, nil
	}
	return l.DeleteSegmentsBefore(before)
}

// RetentionCut is ApplyRetention's decision without the deletion: the start offset of the oldest
// segment retention would keep, and false when it would delete nothing. A replicated partition's
// primary decides the cut this way and replicates it (DeleteSegmentsBefore on every replica), so
// every replica deletes the same segments whatever its own clock says.
func (l *Log) RetentionCut(nowMicros, messageExpiryMicros, maxSizeBytes uint64) (uint64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.failure != nil {
		return 0, false
	}
	expiryOn := messageExpiryMicros != 0 && messageExpiryMicros != math.MaxUint64
	sizeOn := maxSizeBytes != 0 && maxSizeBytes != math.MaxUint64
	barrier, hasBarrier := l.offsets.lowest()
	sealed := l.sealedBytesLocked()
	kept := 0
	for ; kept < len(l.segments)-1; kept++ {
		oldest := l.segments[kept]
		if hasBarrier && oldest.nextOffset > 0 && oldest.nextOffset-1 > barrier {
			break // a consumer has not read past this segment yet
		}
		// timestampMax + expiry <= now, written so it cannot overflow.
		expired := expiryOn && nowMicros >= messageExpiryMicros &&
			oldest.timestampMax <= nowMicros-messageExpiryMicros
		oversized := sizeOn && sealed > maxSizeBytes
		if !expired && !oversized {
			break
		}
		sealed -= oldest.sizeBytes
	}
	if kept == 0 {
		return 0, false
	}
	return l.segments[kept].startOffset, true
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
	res, err := l.resetToLocked(0)
	if err != nil {
		return res, err
	}
	if err := l.offsets.clear(); err != nil {
		return res, err
	}
	return res, l.syncDirIfDirty()
}

// ResetTo deletes every message and starts the log empty at offset start (a replica whose state
// transfer begins above everything it holds: the peers' retention moved on). Consumer offsets stay:
// the transfer installs the peers' when it ends, and until then readers see the ones applied here,
// never an offset gone back to nothing (found by the whole-node simulator).
func (l *Log) ResetTo(start uint64) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.resetToLocked(start)
	if err != nil {
		return res, err
	}
	return res, l.syncDirIfDirty()
}

// resetToLocked deletes every message and starts the log empty at offset start (under l.mu).
func (l *Log) resetToLocked(start uint64) (RetentionResult, error) {
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	l.staged = nil // their files go below
	var res RetentionResult
	for _, s := range l.segments {
		res.SegmentsDeleted++
		res.MessagesDeleted += s.messages
		res.BytesDeleted += s.sizeBytes
		if err := removeSegmentFiles(l.opts.FS, l.dir, s); err != nil {
			l.failure = fmt.Errorf("%w: purge stopped half way: %v", ErrFailed, err)
			return res, l.failure
		}
	}
	l.segments = nil
	l.dirDirty = true
	l.mutations++
	s, err := l.createSegment(start)
	if err != nil {
		l.failure = fmt.Errorf("%w: purge could not create a new segment: %v", ErrFailed, err)
		return res, l.failure
	}
	l.segments = []*segment{s}
	l.nextOffset = start
	// Purge restarts the offset space on purpose (upstream semantics): no hole is left to mark.
	if err := l.removeLostMarkers(^uint64(0)); err != nil {
		return res, err
	}
	if l.opts.ReserveOffsets {
		l.syncedBelow = start // nothing below start is left
		if err := l.writeReservation(start); err != nil {
			l.failure = fmt.Errorf("%w: purge could not reset the offset reservation: %v", ErrFailed, err)
			return res, l.failure
		}
		l.reserved, l.reservedDurable = start, true
	}
	return res, nil
}

// Delete closes the log and removes its directory with everything in it (delete partition).
func (l *Log) Delete() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.collectReservation(true) // its file is about to go with the directory
	l.closed = true
	closeErr := l.closeSegments()
	// All or nothing across a crash: a half-removed directory (segments
	// left, partition.meta gone) would block a partition re-created there.
	if err := vfs.RemoveAllAtomically(l.opts.FS, l.dir); err != nil {
		return errors.Join(closeErr, fmt.Errorf("delete partition directory %s: %w", l.dir, err))
	}
	return closeErr
}

func (l *Log) deleteOldestSegment(res *RetentionResult) error {
	s := l.segments[0]
	if err := removeSegmentFiles(l.opts.FS, l.dir, s); err != nil {
		return err
	}
	res.SegmentsDeleted++
	res.MessagesDeleted += s.messages
	res.BytesDeleted += s.sizeBytes
	l.segments = l.segments[1:]
	l.dirDirty = true
	l.mutations++
	l.logger.Info("deleted segment", "dir", l.dir, "start_offset", s.startOffset, "messages", s.messages,
		"bytes", s.sizeBytes)
	return nil
}

func removeSegmentFiles(fsys vfs.FS, dir string, s *segment) error {
	closeErr := s.close()
	for _, path := range []string{segmentLogPath(dir, s.startOffset), segmentIndexPath(dir, s.startOffset)} {
		if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
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
	if err := syncDir(l.opts.FS, l.dir); err != nil {
		return err
	}
	l.dirDirty = false
	return nil
}

// sealedBytesLocked is the size of every segment but the active (last) one.
func (l *Log) sealedBytesLocked() uint64 {
	var n uint64
	for _, seg := range l.segments[:len(l.segments)-1] {
		n += seg.sizeBytes
	}
	return n
}
