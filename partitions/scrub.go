package partitions

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/lodestream/lodestream/wire"
)

// ScrubCursor is where a background scrub of one log continues: the segment (by start offset) and
// the byte position in it. The zero cursor starts at the first segment.
type ScrubCursor struct {
	SegmentStart uint64
	Position     uint64
}

// ScrubResult is one scrub step's outcome.
type ScrubResult struct {
	Next          ScrubCursor
	BytesVerified uint64
	// Wrapped: the step reached the end of the log; Next starts over at the first segment.
	Wrapped bool
	// Damage is the first damaged batch the step found (also logged, once per place); nil when the
	// bytes verified. Next is past it, so the scrub goes on with the rest of the log.
	Damage *CorruptionError
	// NewDamage: Damage is a place this log had not reported before.
	NewDamage bool
}

// Scrub verifies up to bytesMax bytes of stored batches (at least one batch) from cursor, as a poll
// would, without serving them: the background scrubber's step. It holds the log's read lock for the
// step only, so steps are small and paced by the caller. A cursor whose segment retention removed
// continues at the next segment.
func (l *Log) Scrub(cursor ScrubCursor, bytesMax uint64) (ScrubResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ScrubResult{}, ErrClosed
	}
	si := 0
	for si < len(l.segments) && l.segments[si].startOffset < cursor.SegmentStart {
		si++
	}
	pos := cursor.Position
	if si < len(l.segments) && l.segments[si].startOffset != cursor.SegmentStart {
		pos = 0 // the cursor's segment is gone: start the next one from its beginning
	}
	r := segmentReader{log: l}
	defer r.release()
	var res ScrubResult
	for ; si < len(l.segments); si, pos = si+1, 0 {
		s := l.segments[si]
		r.reset(s)
		for pos < s.sizeBytes {
			if res.BytesVerified > 0 && res.BytesVerified >= bytesMax {
				res.Next = ScrubCursor{SegmentStart: s.startOffset, Position: pos}
				return res, nil
			}
			if d := s.damageAt(pos); d != nil && d.to > pos {
				// Set apart at open: reported, and the walk goes on after it.
				res.Damage, res.NewDamage = l.damageError(s, d)
				res.Next = ScrubCursor{SegmentStart: s.startOffset, Position: d.to}
				return res, nil
			}
			record, h, err := r.record(pos)
			if err != nil {
				var ce *CorruptionError
				if !errors.As(err, &ce) {
					return res, fmt.Errorf("scrub %s: %w", l.dir, err)
				}
				// The header cannot be trusted to find the next batch: go on with the next segment.
				res.Damage, res.NewDamage = ce, r.newDamage
				res.Next = l.scrubCursorAfter(si)
				res.Wrapped = si+1 >= len(l.segments)
				return res, nil
			}
			res.BytesVerified += h.BatchLength
			if _, err := wire.VerifyBatch(record); err != nil {
				res.Damage, res.NewDamage = l.reportCorruption(s, pos, h.BaseOffset, err.Error())
				res.Next = ScrubCursor{SegmentStart: s.startOffset, Position: pos + h.BatchLength}
				return res, nil
			}
			pos += h.BatchLength
		}
	}
	res.Wrapped = true
	return res, nil
}

// scrubCursorAfter is the cursor at the start of the segment after index si (the first one when si is
// the last).
func (l *Log) scrubCursorAfter(si int) ScrubCursor {
	if si+1 < len(l.segments) {
		return ScrubCursor{SegmentStart: l.segments[si+1].startOffset}
	}
	return ScrubCursor{}
}

// Check verifies the partition log in dir without changing anything (the offline `iggy-server
// check`): every batch of every segment, the indexes against the log, the consumer offset files. It
// returns what is wrong (empty for a sound log); an error means the directory could not be read or
// its segments overlap.
func Check(dir string) ([]string, error) {
	l, err := Open(dir, Options{ReadOnly: true, ServeAroundDamage: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Findings(), nil
}
