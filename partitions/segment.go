package partitions

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lodestream/lodestream/journal"
)

const (
	logSuffix   = ".log"
	indexSuffix = ".index"
	// indexEntrySize is one sparse index entry: [offset u64][timestamp u64][position u64], little-endian.
	// offset is the ABSOLUTE base offset of the indexed batch, timestamp its base_timestamp (µs) and
	// position its byte position in the segment's .log file.
	indexEntrySize = 24
	// segmentNameDigits is the zero-padded width of a segment's start offset in its file names.
	segmentNameDigits = 20
)

// indexEntry is one sparse index entry. timestampMax (memory only) is the largest base_timestamp of any
// batch up to and including this entry's batch in the segment, so timestamp lookups stay correct when
// append times are not monotone.
type indexEntry struct {
	offset       uint64
	timestamp    uint64
	position     uint64
	timestampMax uint64
}

func (e indexEntry) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], e.offset)
	binary.LittleEndian.PutUint64(b[8:], e.timestamp)
	binary.LittleEndian.PutUint64(b[16:], e.position)
}

// segment is one <start_offset:020>.log file with its .index. The last segment of a log is the active
// one (appended to); the others are sealed (read-only, synced when they were sealed).
type segment struct {
	startOffset  uint64
	nextOffset   uint64 // offset after the last message (== startOffset when empty)
	sizeBytes    uint64
	messages     uint64
	timestampMax uint64 // largest base_timestamp in the segment (0 when empty)
	index        []indexEntry
	lastIndexed  uint64      // position of the last indexed batch
	logFile      *CachedFile // opened on demand by the log's FileCache
	indexFile    *CachedFile // the active segment's only (nil once sealed)
	dirty        bool        // written since the last sync
	// writebackFrom: writeback of the log below this position was begun (Options.WritebackBytes).
	writebackFrom uint64
	// damaged are the byte ranges recovery set apart (Options.ServeAroundDamage), ascending; reads
	// that reach one answer its CorruptionError. forceIndex indexes the next batch (the first after a
	// damaged range, so polls past the damage start there).
	damaged    []damagedRange
	forceIndex bool
}

// damagedRange is a part of a segment recovery could not verify: bytes [from, to) holding offsets
// [firstOffset, endOffset). from == to == the segment's size marks offsets missing after the segment.
type damagedRange struct {
	from, to               uint64
	firstOffset, endOffset uint64
	reason                 string
}

// damageAt returns the damaged range a read at pos runs into, if any.
func (s *segment) damageAt(pos uint64) *damagedRange {
	for i := range s.damaged {
		d := &s.damaged[i]
		if (pos >= d.from && pos < d.to) || (d.from == d.to && pos == d.from) {
			return d
		}
	}
	return nil
}

func segmentBaseName(startOffset uint64) string {
	return fmt.Sprintf("%0*d", segmentNameDigits, startOffset)
}

func segmentLogPath(dir string, startOffset uint64) string {
	return filepath.Join(dir, segmentBaseName(startOffset)+logSuffix)
}

func segmentIndexPath(dir string, startOffset uint64) string {
	return filepath.Join(dir, segmentBaseName(startOffset)+indexSuffix)
}

// parseSegmentName returns the start offset encoded in a "<20 digits><suffix>" file name.
func parseSegmentName(name, suffix string) (uint64, bool) {
	base, ok := strings.CutSuffix(name, suffix)
	if !ok || len(base) != segmentNameDigits {
		return 0, false
	}
	v, err := strconv.ParseUint(base, 10, 64)
	return v, err == nil
}

// wantsIndexEntry is the one sparse-index rule, shared by Append and recovery so a rebuilt index
// equals the written one.
func (s *segment) wantsIndexEntry(position, intervalBytes uint64) bool {
	return indexEntryDue(len(s.index), s.forceIndex, s.lastIndexed, position, intervalBytes)
}

// indexEntryDue is the sparse rule: the segment's first batch, a forced
// one, and then one at least intervalBytes after the last indexed.
func indexEntryDue(entries int, force bool, lastIndexed, position, intervalBytes uint64) bool {
	return entries == 0 || force || position-lastIndexed >= intervalBytes
}

// noteBatch updates the in-memory accounting for a batch stored at position and returns the index
// entry to persist, if the sparse rule asks for one.
func (s *segment) noteBatch(position, length, baseOffset, baseTimestamp uint64, count uint32,
	intervalBytes uint64) (indexEntry, bool) {
	s.timestampMax = max(s.timestampMax, baseTimestamp)
	s.sizeBytes = position + length
	s.nextOffset = baseOffset + uint64(count)
	s.messages += uint64(count)
	if !s.wantsIndexEntry(position, intervalBytes) {
		return indexEntry{}, false
	}
	e := indexEntry{offset: baseOffset, timestamp: baseTimestamp, position: position, timestampMax: s.timestampMax}
	s.forceIndex = false
	s.index = append(s.index, e)
	s.lastIndexed = position
	return e, true
}

// positionForOffset is the byte position to start scanning from to find offset: the last indexed
// batch whose base offset is ≤ offset.
func (s *segment) positionForOffset(offset uint64) uint64 {
	lo, hi := 0, len(s.index) // first entry with offset > target
	for lo < hi {
		mid := (lo + hi) / 2
		if s.index[mid].offset <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0
	}
	return s.index[lo-1].position
}

// positionForTimestamp is the byte position to start scanning from to find the first batch whose
// base_timestamp ≥ ts: every batch before the returned position has a smaller timestamp.
func (s *segment) positionForTimestamp(ts uint64) uint64 {
	lo, hi := 0, len(s.index) // first entry whose running max reaches ts
	for lo < hi {
		mid := (lo + hi) / 2
		if s.index[mid].timestampMax < ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0
	}
	return s.index[lo-1].position
}

func (s *segment) close() error {
	var first error
	if s.indexFile != nil {
		if err := s.indexFile.Close(); err != nil {
			first = err
		}
		s.indexFile = nil
	}
	if s.logFile != nil {
		if err := s.logFile.Close(); err != nil && first == nil {
			first = err
		}
		s.logFile = nil
	}
	return first
}

// sync makes the segment's log and index durable (fdatasync). The two run at once (issue 9 point 3):
// the open walks every log and rebuilds the index from it (recovery.go), so an index made durable
// ahead of its log costs at most a rewrite at open, and the two fdatasyncs usually share one commit
// of the file system's journal instead of waiting for two. Each pins one descriptor of the open-file
// cache for its one call, and the caller pins none while it waits (filecache.go's rule). parallel is
// false on a simulated file system (vfs.SyncsInParallel): the two then run one after the other.
func (s *segment) sync(parallel bool) error {
	if !s.dirty {
		return nil
	}
	if err := syncSegmentFiles(s.startOffset, s.logFile, s.indexFile, parallel); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// syncSegmentFiles fdatasyncs a segment's log and (when open) index, at once when parallel. It
// touches no segment field, so Roll runs it without the log's lock.
func syncSegmentFiles(start uint64, log, index *CachedFile, parallel bool) error {
	defer journal.ObserveSync(journal.SyncSegment, time.Now())
	if index == nil || !parallel {
		if err := log.Sync(); err != nil {
			return fmt.Errorf("sync segment %d log: %w", start, err)
		}
		if index != nil {
			if err := index.Sync(); err != nil {
				return fmt.Errorf("sync segment %d index: %w", start, err)
			}
		}
		return nil
	}
	indexErr := make(chan error, 1)
	go func() { indexErr <- index.Sync() }()
	var err error
	if lerr := log.Sync(); lerr != nil {
		err = fmt.Errorf("sync segment %d log: %w", start, lerr)
	}
	if ierr := <-indexErr; ierr != nil {
		err = errors.Join(err, fmt.Errorf("sync segment %d index: %w", start, ierr))
	}
	return err
}
