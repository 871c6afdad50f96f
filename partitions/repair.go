package partitions

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/lodestream/lodestream/wire"
)

// A cluster's replicas hold byte-identical segment files (the primary stamps every batch before it
// is replicated, and every replica appends the same records at the same places), so a batch that
// rotted on one replica is repaired with the same bytes read from a peer, written back where it was:
// nothing else in the log moves, and the partition is served throughout (issue 8 point 4). The node
// finds the damage (a poll, a record read, the scrubber), asks DamagedBatchOffset which offset to
// fetch, fetches that record from a peer, and hands it to RepairBatch, which checks it fills exactly
// the damaged batch's place before writing it.

// DamagedBatchOffset returns the base offset of the batch at byte position pos of the segment named
// file (a CorruptionError's File and Position): the headers before it are walked from the nearest
// index entry, so it is exact even when the damaged batch's own header is unreadable.
func (l *Log) DamagedBatchOffset(file string, pos uint64) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, err := l.segmentNamed(file)
	if err != nil {
		return 0, err
	}
	_, off, err := s.batchBoundary(pos, false)
	return off, err
}

// RepairBatch writes records, whole batches fetched from a peer from the damaged batch's offset on,
// over the damaged batch at byte position pos of the segment named file, and syncs them. Each record
// must verify, the first start at the offset the walk expects at pos, and the shortest run of them
// that ends exactly where a local batch starts (or where the segment ends) is written: it replaces
// the damaged bytes (adjacent damaged batches included) and nothing else. The bytes are read back.
func (l *Log) RepairBatch(file string, pos uint64, records []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	s, err := l.segmentNamed(file)
	if err != nil {
		return err
	}
	_, want, err := s.batchBoundary(pos, false)
	if err != nil {
		return err
	}
	record, first, err := s.repairRun(pos, want, records)
	if err != nil {
		return fmt.Errorf("repair %s at byte %d: %w", file, pos, err)
	}
	h := first
	if _, err := s.logFile.WriteAt(record, int64(pos)); err != nil {
		return fmt.Errorf("repair %s at byte %d: %w", file, pos, err)
	}
	if err := s.logFile.Sync(); err != nil {
		return fmt.Errorf("repair %s at byte %d: sync: %w", file, pos, err)
	}
	back := make([]byte, len(record))
	if _, err := s.logFile.ReadAt(back, int64(pos)); err != nil {
		return fmt.Errorf("repair %s at byte %d: read back: %w", file, pos, err)
	}
	if !bytes.Equal(back, record) {
		return fmt.Errorf("repair %s at byte %d: the bytes read back differ from the bytes written", file, pos)
	}
	if len(s.damaged) > 0 {
		// Set apart at open: its accounting and index were built around the damage.
		if err := l.reloadSegment(s); err != nil {
			return fmt.Errorf("repair %s at byte %d: %w", file, pos, err)
		}
	}
	l.corruption.forget(corruptionPlace{s.startOffset, pos})
	l.logger.Warn("corrupt batch repaired with a peer's copy", "dir", l.dir, "file", file, "position", pos,
		"offset", h.BaseOffset, "bytes", len(record))
	return nil
}

// repairRun picks from records (a peer's batches from offset want on) the shortest run that verifies
// and ends at a local batch boundary of s (or at its end), written from pos; it returns the run and
// its first batch's header.
func (s *segment) repairRun(pos, want uint64, records []byte) ([]byte, wire.BatchHeader, error) {
	var first wire.BatchHeader
	used, next := uint64(0), want
	for i := 0; len(records[used:]) > 0; i++ {
		h, err := wire.VerifyBatchRecord(records[used:])
		if err != nil {
			return nil, first, fmt.Errorf("the peer's record at offset %d: %w", next, err)
		}
		if h.BaseOffset != next {
			return nil, first, fmt.Errorf("the peer's record starts at offset %d, the batch here at %d", h.BaseOffset, next)
		}
		if i == 0 {
			first = h
		}
		used += h.BatchLength
		next += uint64(h.MessageCount)
		end := pos + used
		if end > s.sizeBytes {
			return nil, first, fmt.Errorf("the peer's records (%d bytes) run past the segment's end (%d)", used, s.sizeBytes)
		}
		if end == s.sizeBytes {
			return records[:used], first, nil
		}
		var buf [wire.BatchHeaderSize]byte
		if _, err := s.logFile.ReadAt(buf[:], int64(end)); err != nil {
			return nil, first, fmt.Errorf("read the batch header at byte %d: %w", end, err)
		}
		if local, err := wire.DecodeBatchHeader(buf[:]); err == nil && local.BaseOffset == next {
			// A batch starts there (its own damage, if any, is repaired on its own).
			return records[:used], first, nil
		}
	}
	return nil, first, fmt.Errorf("the peer's records (%d bytes) do not end where a batch here starts", used)
}

// reloadSegment walks segment s again from its file, as recovery does, and replaces it: the ranges
// set apart at open and their forced index entries go, and the index file is rewritten when it differs
// from the one the walk rebuilds (the same rule as appends, so the replicas' indexes match again). A
// failed walk leaves s readable and the log refusing writes until it is reopened.
func (l *Log) reloadSegment(s *segment) error {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].startOffset >= s.startOffset })
	nextStart, last := uint64(math.MaxUint64), i == len(l.segments)-1
	if !last {
		nextStart = l.segments[i+1].startOffset
	}
	if err := s.close(); err != nil {
		l.failure = fmt.Errorf("%w: reload segment %d: %v", ErrFailed, s.startOffset, err)
		return l.failure
	}
	// The segment's records are applied ones: damage among them is corruption, never a torn tail
	// to cut. The active segment's walk stops at its applied end: the batches staged past it are
	// not records yet (whole-node simulator seed 48374: a repair's rebuild counted a cluster
	// replica's staged batches as applied, the segment rolled early, and its files left its peers').
	bounds := walkBounds{syncedBelow: max(l.opts.SyncedBelow, s.nextOffset)}
	if last && len(l.staged) > 0 {
		bounds.appliedEnd = l.staged[0].position
	}
	rebuilt, err := l.recoverSegment(s.startOffset, nextStart, last, bounds)
	if last {
		l.forgetStagedIndex() // the reload rewrote the index file from what is applied
	}
	if err != nil {
		mode := os.O_RDWR
		if l.readOnly {
			mode = os.O_RDONLY
		}
		s.logFile = l.opts.Files.Register(l.opts.FS, segmentLogPath(l.dir, s.startOffset), mode, l.opts.SyncOnEvict)
		if last && !l.readOnly {
			s.indexFile = l.opts.Files.Register(l.opts.FS, segmentIndexPath(l.dir, s.startOffset), os.O_RDWR, l.opts.SyncOnEvict)
		}
		l.failure = fmt.Errorf("%w: reload segment %d: %v", ErrFailed, s.startOffset, err)
		return l.failure
	}
	l.segments[i] = rebuilt
	return nil
}

// ErrSegmentGone: the segment a repair names is no longer in the log (retention, a purge or a cut
// removed it, and its damage with it).
var ErrSegmentGone = errors.New("no such segment (retention may have removed it)")

// segmentNamed finds the segment whose log file is named file (under l.mu).
func (l *Log) segmentNamed(file string) (*segment, error) {
	start, ok := parseSegmentName(file, logSuffix)
	if !ok {
		return nil, fmt.Errorf("%s: not a segment file name", file)
	}
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].startOffset >= start })
	if i == len(l.segments) || l.segments[i].startOffset != start {
		return nil, fmt.Errorf("%s in %s: %w", file, l.dir, ErrSegmentGone)
	}
	return l.segments[i], nil
}
