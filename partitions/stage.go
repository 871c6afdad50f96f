package partitions

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// Staged batches (issue 9 points 2 and 3). A cluster replica writes a
// prepared batch into the active segment before it commits, past the
// applied end, so its prepare WAL records a reference (segment, position,
// length) instead of a second copy of the body; a single node stages its
// batches the same way, so their bytes are written off its shard loop.
// Staged bytes
// are not part of the log: reads, stats, syncs' frontier and the scrubber
// stop at the applied end (segment.sizeBytes). Append of the batch staged
// first adopts it in place (accounting and index only, no data write);
// any other Append, and every operation that moves or removes the active
// segment's end, needs the staged bytes gone first (CutStaged), after the
// caller wrote the prepares that name them inline elsewhere.
//
// Staging is refused (ErrNotStageable), and the caller keeps the body
// inline, unless the batch continues the staged ones exactly (or the
// applied end, when none) and starts below the active segment's size (it
// may end past it, as an appended batch may; the next append rolls): a
// staged batch never rolls a segment nor crosses a hole, so staged
// bytes live only in the active segment, after its applied end. Sealed
// staged bytes that survive a crash are not told apart from applied ones
// by Open; a cluster replica takes back everything past its checkpoint at
// a restart (node/partition_vsr.go), so they never pass for applied data.
// A single node stages unsealed (Options.StageUnsealed): Open cuts them.

// ErrNotStageable: the batch cannot be staged now; write it inline.
var ErrNotStageable = errors.New("batch cannot be staged")

// ErrStagedConflict: Append of a batch other than the first staged one
// while batches are staged.
var ErrStagedConflict = errors.New("another batch is staged at the applied end")

// stagedBatch is one staged batch in the active segment.
type stagedBatch struct {
	offset   uint64 // base offset
	count    uint32
	position uint64
	length   uint64
	checksum uint64
	tag      uint64 // the caller's (a cluster replica's: the op)
	index    stagedIndex
}

// Stage writes a stamped, sealed batch past the applied end (after the
// batches staged before it) and says where it is; tag is the caller's
// name for it (ascending). It is not synced (Sync syncs staged bytes too)
// and not readable until Append adopts it. A log that reserves offsets
// moves its reservation here, ahead of the staged end, so adopting never
// writes it; with StageUnsealed the batch is written unsealed (stage
// header, below). A staged batch may end past the segment size, as an
// appended one may; nothing is staged after it (the next append rolls).
func (l *Log) Stage(batch []byte, tag uint64) (BatchLocation, error) {
	h, err := wire.CheckBatchSeal(batch)
	if err != nil {
		return BatchLocation{}, fmt.Errorf("stage in %s: %w", l.dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return BatchLocation{}, err
	}
	s := l.active()
	next, pos := l.nextOffset, s.sizeBytes
	if n := len(l.staged); n > 0 {
		last := l.staged[n-1]
		next, pos = last.offset+uint64(last.count), last.position+last.length
	}
	switch {
	case len(l.staged) > 0 && tag <= l.staged[len(l.staged)-1].tag:
		// Tags ascend (the caller's ops): a later op staged first (a lagging
		// replica's repairs fill gaps out of order) keeps the earlier inline.
		return BatchLocation{}, fmt.Errorf("%w: tag %d after tag %d", ErrNotStageable, tag, l.staged[len(l.staged)-1].tag)
	case h.BaseOffset != next:
		return BatchLocation{}, fmt.Errorf("%w: base offset %d, staged end %d", ErrNotStageable, h.BaseOffset, next)
	case l.nextOffset != s.nextOffset:
		return BatchLocation{}, fmt.Errorf("%w: a hole is crossed first", ErrNotStageable)
	case pos >= l.opts.SegmentSizeBytes:
		return BatchLocation{}, fmt.Errorf("%w: the active segment is full", ErrNotStageable)
	}
	if l.opts.ReserveOffsets {
		if err := l.reserveFor(h.BaseOffset + uint64(h.MessageCount)); err != nil {
			return BatchLocation{}, fmt.Errorf("stage in %s: %w", l.dir, err)
		}
	}
	st := stagedBatch{offset: h.BaseOffset, count: h.MessageCount, position: pos,
		length: uint64(len(batch)), checksum: h.BatchChecksum, tag: tag}
	err = l.writeStaged(s, batch, pos)
	if err == nil {
		err = l.stageIndexEntry(s, &st, h.BaseTimestamp) // an entry past the applied index is harmless
	}
	if err != nil {
		if terr := s.logFile.Truncate(int64(pos)); terr != nil {
			l.failure = fmt.Errorf("%w: staging failed (%v) and could not be rolled back: %v", ErrFailed, err, terr)
			return BatchLocation{}, l.failure
		}
		return BatchLocation{}, fmt.Errorf("stage in %s at byte %d: %w", l.dir, pos, err)
	}
	s.dirty = true
	l.mutations++
	l.staged = append(l.staged, st)
	l.startWriteback(s, pos+uint64(len(batch)))
	return BatchLocation{SegmentStartOffset: s.startOffset, Position: pos, Length: uint64(len(batch))}, nil
}

// Unsealed staging (Options.StageUnsealed): the batch's header goes down
// with batch_length zero, which no batch has (it covers at least the
// header), so Open reads it as the end of the log; Append writes the
// length when it adopts the batch. A single node commits every op it
// stages, but apply may still refuse one (a retry's replay, a stamp a
// purge overtook): its bytes must not come back as data after a crash
// between the stage and the cut.

// writeStaged writes batch at pos of s (under l.mu), unsealed if the log
// says so: its header with batch_length zero, then the rest.
func (l *Log) writeStaged(s *segment, batch []byte, pos uint64) error {
	if !l.opts.StageUnsealed {
		_, err := s.logFile.WriteAt(batch, int64(pos))
		return err
	}
	var header [wire.BatchHeaderSize]byte
	copy(header[:], batch)
	clear(header[wire.BatchLengthOffset : wire.BatchLengthOffset+8])
	if _, err := s.logFile.WriteAt(header[:], int64(pos)); err != nil {
		return err
	}
	_, err := s.logFile.WriteAt(batch[wire.BatchHeaderSize:], int64(pos)+wire.BatchHeaderSize)
	return err
}

// sealStaged (Append adopting an unsealed staged batch at pos, under
// l.mu) writes its batch_length.
func (l *Log) sealStaged(s *segment, pos, length uint64) error {
	if !l.opts.StageUnsealed {
		return nil
	}
	var field [8]byte
	binary.LittleEndian.PutUint64(field[:], length)
	if _, err := s.logFile.WriteAt(field[:], int64(pos)+wire.BatchLengthOffset); err != nil {
		return fmt.Errorf("seal the staged batch at %d: %w", pos, err)
	}
	return nil
}

// sealRead puts back the batch_length of an unsealed staged batch read
// whole at loc (b its bytes), as it will be once adopted.
func (l *Log) sealRead(s *segment, loc BatchLocation, b []byte) {
	if l.opts.StageUnsealed && loc.Position >= s.sizeBytes && len(b) >= wire.BatchHeaderSize {
		binary.LittleEndian.PutUint64(b[wire.BatchLengthOffset:], loc.Length)
	}
}

// adoptable reports whether batch (header h) is the first staged batch,
// at the applied end of s (under l.mu). With batches staged and another
// one appended, Append returns ErrStagedConflict.
func (l *Log) adoptable(s *segment, h wire.BatchHeader, length int) (bool, error) {
	if len(l.staged) == 0 {
		return false, nil
	}
	st := l.staged[0]
	if st.offset != h.BaseOffset || st.length != uint64(length) || st.checksum != h.BatchChecksum || st.position != s.sizeBytes {
		return false, fmt.Errorf("append to %s at offset %d: %w (offset %d, %d bytes)", l.dir, h.BaseOffset,
			ErrStagedConflict, st.offset, st.length)
	}
	return true, nil
}

// isStagedHead reports whether the batch with header h (length bytes) is
// the first staged one: its offset, length and batch checksum.
func (l *Log) isStagedHead(h wire.BatchHeader, length int) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.staged) == 0 {
		return false
	}
	st := l.staged[0]
	return st.offset == h.BaseOffset && st.length == uint64(length) && st.checksum == h.BatchChecksum
}

// CutStaged removes every staged batch (the caller no longer needs their
// bytes: the prepares naming them were written inline, or are gone).
func (l *Log) CutStaged() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cutStagedLocked()
}

func (l *Log) cutStagedLocked() error {
	if len(l.staged) == 0 {
		return nil
	}
	s := l.active()
	if err := l.cutStagedIndexFrom(s, 0); err != nil {
		return err
	}
	if err := s.logFile.Truncate(int64(s.sizeBytes)); err != nil {
		l.failure = fmt.Errorf("%w: cutting the staged batches failed: %v", ErrFailed, err)
		return l.failure
	}
	l.staged = nil
	return nil
}

// CutStagedFrom removes the staged batches tagged tag or above (and
// every one after them).
func (l *Log) CutStagedFrom(tag uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, st := range l.staged {
		if st.tag < tag {
			continue
		}
		if err := l.cutStagedIndexFrom(l.active(), i); err != nil {
			return err
		}
		if err := l.active().logFile.Truncate(int64(st.position)); err != nil {
			l.failure = fmt.Errorf("%w: cutting the staged batches failed: %v", ErrFailed, err)
			return l.failure
		}
		l.staged = l.staged[:i]
		if i == 0 {
			l.staged = nil
		}
		return nil
	}
	return nil
}

// FirstStaged reports the first staged batch: its tag and place.
func (l *Log) FirstStaged() (tag uint64, at BatchLocation, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.staged) == 0 {
		return 0, BatchLocation{}, false
	}
	st := l.staged[0]
	return st.tag, BatchLocation{SegmentStartOffset: l.active().startOffset, Position: st.position, Length: st.length}, true
}

// StagedCount is how many batches are staged.
func (l *Log) StagedCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.staged)
}

// stagedEnd is where the staged batches of s end (its applied end if
// none, or if s is not the active segment).
func (l *Log) stagedEnd(s *segment) uint64 {
	if n := len(l.staged); n > 0 && s == l.active() {
		return l.staged[n-1].position + l.staged[n-1].length
	}
	return s.sizeBytes
}
