package partitions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// recoveryReadBufferBytes is the sequential read buffer of the open-time walk.
const recoveryReadBufferBytes = 1 << 20

// segmentDamage is the first point of a segment that is not a verified, contiguous batch.
type segmentDamage struct {
	position uint64
	reason   string
	// complete: the batch's framing is whole (header sane, length present, offset expected) and only
	// its checksums fail. Appends are whole pwrites, so such a batch was written in full and damaged
	// later (or, unsynced, torn inside its pages): its offsets were handed out.
	complete bool
	length   uint64
	count    uint32
}

// unsyncedTailLost: damage at offset in the active segment is part of an unsynced tail a power loss
// tore (Options.AckBeforeSync): the machine rebooted since offsets.reserved was written, and the
// offset is at or above the synced frontier it recorded.
func (l *Log) unsyncedTailLost(offset uint64) bool {
	return l.opts.AckBeforeSync && l.opts.ReserveOffsets && l.reservedRebooted && offset >= l.syncedBelow
}

// recoverSegments loads every segment of dir in start-offset order, verifying each batch. A damaged
// tail of the last segment is truncated; any other damage returns a *QuarantineError.
func (l *Log) recoverSegments() error {
	entries, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list partition directory %s: %w", l.dir, err)
	}
	var starts []uint64
	indexes := map[uint64]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, salvageSuffix):
			start, err := l.finishSetAside(entries, name)
			if err != nil {
				return err
			}
			if start != nil {
				starts = append(starts, *start)
			}
		case strings.HasSuffix(name, ".tmp"):
			// A replacement interrupted by a crash: the original is intact.
			if l.readOnly {
				l.note("stale %s (left by an interrupted replacement; removed at open)", name)
				continue
			}
			if err := l.opts.FS.Remove(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("remove stale %s: %w", name, err)
			}
		case strings.HasSuffix(name, logSuffix):
			if start, ok := parseSegmentName(name, logSuffix); ok {
				starts = append(starts, start)
			}
		case strings.HasSuffix(name, indexSuffix):
			if start, ok := parseSegmentName(name, indexSuffix); ok {
				indexes[start] = true
			}
		case strings.HasSuffix(name, lostSuffix):
			l.foundLostMarkers = true
		}
	}
	slices.Sort(starts)
	for start := range indexes {
		if _, found := slices.BinarySearch(starts, start); !found {
			if l.readOnly {
				l.note("orphan index %s without a log file (removed at open)", segmentBaseName(start)+indexSuffix)
				continue
			}
			l.logger.Warn("removing orphan index without a log file", "dir", l.dir, "start_offset", start)
			if err := l.opts.FS.Remove(segmentIndexPath(l.dir, start)); err != nil {
				return fmt.Errorf("remove orphan index %d: %w", start, err)
			}
		}
	}
	for i, start := range starts {
		if i > 0 {
			prev := l.segments[i-1]
			if start > prev.nextOffset && l.lostMarker(prev.nextOffset) {
				// Offsets skipped on purpose (reserve.go, SkipTo): not damage.
				prev.nextOffset = start
			}
			if start < prev.nextOffset || (start > prev.nextOffset && !l.opts.ServeAroundDamage) {
				return l.quarantine(segmentBaseName(start)+logSuffix, 0, prev.nextOffset,
					fmt.Sprintf("segment starts at offset %d but the previous segment ends before offset %d",
						start, prev.nextOffset))
			}
			if start > prev.nextOffset {
				l.setApart(prev, damagedRange{from: prev.sizeBytes, to: prev.sizeBytes, firstOffset: prev.nextOffset,
					endOffset: start, reason: fmt.Sprintf("offsets missing between this segment and the next (starting at %d)", start)})
			}
		}
		nextStart, last := uint64(0), i == len(starts)-1
		if !last {
			nextStart = starts[i+1]
		}
		s, err := l.recoverSegment(start, nextStart, last, walkBounds{syncedBelow: l.opts.SyncedBelow})
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
	}
	return nil
}

// setApart records a damaged range of segment s (Options.ServeAroundDamage): reads refuse it, the rest
// of the log is served. Logged once at error level with the file, bytes and offsets.
func (l *Log) setApart(s *segment, d damagedRange) {
	s.damaged = append(s.damaged, d)
	if d.to > d.from {
		l.note("%s: bytes %d..%d damaged, offsets %d..%d refused: %s", segmentBaseName(s.startOffset)+logSuffix,
			d.from, d.to-1, d.firstOffset, d.endOffset-1, d.reason)
	} else {
		l.note("%s: offsets %d..%d refused: %s", segmentBaseName(s.startOffset)+logSuffix, d.firstOffset,
			d.endOffset-1, d.reason)
	}
	if s.nextOffset < d.endOffset {
		s.nextOffset = d.endOffset
	}
	s.forceIndex = true
	l.logger.Error("partition log damaged: the range is refused, the rest of the partition is served",
		"dir", l.dir, "file", segmentBaseName(s.startOffset)+logSuffix, "position", d.from, "end_position", d.to,
		"first_offset", d.firstOffset, "end_offset", d.endOffset, "reason", d.reason)
}

// note records a finding of the open-time walk (Findings; the offline check prints them).
func (l *Log) note(format string, args ...any) {
	l.findings = append(l.findings, fmt.Sprintf(format, args...))
}

// Findings lists what the open-time walk found wrong (damaged ranges, torn tails, index mismatches,
// corrupt offset files); empty for a sound log. With Options.ReadOnly nothing was changed on disk.
func (l *Log) Findings() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.findings)
}

// DamagedRange is a range recovery set apart (Options.ServeAroundDamage).
type DamagedRange struct {
	File                   string
	Position, EndPosition  uint64
	FirstOffset, EndOffset uint64 // offsets [FirstOffset, EndOffset) are refused
	Reason                 string
}

// DamagedRanges lists the ranges recovery set apart, in offset order.
func (l *Log) DamagedRanges() []DamagedRange {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []DamagedRange
	for _, s := range l.segments {
		for _, d := range s.damaged {
			out = append(out, DamagedRange{File: segmentBaseName(s.startOffset) + logSuffix, Position: d.from,
				EndPosition: d.to, FirstOffset: d.firstOffset, EndOffset: d.endOffset, Reason: d.reason})
		}
	}
	return out
}

// damageError is the CorruptionError a read gets at a damaged range (logged once per place).
func (l *Log) damageError(s *segment, d *damagedRange) (*CorruptionError, bool) {
	e, first := l.reportCorruption(s, d.from, d.firstOffset, "range set apart at open: "+d.reason)
	e.EndOffset = d.endOffset
	return e, first
}

// walkBounds bounds a segment's walk (recoverSegment).
type walkBounds struct {
	// appliedEnd > 0: bytes past it are batches staged after the applied end (stage.go), which a
	// rebuild at run time must neither count nor cut.
	appliedEnd uint64
	// syncedBelow: batches starting below it were synced (Options.SyncedBelow at open; a rebuild's
	// kept records): damage to them is corruption, never a torn tail.
	syncedBelow uint64
}

// recoverSegment opens, walks and (if needed) repairs one segment: at open (recoverSegments) and to
// rebuild one at run time (a tail cut, a repair). nextStart is the next segment's start offset (when
// not last).
func (l *Log) recoverSegment(start, nextStart uint64, last bool, bounds walkBounds) (*segment, error) {
	name := segmentBaseName(start) + logSuffix
	mode := os.O_RDWR
	if l.readOnly {
		mode = os.O_RDONLY
	}
	if err := l.finishPendingCut(start); err != nil {
		return nil, err
	}
	// The walk reads through the open-file cache like any read, so a boot never holds more than its
	// bound however many segments the node has.
	f := l.opts.Files.Register(l.opts.FS, segmentLogPath(l.dir, start), mode, l.opts.SyncOnEvict)
	s := &segment{startOffset: start, nextOffset: start, logFile: f}
	fail := func(err error) (*segment, error) {
		s.close()
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("open segment %s: %w", name, err))
	}
	size := uint64(info.Size())
	if bounds.appliedEnd > 0 {
		size = min(size, bounds.appliedEnd)
	}
	// A sealed segment was synced when it was sealed: damage in it is never a torn write. Nor is
	// damage to a batch below SyncedBelow: served around too when its extent is known (serve).
	serveAround := l.opts.ServeAroundDamage || (l.opts.ServeAroundSealedDamage && !last)
	var damage *segmentDamage
	for pos := uint64(0); ; {
		if damage, err = l.walkSegment(s, pos, size); err != nil {
			return fail(err)
		}
		if damage == nil {
			break
		}
		if last && l.unsyncedTailLost(s.nextOffset) {
			// Acknowledged before it was synced, then the power went: the page cache reached the
			// disk in pieces (holes read as zeros). Never promised durable: cut from the first
			// damage on, valid-looking batches after it included; the reservation keeps its offsets.
			damage.reason = "unsynced tail lost in a power loss: " + damage.reason
			break
		}
		if !last && !serveAround {
			return fail(l.quarantine(name, damage.position, s.nextOffset, "sealed segment damaged: "+damage.reason))
		}
		serve := serveAround || (l.opts.ServeAroundSealedDamage && s.nextOffset < bounds.syncedBelow)
		at, found, err := findVerifiedBatchAfter(f, damage.position, size, s.nextOffset)
		if err != nil {
			return fail(err)
		}
		var base uint64
		if found {
			if base, err = batchBaseOffsetAt(f, at); err != nil {
				return fail(err)
			}
			found = last || base < nextStart
		}
		if found && !serve {
			return fail(l.quarantine(name, damage.position, s.nextOffset, fmt.Sprintf(
				"%s, and a valid batch follows at byte %d (interior corruption, not a torn tail)", damage.reason, at)))
		}
		if found {
			l.setApart(s, damagedRange{from: damage.position, to: at, firstOffset: s.nextOffset, endOffset: base,
				reason: damage.reason})
			pos = at
			continue
		}
		if damage.complete && serve {
			// A whole batch that fails its checksums (issue 15 point 5): its offsets were handed out,
			// so they are refused, never cut and re-issued.
			l.setApart(s, damagedRange{from: damage.position, to: damage.position + damage.length,
				firstOffset: s.nextOffset, endOffset: s.nextOffset + uint64(damage.count), reason: damage.reason})
			s.sizeBytes = damage.position + damage.length
			pos = damage.position + damage.length
			continue
		}
		if !serveAround && s.nextOffset < bounds.syncedBelow {
			return fail(l.quarantine(name, damage.position, s.nextOffset, fmt.Sprintf(
				"%s, below offset %d that was synced (corruption, not a torn tail)", damage.reason, bounds.syncedBelow)))
		}
		if !last {
			// A sealed segment damaged to its end: its remaining offsets are refused.
			l.setApart(s, damagedRange{from: damage.position, to: size, firstOffset: s.nextOffset, endOffset: nextStart,
				reason: damage.reason})
			s.sizeBytes = size
			damage = nil
		}
		break
	}
	if damage != nil {
		if l.readOnly {
			l.note("%s: torn tail at byte %d (%d bytes after offset %d; cut at open): %s", name, damage.position,
				size-damage.position, s.nextOffset, damage.reason)
			return s, nil
		}
		l.logger.Warn("truncating torn tail of partition log", "dir", l.dir, "file", name,
			"position", damage.position, "dropped_bytes", size-damage.position, "next_offset", s.nextOffset,
			"reason", damage.reason)
		if err := l.markPendingCut(start, damage.position); err != nil {
			return fail(err)
		}
		if err := f.Truncate(int64(damage.position)); err != nil {
			return fail(fmt.Errorf("truncate torn tail of %s at %d: %w", name, damage.position, err))
		}
		if err := f.Sync(); err != nil {
			// The marker stays: the next open rewrites the segment (pending_cut.go).
			return fail(fmt.Errorf("sync truncated %s: %w", name, err))
		}
		if err := l.clearPendingCut(start); err != nil {
			return fail(err)
		}
	}
	if err := l.reconcileIndex(s); err != nil {
		return fail(err)
	}
	if last && !l.readOnly {
		// reconcileIndex left the file in place; it is opened on the first append.
		s.indexFile = l.opts.Files.Register(l.opts.FS, segmentIndexPath(l.dir, start), os.O_RDWR, l.opts.SyncOnEvict)
	}
	s.writebackFrom = s.sizeBytes // what the open found waits for the first Sync, not for the writeback hint
	return s, nil
}

// walkSegment reads the segment front to back, verifying every batch (framing, per-message and batch
// checksums, contiguous offsets) and rebuilding the in-memory accounting and sparse index. It returns
// the first damage, or nil when the whole file is sound.
func (l *Log) walkSegment(s *segment, pos, size uint64) (*segmentDamage, error) {
	// A buffer no larger than what is left to read: opening many small
	// segments (10,000 idle partitions) must not allocate 1 MiB each.
	r := bufio.NewReaderSize(io.NewSectionReader(s.logFile, int64(pos), int64(size-pos)), int(min(recoveryReadBufferBytes, size-pos)))
	var record []byte
	for pos < size {
		if size-pos < wire.BatchHeaderSize {
			return &segmentDamage{position: pos, reason: fmt.Sprintf("%d trailing bytes are shorter than a batch header", size-pos)}, nil
		}
		record = slices.Grow(record[:0], wire.BatchHeaderSize)[:wire.BatchHeaderSize]
		if _, err := io.ReadFull(r, record); err != nil {
			return nil, fmt.Errorf("read segment %d at %d: %w", s.startOffset, pos, err)
		}
		h, err := wire.DecodeBatchHeader(record)
		if err != nil {
			return &segmentDamage{position: pos, reason: err.Error()}, nil
		}
		switch {
		case h.BatchLength > size-pos:
			return &segmentDamage{position: pos, reason: fmt.Sprintf("batch_length %d overruns the file (%d bytes left)",
				h.BatchLength, size-pos)}, nil
		case h.BatchLength > wire.BatchFrameBytesMax:
			return &segmentDamage{position: pos, reason: fmt.Sprintf("batch_length %d exceeds the frame limit", h.BatchLength)}, nil
		case h.BaseOffset != s.nextOffset:
			return &segmentDamage{position: pos, reason: fmt.Sprintf("base_offset %d, expected %d", h.BaseOffset, s.nextOffset)}, nil
		}
		record = slices.Grow(record, int(h.BatchLength)-len(record))[:h.BatchLength]
		if _, err := io.ReadFull(r, record[wire.BatchHeaderSize:]); err != nil {
			return nil, fmt.Errorf("read segment %d at %d: %w", s.startOffset, pos, err)
		}
		if _, err := wire.VerifyBatchRecord(record); err != nil {
			return &segmentDamage{position: pos, reason: err.Error(), complete: framesMatchCount(record, h.MessageCount),
				length: h.BatchLength, count: h.MessageCount}, nil
		}
		s.noteBatch(pos, h.BatchLength, h.BaseOffset, h.BaseTimestamp, h.MessageCount, l.opts.IndexIntervalBytes)
		pos += h.BatchLength
	}
	return nil, nil
}

// framesMatchCount says whether a batch record that fails its checksums still has whole framing: its
// frames, walked by their lengths, end exactly at the record's end, number count (> 0) and carry
// offset deltas 0..count-1. Only then is message_count trusted for the offsets the batch took: a flip
// in it would otherwise refuse (or skip) billions of offsets.
func framesMatchCount(record []byte, count uint32) bool {
	if count == 0 {
		return false
	}
	pos, n := uint64(wire.BatchHeaderSize), uint32(0)
	for pos < uint64(len(record)) {
		m, err := wire.DecodeBatchMessageHeader(record[pos:])
		if err != nil || m.OffsetDelta != n || m.FrameSize() > uint64(len(record))-pos {
			return false
		}
		pos += m.FrameSize()
		n++
	}
	return n == count
}

// findVerifiedBatchAfter looks for any fully verified batch starting after position from whose base
// offset is at least minOffset. Finding one means the damage at from is interior corruption, not a
// torn append. Candidate positions are filtered on cheap header checks before a full verification.
func findVerifiedBatchAfter(f io.ReaderAt, from, size, minOffset uint64) (uint64, bool, error) {
	const chunkBytes = 1 << 20
	minRecord := uint64(wire.BatchHeaderSize + wire.BatchMessageHeaderSize + 1)
	buf := make([]byte, chunkBytes+wire.BatchHeaderSize)
	for chunkStart := from + 1; chunkStart+minRecord <= size; chunkStart += chunkBytes {
		n := min(uint64(len(buf)), size-chunkStart)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, int64(chunkStart)); err != nil && !errors.Is(err, io.EOF) {
			return 0, false, fmt.Errorf("scan for batches after damage at %d: %w", from, err)
		}
		for i := uint64(0); i < chunkBytes && i+wire.BatchHeaderSize <= n; i++ {
			q := chunkStart + i
			h := chunk[i : i+wire.BatchHeaderSize]
			length := binary.LittleEndian.Uint64(h[32:])
			if length < minRecord || length > size-q || length > wire.BatchFrameBytesMax ||
				binary.LittleEndian.Uint64(h[8:]) < minOffset || binary.LittleEndian.Uint32(h[48:]) == 0 ||
				!allZero(h[wire.BatchReservedOffset:]) {
				continue
			}
			record := make([]byte, length)
			if _, err := f.ReadAt(record, int64(q)); err != nil {
				return 0, false, fmt.Errorf("read candidate batch at %d: %w", q, err)
			}
			if _, err := wire.VerifyBatchRecord(record); err == nil {
				return q, true, nil
			}
		}
	}
	return 0, false, nil
}

// batchBaseOffsetAt reads the base_offset of the (verified) batch at pos.
func batchBaseOffsetAt(f io.ReaderAt, pos uint64) (uint64, error) {
	var b [16]byte
	if _, err := f.ReadAt(b[:], int64(pos)); err != nil {
		return 0, fmt.Errorf("read batch header at %d: %w", pos, err)
	}
	return binary.LittleEndian.Uint64(b[8:]), nil
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// reconcileIndex compares the .index file with the index rebuilt by the walk and rewrites the file
// when it is missing, short, longer, or disagrees.
func (l *Log) reconcileIndex(s *segment) error {
	path := segmentIndexPath(l.dir, s.startOffset)
	want := encodeIndex(s.index)
	have, err := l.opts.FS.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read index %s: %w", path, err)
	}
	if err == nil && bytes.Equal(have, want) {
		return nil
	}
	if l.readOnly {
		if len(have) > 0 || len(want) > 0 {
			l.note("%s: sparse index differs from the log (%d bytes, rebuilt %d; rewritten at open)",
				segmentBaseName(s.startOffset)+indexSuffix, len(have), len(want))
		}
		return nil
	}
	level := slog.LevelWarn
	if len(have) == 0 && len(want) == 0 {
		level = slog.LevelDebug // a fresh empty segment whose index file was never created
	}
	l.logger.Log(context.Background(), level, "rebuilding sparse index from the log", "dir", l.dir, "start_offset", s.startOffset,
		"index_bytes", len(have), "rebuilt_bytes", len(want))
	return writeFileAtomic(l.opts.FS, l.dir, path, want, true)
}

func encodeIndex(entries []indexEntry) []byte {
	b := make([]byte, len(entries)*indexEntrySize)
	for i, e := range entries {
		e.encode(b[i*indexEntrySize:])
	}
	return b
}

// quarantine logs the interior corruption once, loudly, and returns the typed error.
func (l *Log) quarantine(file string, position, offset uint64, reason string) error {
	err := &QuarantineError{Dir: l.dir, File: file, Position: position, Offset: offset, Reason: reason, fs: l.opts.FS}
	l.logger.Error("partition quarantined: interior corruption in the log; it will not be served",
		"dir", l.dir, "file", file, "position", position, "expected_offset", offset, "reason", reason)
	return err
}
