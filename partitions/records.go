package partitions

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// ErrBelowRetained: the offset asked for is below the first stored one (retention removed it).
var ErrBelowRetained = errors.New("offset below the first stored offset")

// ErrNotBatchStart: no stored batch starts at the offset asked for.
var ErrNotBatchStart = errors.New("no stored batch starts at the offset")

// ReadRecords appends to dst the stored batch records starting with the one whose base offset is
// from, whole and byte for byte as stored, stopping before a record that starts at or above end or
// that would take the appended bytes past bytesMax (the first record is always taken). It returns
// dst and the offset after the last appended record (from when nothing was appended: from is the
// log's next offset or end). A read that starts in a recorded hole (SkipTo) starts after it: the
// offset returned is then past the hole even when no record follows it yet. A peer's state transfer
// and a replayed op's check read through it.
func (l *Log) ReadRecords(dst []byte, from, end, bytesMax uint64) ([]byte, uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, from, ErrClosed
	}
	st := l.statsLocked()
	if from < st.FirstOffset {
		return dst, from, fmt.Errorf("read records of %s from %d (first stored %d): %w", l.dir, from, st.FirstOffset, ErrBelowRetained)
	}
	if from >= st.NextOffset || from >= end {
		return dst, from, nil
	}
	segs := l.segments
	si := len(segs) - 1
	for si > 0 && segs[si].startOffset > from {
		si--
	}
	r := segmentReader{log: l}
	defer r.release()
	next, taken := from, uint64(0)
	pos := segs[si].positionForOffset(from)
	for first := si; si < len(segs); si, pos = si+1, 0 {
		s := segs[si]
		if si > first && s.startOffset > next {
			// A gap between segments: a recorded hole (SkipTo, a crash's reservation) is skipped, the
			// way the log itself skipped it; records stop before one, so a chunk stays contiguous.
			if taken > 0 {
				return dst, next, nil
			}
			if l.holeBefore(si, next) {
				next = s.startOffset
				if next >= end || s.sizeBytes == 0 {
					// Holes that follow each other (an empty segment between them) end a call
					// one at a time: a state transfer then skips them one by one as the log
					// did, and the replicas' files stay identical.
					return dst, next, nil
				}
			}
		}
		r.reset(s)
		for pos < s.sizeBytes {
			record, h, err := r.record(pos)
			if err != nil {
				return dst, next, fmt.Errorf("read records of %s: %w", l.dir, err)
			}
			pos += h.BatchLength
			if h.LastOffset() < from {
				continue
			}
			if taken == 0 && h.BaseOffset != next {
				return dst, from, fmt.Errorf("read records of %s: offset %d is inside the batch at %d: %w", l.dir, next, h.BaseOffset, ErrNotBatchStart)
			}
			if h.BaseOffset >= end || (taken > 0 && taken+h.BatchLength > bytesMax) {
				return dst, next, nil
			}
			// A replica must never hand damaged bytes to a peer (they would pass for the truth there).
			if _, err := wire.VerifyBatch(record); err != nil {
				return dst, next, fmt.Errorf("read records of %s: %w", l.dir, l.corruptAt(s, pos-h.BatchLength, h.BaseOffset, err.Error()))
			}
			dst = append(dst, record...)
			taken += h.BatchLength
			next = h.BaseOffset + uint64(h.MessageCount)
		}
		if d := s.damageAt(s.sizeBytes); d != nil && next < d.endOffset {
			ce, _ := l.damageError(s, d)
			return dst, next, fmt.Errorf("read records of %s: %w", l.dir, ce)
		}
	}
	return dst, next, nil
}
