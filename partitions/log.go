// Package partitions is one partition's on-disk log: segment files with sparse indexes, commit-time
// appends of stamped batches, polling with every strategy, retention, purge and consumer offsets, and
// crash recovery that verifies every batch on open. See docs/partitions.md.
package partitions

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// Log is one partition's log. All methods are safe for concurrent use: writes (Append, retention,
// purge, offsets) are serialised; polls run concurrently with each other.
type Log struct {
	dir    string
	opts   Options
	logger *slog.Logger

	mu         sync.RWMutex
	segments   []*segment // ascending start offsets; the last one is active
	nextOffset uint64     // offset the next appended batch must carry
	dirDirty   bool       // a segment file was created or removed since the last directory sync
	// recoveredTail is the segment active at Open, whose recovered tail (and name) the first Sync
	// after a change makes durable; nil once done.
	recoveredTail *segment
	failure       error // set by a write that could not be rolled back
	// rollSyncErr: a roll's fsync failed since the last Sync, which returns it; rollSyncSegment is
	// that segment's start offset.
	rollSyncErr     error
	rollSyncSegment uint64
	// mutations counts the changes that leave something for a sync (a segment or the directory
	// dirty): Sync, which runs its fdatasyncs without the exclusive lock, marks clean only what
	// no change touched meanwhile (sync.go).
	mutations  uint64
	closed     bool
	offsets    *offsetStore
	corruption corruptionReports
	readOnly   bool   // Options.ReadOnly
	reserved   uint64 // durable offset reservation (Options.ReserveOffsets)
	// reservedRebooted: the reservation was written before the machine last booted.
	reservedRebooted bool
	// reservedDurable: this process wrote the reservation durably. The file Open reads may be a
	// replacement whose rename a failed directory fsync left undurable (a power loss can revert it),
	// so the first append rewrites it before handing out offsets.
	reservedDurable bool
	reserving       *reservationAhead // the next reservation, being written ahead (reserve.go)
	// syncedBelow: every batch below this offset is known synced: Open reads the durable value
	// offsets.reserved recorded, a successful sync or roll raises it, each reservation write
	// records it (reserve.go). A lower bound: syncs after the last reservation write are not
	// recorded.
	syncedBelow  uint64
	reservedBoot string // the boot id offsets.reserved was read with
	// foundLostMarkers: the directory listing at open held a hole marker (only then does Open look
	// for stale ones to remove).
	foundLostMarkers bool
	findings         []string // what the open-time walk found wrong (Findings)
	// indexEntryBuf is Append's index entry (under mu): a stack array would escape through the
	// vfs.File interface call and cost an allocation per indexed append.
	indexEntryBuf [indexEntrySize]byte
	// staged: batches written past the active segment's applied end,
	// not yet part of the log (stage.go).
	staged []stagedBatch
}

// BatchLocation says where an appended batch lives: the segment's start offset, the byte position in
// its .log file and the record length. A prepare journal can reference it instead of copying bytes.
type BatchLocation struct {
	SegmentStartOffset uint64
	Position           uint64
	Length             uint64
}

// Stats are the partition numbers the wire protocol reports (Partition, Topic and Stream bodies).
type Stats struct {
	MessagesCount uint64 // messages currently stored (after retention)
	SizeBytes     uint64 // bytes of all .log files
	SegmentsCount uint32
	CurrentOffset uint64 // offset of the last message ever appended; 0 when none
	FirstOffset   uint64 // first offset still stored (== NextOffset when nothing is stored)
	NextOffset    uint64
	// StartOffset is where the first segment starts: FirstOffset, or below
	// it when the log holds no message but begins with empty segments
	// sealed at recorded holes (offsets skipped, .lost markers).
	StartOffset uint64
}

// Open opens (creating if needed) the partition log in dir and recovers it: every segment is walked
// batch by batch with checksums verified; a torn or corrupt tail of the last segment is truncated with
// a warning; interior corruption returns an error matching ErrQuarantined (the caller keeps serving
// other partitions). Indexes are rebuilt from the log when missing or inconsistent, and consumer
// offsets are loaded.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, logger: opts.Logger, readOnly: opts.ReadOnly}
	if l.readOnly {
		l.failure = fmt.Errorf("%w: opened read-only", ErrFailed)
	} else if err := vfs.MkdirAllDurable(opts.FS, dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition directory %s: %w", dir, err)
	}
	if opts.ReserveOffsets && !l.readOnly {
		// Read first: recovery needs the reboot and the synced frontier (AckBeforeSync).
		if err := l.loadReservation(); err != nil {
			return nil, err
		}
	}
	if err := l.recoverSegments(); err != nil {
		l.closeSegments()
		return nil, err
	}
	if len(l.segments) == 0 && l.readOnly {
		l.segments = append(l.segments, &segment{})
	}
	if len(l.segments) == 0 {
		s, err := l.createSegment(0)
		if err != nil {
			return nil, err
		}
		l.segments = append(l.segments, s)
	}
	l.nextOffset = l.active().nextOffset
	if !l.readOnly {
		// What recovery found may be in the page cache only (a process crash keeps it, unsynced, and
		// its segment's name may not be durable): the first Sync makes it durable with what follows.
		// Deferred (syncRecoveredTail): a log closed without any change since it opened syncs nothing,
		// so a clean shutdown of thousands of idle partitions costs no fsyncs.
		l.recoveredTail = l.active()
	}
	if opts.ReserveOffsets && !l.readOnly && opts.AckBeforeSync && l.reservedRebooted {
		// After a reboot, what recovery read came from the disk: it is durable. Record it at once, so
		// damage to it after another power loss is reported, not cut as an unsynced tail. The file
		// keeps the boot id it had: until an append crosses the hole, every open (a retry of this
		// one included) must still resume at the reservation.
		if end := l.active().nextOffset; end > l.syncedBelow {
			l.syncedBelow = end
			if err := l.recordSyncedFrontier(); err != nil {
				l.closeSegments()
				return nil, fmt.Errorf("open %s: record the synced frontier: %w", dir, err)
			}
		}
	}
	if opts.ReserveOffsets && !l.readOnly && l.reserved > l.nextOffset && l.reservedRebooted {
		// The machine restarted: offsets up to the reservation may have been handed out and lost
		// with the page cache.
		l.nextOffset = l.reserved
	}
	if opts.RollFullAtOpen && !l.readOnly && l.active().sizeBytes >= l.opts.SegmentSizeBytes && l.nextOffset == l.active().nextOffset {
		// Reopened full (the empty segment its last append rolled to was lost with the page
		// cache): roll now, as that append did, so this replica's files stay its peers'. A
		// failure here is retried by the next append.
		if err := l.roll(); err != nil {
			l.logger.Error("segment roll at open failed", "dir", dir, "err", err)
		}
	}
	if !l.readOnly && l.foundLostMarkers {
		if err := l.removeLostMarkers(l.segments[0].startOffset); err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	if l.offsets, err = openOffsetStore(opts.FS, dir, opts.SyncOffsets, opts.Logger, l.readOnly, l.note); err != nil {
		l.closeSegments()
		return nil, err
	}
	return l, nil
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// createSegment creates empty .log and .index files for a new active segment starting at start.
func (l *Log) createSegment(start uint64) (*segment, error) {
	logFile, err := l.opts.Files.Create(l.opts.FS, segmentLogPath(l.dir, start), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644,
		l.opts.SyncOnEvict)
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", start, err)
	}
	indexFile, err := l.opts.Files.Create(l.opts.FS, segmentIndexPath(l.dir, start), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644,
		l.opts.SyncOnEvict)
	if err != nil {
		logFile.Close()
		l.opts.FS.Remove(logFile.Name())
		return nil, fmt.Errorf("create index of segment %d: %w", start, err)
	}
	l.dirDirty = true
	l.mutations++
	return &segment{startOffset: start, nextOffset: start, logFile: logFile, indexFile: indexFile}, nil
}

// Append writes an already-stamped batch (commit time) at the end of the log. Its base_offset must be
// NextOffset(); its framing and batch checksum are checked (message bodies were verified at
// admission). The active segment is sealed (synced) and a new one started once it reaches the segment
// size. Append does not sync: call Sync for persisted durability.
func (l *Log) Append(batch []byte) (BatchLocation, error) {
	h, err := wire.DecodeBatchHeader(batch)
	if err != nil {
		return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	// The batch staged first was checked when it was staged (stage.go):
	// adopting it skips the second pass over its bytes.
	sealed := false
	if !l.isStagedHead(h, len(batch)) {
		if _, err := wire.CheckBatchSeal(batch); err != nil {
			return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
		}
		sealed = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return BatchLocation{}, err
	}
	if h.BaseOffset != l.nextOffset {
		return BatchLocation{}, fmt.Errorf("append to %s: base offset %d, next offset %d: %w", l.dir,
			h.BaseOffset, l.nextOffset, ErrOffsetMismatch)
	}
	if err := l.crossHole(); err != nil {
		return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if l.opts.ReserveOffsets {
		if err := l.reserveFor(h.BaseOffset + uint64(h.MessageCount)); err != nil {
			return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
		}
	}
	if l.active().sizeBytes >= l.opts.SegmentSizeBytes {
		// A full active segment means an earlier roll failed (or the log was reopened full): roll now.
		if err := l.roll(); err != nil {
			return BatchLocation{}, fmt.Errorf("append to %s: roll full segment: %w", l.dir, err)
		}
	}
	s := l.active()
	pos := s.sizeBytes
	adopt, err := l.adoptable(s, h, len(batch))
	if err != nil {
		return BatchLocation{}, err
	}
	if !adopt && !sealed {
		if _, err := wire.CheckBatchSeal(batch); err != nil {
			return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
		}
	}
	if !adopt {
		if _, err := s.logFile.WriteAt(batch, int64(pos)); err != nil {
			return BatchLocation{}, l.rollbackWrite(s, pos, fmt.Errorf("write batch at %d: %w", pos, err))
		}
	} else if err := l.sealStaged(s, pos, h.BatchLength); err != nil {
		// Still staged, still unsealed: nothing changed.
		return BatchLocation{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	s.dirty = true
	l.mutations++
	indexLen := len(s.index)
	before := *s // the accounting noteBatch changes, restored if the index write fails
	if e, ok := s.noteBatch(pos, h.BatchLength, h.BaseOffset, h.BaseTimestamp, h.MessageCount,
		l.opts.IndexIntervalBytes); ok && !(adopt && l.stagedIndexWritten(indexLen, e)) {
		entry := l.indexEntryBuf[:]
		e.encode(entry)
		if _, err := s.indexFile.WriteAt(entry, int64(indexLen*indexEntrySize)); err != nil {
			// A full disk (issue 15 point 8): undo the batch exactly, so the log takes appends
			// again once space returns instead of refusing them until a restart.
			*s = before
			s.index = s.index[:indexLen]
			if adopt {
				// The staged bytes stay staged (nothing was written over them).
				return BatchLocation{}, fmt.Errorf("append to %s: write index entry: %w", l.dir, err)
			}
			return BatchLocation{}, l.rollbackWrite(s, pos, fmt.Errorf("write index entry: %w", err))
		}
	}
	if adopt {
		l.staged = l.staged[1:]
		if len(l.staged) == 0 {
			l.staged = nil
		}
	}
	l.nextOffset = s.nextOffset
	l.startWriteback(s, s.sizeBytes)
	loc := BatchLocation{SegmentStartOffset: s.startOffset, Position: pos, Length: h.BatchLength}
	if s.sizeBytes >= l.opts.SegmentSizeBytes && !l.opts.DeferRoll {
		if err := l.roll(); err != nil {
			// The batch is stored; only the roll failed. The next append retries it.
			l.logger.Error("segment roll failed", "dir", l.dir, "err", err)
		}
	}
	return loc, nil
}

// startWriteback begins the writeback of what s took below end since the last time, once that
// reaches Options.WritebackBytes: Append for what it wrote, Stage for the staged bytes (off the
// caller's loop). A failure is only logged: a later Sync reports what matters.
func (l *Log) startWriteback(s *segment, end uint64) {
	if l.opts.WritebackBytes == 0 {
		return
	}
	// Bytes cut since (a rolled-back write, cut staged batches) are begun again where the segment
	// now ends; staged bytes already begun stay begun.
	from := min(s.writebackFrom, l.stagedEnd(s))
	if end <= from || end-from < l.opts.WritebackBytes {
		s.writebackFrom = from
		return
	}
	if err := s.logFile.StartWriteback(int64(from), int64(end-from)); err != nil {
		l.logger.Debug("beginning a segment's writeback failed", "dir", l.dir, "segment", s.startOffset, "err", err)
	}
	s.writebackFrom = end
}

// rollbackWrite undoes a failed append by truncating the segment back to pos. If that fails too the
// log refuses further writes (ErrFailed) until reopened; recovery truncates the torn tail.
func (l *Log) rollbackWrite(s *segment, pos uint64, cause error) error {
	err := fmt.Errorf("append to %s: %w", l.dir, cause)
	if terr := s.logFile.Truncate(int64(pos)); terr != nil {
		l.failure = fmt.Errorf("%w: %v (rollback failed: %v)", ErrFailed, cause, terr)
		l.logger.Error("partition log write failed and could not be rolled back", "dir", l.dir, "err", l.failure)
		return l.failure
	}
	// Reload the accounting of the segment from the index so memory matches the truncated file.
	if len(s.index) > 0 && s.index[len(s.index)-1].position >= pos {
		s.index = s.index[:len(s.index)-1]
		if err := s.indexFile.Truncate(int64(len(s.index) * indexEntrySize)); err != nil {
			l.failure = fmt.Errorf("%w: %v (index rollback failed: %v)", ErrFailed, cause, err)
			return l.failure
		}
	}
	if s.sizeBytes > pos {
		// noteBatch already ran: the log must be reopened to rebuild exact counters.
		l.failure = fmt.Errorf("%w: %v", ErrFailed, cause)
		return l.failure
	}
	return err
}

// roll seals the active segment (syncing it, so a sealed segment never has a torn tail) and starts a
// new one at the next offset. On failure the old segment stays active and writable.
func (l *Log) roll() error {
	if len(l.staged) > 0 {
		return fmt.Errorf("roll %s: %d batches are staged past the applied end", l.dir, len(l.staged))
	}
	s := l.active()
	s.dirty = true
	l.mutations++
	return l.seal(s, s.sync(vfs.SyncsInParallel(l.opts.FS)))
}

// seal finishes the roll of the full active segment s once its sealing sync returned err: on success
// it starts the next segment; on failure s stays active (the failure is recorded for the next Sync).
func (l *Log) seal(s *segment, err error) error {
	if err != nil {
		// Linux marks the pages this fdatasync could not write clean: a later one succeeds without
		// them. The next Sync reports this failure, so the batches it covered are not acknowledged
		// as persisted on that later success (as for a failed sync at eviction, filecache.go).
		if l.rollSyncErr == nil {
			l.rollSyncErr = fmt.Errorf("sync of segment %d when sealing it failed: %w", s.startOffset, err)
			l.rollSyncSegment = s.startOffset
		}
		// Recorded durably now, not only at that Sync: a process that stops
		// before it would leave pages the disk never got, which no later
		// fsync writes and reads still show, and a power loss after a
		// checkpoint that counted them synced turned them into damage
		// (metadata simulator seed 47846). The next open rewrites the whole
		// segment through a fresh file (appends may still follow: the roll
		// is retried).
		if merr := l.markPendingCut(s.startOffset, math.MaxInt64); merr != nil {
			l.logger.Error("a segment's sealing fsync failed and its rewrite could not be recorded", "dir", l.dir,
				"segment", s.startOffset, "err", err, "record_err", merr)
		}
		return err
	}
	l.syncedBelow = max(l.syncedBelow, l.nextOffset) // everything below the new segment is synced
	next, err := l.createSegment(l.nextOffset)
	if err != nil {
		return err
	}
	if err := s.indexFile.Close(); err != nil {
		// The index was synced above; a failed close loses nothing.
		l.logger.Warn("closing the index of a sealed segment failed", "dir", l.dir, "start_offset", s.startOffset,
			"err", err)
	}
	s.indexFile = nil
	l.segments = append(l.segments, next)
	return nil
}

// FailedSyncPending reports a roll's failed fsync that the next Sync returns (the append that
// rolled succeeded). A caller whose next Sync may be far off (a cluster replica syncs at its
// checkpoints) calls Sync now, to be fenced and reopened without waiting.
func (l *Log) FailedSyncPending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rollSyncErr != nil
}

// syncRecoveredTail marks what Open recovered for the next sync (see recoveredTail).
func (l *Log) syncRecoveredTail() {
	if l.recoveredTail != nil {
		l.recoveredTail.dirty = true
		l.dirDirty = true
		l.mutations++
		l.recoveredTail = nil
	}
}

// changed reports whether anything was written since the last sync.
func (l *Log) changed() bool {
	if l.dirDirty || l.rollSyncErr != nil {
		return true
	}
	for _, s := range l.segments {
		if s.dirty {
			return true
		}
	}
	return false
}

func (l *Log) writable() error {
	if l.closed {
		return ErrClosed
	}
	return l.failure
}

// NextOffset is the base offset the next appended batch must carry.
func (l *Log) NextOffset() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.nextOffset
}

// Stats returns the partition's current numbers.
func (l *Log) Stats() Stats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.statsLocked()
}

func (l *Log) statsLocked() Stats {
	st := Stats{SegmentsCount: uint32(len(l.segments)), NextOffset: l.nextOffset, FirstOffset: l.nextOffset, StartOffset: l.nextOffset}
	if l.opts.DeferRoll && l.rollDueLocked() {
		// The roll is deferred to the caller's writer (roll.go): count the segment it starts, as the
		// append that filled the segment would have.
		st.SegmentsCount++
	}
	if len(l.segments) > 0 {
		st.StartOffset = l.segments[0].startOffset
	}
	if l.nextOffset > 0 {
		st.CurrentOffset = l.nextOffset - 1
	}
	for _, s := range l.segments {
		st.MessagesCount += s.messages
		st.SizeBytes += s.sizeBytes
	}
	if st.MessagesCount > 0 {
		// Segments are contiguous and only the active (last) one can be empty.
		st.FirstOffset = l.segments[0].startOffset
	}
	return st
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Close syncs and closes the log (graceful shutdown flushes everything). A log that changed
// nothing since it opened leaves what it recovered as it found it (recoveredTail).
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.collectReservation(true) // no write ahead outlives the log
	var syncErr error
	if l.failure == nil && !l.readOnly && l.opts.StageUnsealed {
		// Never adopted: a clean close leaves no torn tail for the next open to cut.
		syncErr = l.cutStagedLocked()
	}
	if l.failure == nil && !l.readOnly {
		if l.recoveredTail == nil || l.changed() {
			syncErr = l.syncLocked()
		}
		// Safe over an unsynced recovered tail too: after a power loss the next open, in another
		// boot, resumes at this reservation, above any offset the lost tail held.
		if syncErr == nil && l.opts.ReserveOffsets && l.reserved > l.nextOffset {
			// Clean shutdown: the next open resumes exactly here, nothing skipped.
			if err := l.writeReservation(l.nextOffset); err != nil {
				syncErr = fmt.Errorf("close %s: record the next offset: %w", l.dir, err)
			}
		}
	}
	l.closed = true
	closeErr := l.closeSegments()
	return errors.Join(syncErr, closeErr)
}

func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segments {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SegmentLogPath is the .log file of the segment starting at startOffset (for hard links from a
// prepare WAL that references appended batches by BatchLocation).
func (l *Log) SegmentLogPath(startOffset uint64) string { return segmentLogPath(l.dir, startOffset) }

// ReadBatch returns a copy of the batch record at loc, verified (framing and every checksum), or an
// error when the segment is gone (retention) or the bytes there are not that batch.
func (l *Log) ReadBatch(loc BatchLocation) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	for _, s := range l.segments {
		if s.startOffset != loc.SegmentStartOffset {
			continue
		}
		end := l.stagedEnd(s) // a staged batch is read back for its prepare (segment references)
		if loc.Length < wire.BatchHeaderSize || loc.Length > wire.BatchFrameBytesMax ||
			loc.Position > end || loc.Length > end-loc.Position {
			return nil, fmt.Errorf("read batch %+v from %s: outside the segment's %d bytes", loc, l.dir, end)
		}
		b := make([]byte, loc.Length)
		if _, err := s.logFile.ReadAt(b, int64(loc.Position)); err != nil {
			return nil, fmt.Errorf("read batch %+v from %s: %w", loc, l.dir, err)
		}
		l.sealRead(s, loc, b)
		if _, err := wire.VerifyBatch(b); err != nil {
			return nil, fmt.Errorf("read batch %+v from %s: %w", loc, l.dir, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("read batch %+v from %s: segment %d no longer exists", loc, l.dir, loc.SegmentStartOffset)
}
