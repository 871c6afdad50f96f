package partitions

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// Offset reservation (issue 15 point 5, Options.ReserveOffsets): offsets are never handed out twice,
// whatever a crash loses. Before an append takes an offset at or above the durable reservation, the
// reservation moves ReserveOffsetsStep ahead (offsets.reserved: [reserved u64][boot id, 36 bytes]
// [synced below u64][XXH3-64 u64], tmp + fsync + rename + directory fsync; a file written before the
// synced frontier existed lacks that field and reads as 0, unknown). A clean Close writes the exact
// next offset, and, having synced, the exact synced frontier.
//
// Only a restart of the machine can lose acknowledged offsets: every batch is written to the page
// cache before its reply, and a process crash (SIGKILL, panic) keeps the page cache. So Open resumes
// at the reservation when it is above what recovery found AND the machine rebooted since the
// reservation was written (its boot id, /proc/sys/kernel/random/boot_id, differs; an unknown boot id
// counts as a reboot): a power loss may have dropped an unsynced tail whose offsets were acknowledged.
// After a process crash the log continues where its data ends (a torn tail cut there was never
// acknowledged). The first append above such a hole records it as "<first lost offset>.lost" (an empty
// marker) and starts a segment at the reservation; recovery accepts a gap between segments only where a
// marker names it (any other gap is damage). Polls skip the hole as they skip retention.
const (
	reservedFileName = "offsets.reserved"
	lostSuffix       = ".lost"
	// ReserveOffsetsStep is how far ahead of use the reservation moves: one durable write per this many
	// offsets per partition, and at most this many offsets skipped after a crash.
	ReserveOffsetsStep = 1 << 16
)

// loadReservation reads offsets.reserved (0 when absent: nothing reserved yet).
func (l *Log) loadReservation() error {
	data, err := l.opts.FS.ReadFile(filepath.Join(l.dir, reservedFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", reservedFileName, err)
	}
	v, boot, synced, ok := decodeReservationFrontier(data)
	if !ok {
		// Without it a hole could not be proven: refuse rather than risk re-issuing offsets.
		return l.quarantine(reservedFileName, 0, l.nextOffset, fmt.Sprintf(
			"the offset reservation file is damaged (%d bytes); offsets handed out before the crash are unknown", len(data)))
	}
	l.reserved, l.reservedRebooted, l.syncedBelow, l.reservedBoot = v, boot == "" || boot != currentBootID(l.opts.FS), synced, boot
	return nil
}

// bootIDBytes is the length of a Linux boot id (a UUID string).
const bootIDBytes = vfs.BootIDBytes

// currentBootID is the boot id of the machine fsys belongs to ("" when unknown). A variable so tests
// can simulate a reboot.
var currentBootID = vfs.BootID

// writeReservation durably replaces offsets.reserved with reserved, the current boot id and the
// synced frontier known now.
func (l *Log) writeReservation(reserved uint64) error {
	l.collectReservation(true)
	data := encodeReservationFrontier(reserved, currentBootID(l.opts.FS), l.syncedBelow)
	return writeFileAtomic(l.opts.FS, l.dir, filepath.Join(l.dir, reservedFileName), data, true)
}

// recordSyncedFrontier rewrites offsets.reserved with the synced frontier, keeping the reservation and
// the boot id it was read with.
func (l *Log) recordSyncedFrontier() error {
	l.collectReservation(true)
	data := encodeReservationFrontier(l.reserved, l.reservedBoot, l.syncedBelow)
	return writeFileAtomic(l.opts.FS, l.dir, filepath.Join(l.dir, reservedFileName), data, true)
}

// encodeReservationBoot writes the reservation with a given boot id; "" makes the next Open resume at
// the reservation whatever happened (the offline cut uses it).
func encodeReservationBoot(reserved uint64, boot string) []byte {
	return encodeReservationFrontier(reserved, boot, 0)
}

const (
	reservationV1Bytes = 8 + bootIDBytes + 8     // without the synced frontier
	reservationBytes   = 8 + bootIDBytes + 8 + 8 // with it
)

func encodeReservationFrontier(reserved uint64, boot string, syncedBelow uint64) []byte {
	b := make([]byte, reservationBytes)
	binary.LittleEndian.PutUint64(b, reserved)
	copy(b[8:8+bootIDBytes], boot)
	binary.LittleEndian.PutUint64(b[8+bootIDBytes:], syncedBelow)
	binary.LittleEndian.PutUint64(b[reservationBytes-8:], xxh3.Hash(b[:reservationBytes-8]))
	return b
}

// decodeReservation reads offsets.reserved: the reservation and the boot id it was written in ("" when
// unknown).
func decodeReservation(b []byte) (uint64, string, bool) {
	v, boot, _, ok := decodeReservationFrontier(b)
	return v, boot, ok
}

// decodeReservationFrontier also returns the synced frontier (0 in a file from before it existed).
func decodeReservationFrontier(b []byte) (reserved uint64, boot string, syncedBelow uint64, ok bool) {
	n := len(b)
	if (n != reservationBytes && n != reservationV1Bytes) || binary.LittleEndian.Uint64(b[n-8:]) != xxh3.Hash(b[:n-8]) {
		return 0, "", 0, false
	}
	boot = strings.TrimRight(string(b[8:8+bootIDBytes]), "\x00")
	if n == reservationBytes {
		syncedBelow = binary.LittleEndian.Uint64(b[8+bootIDBytes:])
	}
	return binary.LittleEndian.Uint64(b), boot, syncedBelow, true
}

// reserveFor makes sure offsets below end are durably reserved before an append or stage hands them
// out (under l.mu). On the OS file system the next step is written ahead, off the write path: once
// less than half a step is left, a goroutine writes the reservation end+ReserveOffsetsStep (its
// fsyncs took 300 ms under load and held every batch of the partition behind them: single node at
// half load, p99 270 ms). An append waits only when it reaches the reservation before that write is
// done. A simulated file system keeps the synchronous write (its faults are drawn in call order).
func (l *Log) reserveFor(end uint64) error {
	l.collectReservation(false)
	if end > l.reserved || !l.reservedDurable {
		l.collectReservation(true) // the write ahead may cover end
		if end > l.reserved || !l.reservedDurable {
			return l.reserve(end + ReserveOffsetsStep)
		}
	}
	if l.reserving == nil && l.reserved-end < ReserveOffsetsStep/2 && vfs.SyncsInParallel(l.opts.FS) {
		l.startReservation(end + ReserveOffsetsStep)
	}
	return nil
}

// reservationAhead is a reservation write running off the write path (reserveFor).
type reservationAhead struct {
	upTo uint64
	done chan error // buffered: the writer never waits for the collector
}

// startReservation (under l.mu, none in flight) writes the reservation upTo on a goroutine. Every
// other writer of offsets.reserved collects it first (writeReservation, recordSyncedFrontier), so
// the file and its temporary are never written twice at once.
func (l *Log) startReservation(upTo uint64) {
	data := encodeReservationFrontier(upTo, currentBootID(l.opts.FS), l.syncedBelow)
	w := &reservationAhead{upTo: upTo, done: make(chan error, 1)}
	fsys, dir := l.opts.FS, l.dir
	go func() { w.done <- writeFileAtomic(fsys, dir, filepath.Join(dir, reservedFileName), data, true) }()
	l.reserving = w
}

// collectReservation (under l.mu) adopts a finished reservation write, waiting for it when wait is
// set. A failed one changes nothing: the reservation in memory stays the last durable one (the file
// may hold the new value undurably, which is above it either way), and the next append that needs
// more writes it synchronously and reports what fails.
func (l *Log) collectReservation(wait bool) {
	w := l.reserving
	if w == nil {
		return
	}
	var err error
	if wait {
		err = <-w.done
	} else {
		select {
		case err = <-w.done:
		default:
			return
		}
	}
	l.reserving = nil
	if err != nil {
		l.logger.Warn("writing the offset reservation ahead failed; the next append writes it", "dir", l.dir, "up_to", w.upTo, "err", err)
		return
	}
	if l.reservedDurable && w.upTo > l.reserved {
		l.reserved = w.upTo
	}
}

// reserve durably moves the reservation to at least upTo (under l.mu).
func (l *Log) reserve(upTo uint64) error {
	if upTo <= l.reserved && l.reservedDurable {
		return nil
	}
	upTo = max(upTo, l.reserved)
	if err := l.writeReservation(upTo); err != nil {
		return fmt.Errorf("reserve offsets up to %d in %s: %w", upTo, l.dir, err)
	}
	l.reserved, l.reservedDurable = upTo, true
	return nil
}

// crossHole (first append after Open resumed above a hole, or a skip, under l.mu) records the hole
// and starts a segment at the resumed offset.
func (l *Log) crossHole() error {
	s := l.active()
	if s.nextOffset >= l.nextOffset {
		return nil
	}
	empty := s.messages == 0 && s.sizeBytes == 0 && len(l.segments) > 1
	// An empty active segment that a recorded hole already precedes (two skips with no record
	// between) extends that hole: one marker, where the records end, as a replica that reads the
	// log (a state transfer sees one hole) records it (whole-node simulator seed 22746).
	if empty && l.lostMarkerIn(l.segments[len(l.segments)-2].startOffset, s.startOffset) {
		l.logger.Warn("offsets that may have been handed out and lost are skipped, never re-issued: the hole before them grows",
			"dir", l.dir, "from", s.startOffset, "resume_at", l.nextOffset)
	} else {
		marker := filepath.Join(l.dir, segmentBaseName(s.nextOffset)+lostSuffix)
		if err := writeFileAtomic(l.opts.FS, l.dir, marker, nil, true); err != nil {
			return fmt.Errorf("record lost offsets %d..%d in %s: %w", s.nextOffset, l.nextOffset-1, l.dir, err)
		}
		l.logger.Warn("offsets that may have been handed out and lost are skipped, never re-issued", "dir", l.dir,
			"first", s.nextOffset, "resume_at", l.nextOffset)
	}
	if empty {
		return l.replaceEmptyActive(s)
	}
	return l.roll()
}

// lostMarkerIn says whether a hole marker names an offset in [lo, hi).
func (l *Log) lostMarkerIn(lo, hi uint64) bool {
	entries, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return false // a marker more is written: a reopen accepts it
	}
	for _, e := range entries {
		if m, ok := parseSegmentName(e.Name(), lostSuffix); ok && m >= lo && m < hi {
			return true
		}
	}
	return false
}

// replaceEmptyActive moves an empty active segment (rolled to when its predecessor filled, before
// any record) to the offset after the hole, instead of sealing it: a replica whose roll failed and
// came only with the hole has no such empty segment, and the replicas' files must stay identical
// (whole-node simulator seed 16142). Its files go first: a crash before the new segment exists
// reopens on the full predecessor, and crossing the hole again gives the same files. A failure
// after a removal fences the log until it is reopened (recovery drops an orphan index).
func (l *Log) replaceEmptyActive(s *segment) error {
	if err := l.opts.FS.Remove(segmentLogPath(l.dir, s.startOffset)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the empty segment %d: %w", s.startOffset, err)
	}
	l.dirDirty = true
	l.mutations++
	if err := l.opts.FS.Remove(segmentIndexPath(l.dir, s.startOffset)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.failure = fmt.Errorf("%w: remove the index of the empty segment %d: %v", ErrFailed, s.startOffset, err)
		return l.failure
	}
	next, err := l.createSegment(l.nextOffset)
	if err != nil {
		l.failure = fmt.Errorf("%w: %v", ErrFailed, err)
		return l.failure
	}
	if err := s.close(); err != nil {
		l.logger.Warn("closing a removed empty segment failed", "dir", l.dir, "start_offset", s.startOffset, "err", err)
	}
	l.segments[len(l.segments)-1] = next
	l.syncedBelow = max(l.syncedBelow, l.nextOffset) // the predecessor was synced when sealed; the hole holds nothing
	return nil
}

// lostMarker says whether a hole starting at offset was recorded.
func (l *Log) lostMarker(offset uint64) bool {
	_, err := l.opts.FS.Stat(filepath.Join(l.dir, segmentBaseName(offset)+lostSuffix))
	return err == nil
}

// lostMarkerBelow is the highest offset a hole marker names in [lo, hi).
func (l *Log) lostMarkerBelow(lo, hi uint64) (uint64, bool) {
	entries, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return 0, false
	}
	best, found := uint64(0), false
	for _, e := range entries {
		if m, ok := parseSegmentName(e.Name(), lostSuffix); ok && m >= lo && m < hi && (!found || m > best) {
			best, found = m, true
		}
	}
	return best, found
}

// removeLostMarkers deletes the hole markers below offset (retention or a reset removed what they
// separated); all of them when below is ^0.
func (l *Log) removeLostMarkers(below uint64) error { return l.removeLostMarkersIn(0, below) }

// removeLostMarkersIn removes the hole markers naming an offset in [lo, hi).
func (l *Log) removeLostMarkersIn(lo, hi uint64) error {
	entries, err := l.opts.FS.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if m, ok := parseSegmentName(name, lostSuffix); ok && m >= lo && m < hi {
			if err := l.opts.FS.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			l.dirDirty = true
			l.mutations++
		}
	}
	return nil
}

// SkipTo continues the log at offset, above NextOffset: the offsets in between are recorded as
// lost (a "<first>.lost" marker, as a crash's hole is) and never used. A cluster's primary orders it
// in the partition's own log after a primary change, so every replica skips at the same point and
// keeps identical files (node/partition_reserve.go). An offset at or below NextOffset is a no-op.
func (l *Log) SkipTo(offset uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset <= l.nextOffset {
		return nil
	}
	if err := l.cutStagedLocked(); err != nil {
		return err
	}
	prev := l.nextOffset
	l.nextOffset = offset
	if err := l.crossHole(); err != nil {
		// The active segment still ends at prev: the skip is tried again whole (a marker it may have
		// written is rewritten then).
		l.nextOffset = prev
		return fmt.Errorf("skip offsets %d..%d of %s: %w", prev, offset-1, l.dir, err)
	}
	return nil
}

// holeBefore reports whether a recorded hole (a .lost marker) ends where segment si starts and
// covers offset from: the marker names the first lost offset, at or above where segment si-1 starts
// and at or below from. Called under l.mu, only when a read crosses a gap between segments.
func (l *Log) holeBefore(si int, from uint64) bool {
	if si == 0 || from >= l.segments[si].startOffset {
		return false
	}
	return l.lostMarkerIn(l.segments[si-1].startOffset, from+1)
}
