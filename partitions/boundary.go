package partitions

import (
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// batchBoundary finds the batch boundary of segment s at target, a byte position (byOffset false) or
// a base offset (byOffset true), walking the batch headers from the last index entry at or before it,
// and returns its position and offset. target inside a batch, or past the segment, is an error.
func (s *segment) batchBoundary(target uint64, byOffset bool) (pos, off uint64, err error) {
	key := func(pos, off uint64) uint64 {
		if byOffset {
			return off
		}
		return pos
	}
	what := "byte"
	if byOffset {
		what = "offset"
	}
	pos, off = 0, s.startOffset
	for _, e := range s.index {
		if key(e.position, e.offset) > target {
			break
		}
		pos, off = e.position, e.offset
	}
	var buf [wire.BatchHeaderSize]byte
	for key(pos, off) < target && pos < s.sizeBytes {
		if _, err := s.logFile.ReadAt(buf[:], int64(pos)); err != nil {
			return 0, 0, fmt.Errorf("segment %d: read the batch header at byte %d: %w", s.startOffset, pos, err)
		}
		h, err := wire.DecodeBatchHeader(buf[:])
		if err != nil || h.BaseOffset != off || h.BatchLength == 0 {
			return 0, 0, fmt.Errorf("segment %d: no batch boundary found at %s %d (the walk stopped at byte %d)",
				s.startOffset, what, target, pos)
		}
		pos, off = pos+h.BatchLength, off+uint64(h.MessageCount)
	}
	if key(pos, off) != target {
		return 0, 0, fmt.Errorf("segment %d: %s %d is not a batch boundary", s.startOffset, what, target)
	}
	return pos, off, nil
}
