package partitions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Offset reservation (issue 15 point 5, Options.ReserveOffsets): offsets are never handed out twice,
// whatever a crash loses. Before an append takes an offset at or above the durable reservation, the
// reservation moves ReserveOffsetsStep ahead (offsets.reserved: [reserved u64][XXH3-64 u64], tmp +
// fsync + rename + directory fsync). A clean Close writes the exact next offset. Open resumes at the
// reservation when it is above what recovery found (a crash, or a cut torn tail): the offsets in
// between may have been acknowledged and lost, so they are skipped. The first append above such a
// hole records it as "<first lost offset>.lost" (an empty marker) and starts a segment at the
// reservation; recovery accepts a gap between segments only where a marker names it (any other gap is
// damage). Polls skip the hole as they skip retention.
const (
	reservedFileName = "offsets.reserved"
	lostSuffix       = ".lost"
	// ReserveOffsetsStep is how far ahead of use the reservation moves: one durable write per this many
	// offsets per partition, and at most this many offsets skipped after a crash.
	ReserveOffsetsStep = 1 << 16
)

// loadReservation reads offsets.reserved (0 when absent: nothing reserved yet).
func (l *Log) loadReservation() error {
	data, err := os.ReadFile(filepath.Join(l.dir, reservedFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", reservedFileName, err)
	}
	v, ok := decodeOffsetFile(data)
	if !ok {
		// Without it a hole could not be proven: refuse rather than risk re-issuing offsets.
		return l.quarantine(reservedFileName, 0, l.nextOffset, fmt.Sprintf(
			"the offset reservation file is damaged (%d bytes); offsets handed out before the crash are unknown", len(data)))
	}
	l.reserved = v
	return nil
}

// reserve durably moves the reservation to at least upTo (under l.mu).
func (l *Log) reserve(upTo uint64) error {
	if upTo <= l.reserved {
		return nil
	}
	if err := writeFileAtomic(l.dir, filepath.Join(l.dir, reservedFileName), encodeOffsetFile(upTo), true); err != nil {
		return fmt.Errorf("reserve offsets up to %d in %s: %w", upTo, l.dir, err)
	}
	l.reserved = upTo
	return nil
}

// crossHole (first append after Open resumed above a hole, under l.mu) records the hole and starts a
// segment at the resumed offset.
func (l *Log) crossHole() error {
	s := l.active()
	if s.nextOffset >= l.nextOffset {
		return nil
	}
	marker := filepath.Join(l.dir, segmentBaseName(s.nextOffset)+lostSuffix)
	if err := writeFileAtomic(l.dir, marker, nil, true); err != nil {
		return fmt.Errorf("record lost offsets %d..%d in %s: %w", s.nextOffset, l.nextOffset-1, l.dir, err)
	}
	l.logger.Warn("offsets lost in a crash are skipped, never re-issued", "dir", l.dir, "first", s.nextOffset,
		"resume_at", l.nextOffset)
	return l.roll()
}

// lostMarker says whether a hole starting at offset was recorded.
func (l *Log) lostMarker(offset uint64) bool {
	_, err := os.Stat(filepath.Join(l.dir, segmentBaseName(offset)+lostSuffix))
	return err == nil
}

// removeLostMarkers deletes the hole markers below offset (retention or a reset removed what they
// separated); all of them when below is ^0.
func (l *Log) removeLostMarkers(below uint64) error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, lostSuffix) {
			continue
		}
		if start, ok := parseSegmentName(name, lostSuffix); ok && start < below {
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			l.dirDirty = true
		}
	}
	return nil
}
