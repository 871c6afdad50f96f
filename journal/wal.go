package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// WAL entry layout (little-endian):
//
//	magic u32 "LWA2" | payload_len u32 | op u64 | checksum u64 | payload
//
// checksum = XXH3-64 over header bytes 0..16 followed by the payload, so a
// damaged length, op or payload is detected. The payload is an encoded
// consensus.Prepare (prepare_codec.go) followed by batch_back u32: the
// bytes from the first record of the write that put it down (one append,
// one fdatasync) to it. Records of the first format (magic "LWAL", still
// read, and written by the partition prepare WAL) end with the prepare
// and count as a write of their own.
//
// A write's pages reach the disk in any order until its fdatasync
// returns, and the next write starts only after that: damage followed
// only by valid records of its own write is that write torn (holes
// included), cut at open; a valid record of a later write after it means
// the damaged one was synced (wal_segment.go, classifyWALDamage).
const (
	walMagic         uint32 = 0x4C41574C // "LWAL": no batch_back
	walMagicBatch    uint32 = 0x3241574C // "LWA2"
	walHeaderBytes          = 24
	WALEntryBytesMax        = 64 << 20
	// walFileName is the single-file WAL of earlier releases; OpenWAL
	// renames it to segment 0 (wal_segment.go).
	walFileName = "journal.wal"
)

// ErrWALPoisoned is returned after a failed write left the file in an
// unknown state; the process must reopen (and rescan) the WAL.
var ErrWALPoisoned = errors.New("metadata WAL poisoned by an earlier write failure")

type walEntryLoc struct {
	op     uint64
	seg    uint64 // segment seq
	offset int64
	size   int64 // header + payload
}

// walSeg is one retained segment file.
type walSeg struct {
	seq     uint64
	path    string
	f       vfs.File
	size    int64
	records int    // records written in it (tombstones included)
	live    int    // entries of w.live located in it
	maxOp   uint64 // highest op of any prepare record in it (hasOps)
	hasOps  bool
}

// WAL is the append-only metadata journal: segment files
// metadata/journal-<seq>.wal (wal_segment.go). Entries may be appended in
// any op order (journal repair fills gaps later); a later record for an op
// supersedes an earlier one, and a tombstone removes the ops at and above
// its own. One writer; methods are serialized by a mutex.
type WAL struct {
	mu   sync.Mutex
	fs   vfs.FS
	dir  string
	segs []*walSeg // retained segments in seq order; the last is the active one
	// live maps op → its latest record; lo and hi bound its ops (lo ≤
	// every op ≤ hi, not necessarily tight), so range removals cost the
	// range or the map, whichever is smaller.
	live     map[uint64]walEntryLoc
	lo, hi   uint64
	size     int64 // bytes over all segments
	poisoned bool
	// tornPath, tornAt, tornBytes: the torn tail the open cut (TornTail).
	tornPath          string
	tornAt, tornBytes int64
	// ioRead, ioWritten count the bytes this WAL read and wrote since it
	// was opened (the open's scan included): a test hook for cost.
	ioRead, ioWritten int64
}

// OpenWAL opens (creating if needed) the WAL segments in dir, scans them
// and returns the recovered entries (latest record per op, after
// tombstones) in op order. A single-file WAL of an earlier release
// (dir/journal.wal) is renamed to segment 0 first. The scan streams each
// file through a bounded buffer. A torn tail (an incomplete last record,
// or an incomplete tombstone group, of the last segment, with no complete
// valid record after it) is truncated and fsynced; damage followed by a
// valid record, a complete record that fails verification, or damage in
// a sealed segment refuses to open (ErrWALCorrupt).
func OpenWAL(dir string, opts ...Option) (*WAL, []consensus.Prepare, error) {
	fsys := fsOf(opts)
	if err := ensureDir(fsys, dir); err != nil {
		return nil, nil, err
	}
	legacy := filepath.Join(dir, walFileName)
	// A leftover temp file is an unfinished rewrite of the single-file WAL
	// of earlier releases: the original is intact.
	if err := fsys.Remove(legacy + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove stale %s.tmp: %w", legacy, err)
	}
	files, err := listWALSegments(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 1 && files[0].legacy {
		// Migration: the old single file is a valid segment as it stands.
		seg0 := filepath.Join(dir, walSegmentName(0))
		if err := fsys.Rename(legacy, seg0); err != nil {
			return nil, nil, fmt.Errorf("migrate %s to %s: %w", legacy, seg0, err)
		}
		if err := syncDir(fsys, dir); err != nil {
			return nil, nil, err
		}
		files[0] = walSegFile{seq: 0, path: seg0}
	}
	w := &WAL{fs: fsys, dir: dir, live: make(map[uint64]walEntryLoc)}
	if len(files) == 0 {
		if err := w.createSegmentLocked(1); err != nil {
			return nil, nil, err
		}
		return w, nil, nil
	}
	for _, sf := range files {
		f, err := fsys.OpenFile(sf.path, os.O_RDWR, 0o644)
		if err != nil {
			w.closeFiles()
			return nil, nil, fmt.Errorf("open WAL segment %s: %w", sf.path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			w.closeFiles()
			return nil, nil, fmt.Errorf("stat WAL segment %s: %w", sf.path, err)
		}
		w.segs = append(w.segs, &walSeg{seq: sf.seq, path: sf.path, f: f, size: st.Size()})
	}
	recovered, err := w.scan(files)
	if err != nil {
		w.closeFiles()
		return nil, nil, err
	}
	if err := w.resyncLocked(); err != nil {
		w.closeFiles()
		return nil, nil, err
	}
	return w, recovered, nil
}

// walResyncChunkBytes bounds the buffer resyncLocked copies through.
const walResyncChunkBytes = 1 << 20

// resyncLocked makes what the open read durable before anything is
// appended after it: every segment's bytes are written again in place and
// fdatasynced, then the directory is fsynced. A process whose fdatasync
// failed poisons its WAL and exits (the fence turns fatal); the kernel may
// have dropped the pages it could not write while reads still show them,
// and a later fdatasync succeeds without them (fsyncgate). Without the
// rewrite, this process would append synced records after a hole that a
// power loss then reveals: interior corruption, and a replica that no
// longer opens (found by the metadata simulator, node/metasim_*_test.go).
// A failed directory fsync likewise left a segment's entry unsynced. The
// cost is one write of the retained segments (about two checkpoint
// windows) per open.
func (w *WAL) resyncLocked() error {
	buf := make([]byte, min(walResyncChunkBytes, max(w.size, 1)))
	for _, s := range w.segs {
		for at := int64(0); at < s.size; {
			n := int(min(int64(len(buf)), s.size-at))
			if _, err := s.f.ReadAt(buf[:n], at); err != nil {
				return fmt.Errorf("resync WAL segment %s: read at %d: %w", s.path, at, err)
			}
			if _, err := s.f.WriteAt(buf[:n], at); err != nil {
				return fmt.Errorf("resync WAL segment %s: write at %d: %w", s.path, at, err)
			}
			at += int64(n)
		}
		if s.size > 0 {
			if err := datasync(s.f); err != nil {
				return fmt.Errorf("resync WAL segment %s: %w", s.path, err)
			}
		}
		w.ioWritten += s.size
	}
	return syncDir(w.fs, w.dir)
}

func (w *WAL) closeFiles() {
	for _, s := range w.segs {
		s.f.Close()
	}
}

func (w *WAL) scan(files []walSegFile) ([]consensus.Prepare, error) {
	byOp := make(map[uint64]consensus.Prepare)
	dmg, err := scanWAL(w.fs, files, func(r walRecord) {
		s := w.segs[r.seg]
		s.records++
		if r.tombstone {
			for _, op := range w.removeRangeLocked(r.prepare.Header.Op, math.MaxUint64) {
				delete(byOp, op)
			}
			return
		}
		op := r.prepare.Header.Op
		if !s.hasOps || op > s.maxOp {
			s.maxOp, s.hasOps = op, true
		}
		w.setLiveLocked(walEntryLoc{op: op, seg: s.seq, offset: r.offset, size: r.size})
		byOp[op] = r.prepare
	})
	for _, s := range w.segs {
		w.ioRead += s.size // the scan read every byte of every segment
	}
	if err != nil {
		return nil, err
	}
	if dmg != nil {
		if err := w.damageLocked(dmg); err != nil {
			return nil, err
		}
	}
	w.size = 0
	for _, s := range w.segs {
		w.size += s.size
	}
	ops := make([]uint64, 0, len(w.live))
	for op := range w.live {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	recovered := make([]consensus.Prepare, 0, len(ops))
	for _, op := range ops {
		recovered = append(recovered, byOp[op])
	}
	return recovered, nil
}

// damageLocked refuses a damaged log with the operator's remedy, or cuts
// a torn tail of the last segment (and fsyncs it).
func (w *WAL) damageLocked(d *walDamage) error {
	s := w.segs[d.seg]
	switch d.kind {
	case walInterior:
		where := fmt.Sprintf("at byte %d", d.nextAt)
		if d.nextSeg != d.seg {
			where = fmt.Sprintf("at byte %d of %s", d.nextAt, w.segs[d.nextSeg].path)
		}
		return fmt.Errorf("%w: WAL %s interior corruption at byte %d (%v): a valid entry (op %d) follows %s; refusing to open (remedy: wipe the metadata directory and rejoin by state transfer; a single node: `iggy-server repair --truncate-metadata-wal` drops it and everything after it)",
			ErrWALCorrupt, s.path, d.at, d.perr, d.nextOp, where)
	case walCompleteDamage:
		// Every Append is fdatasynced before it returns: a whole record
		// that fails verification was synced and then damaged.
		return fmt.Errorf("%w: WAL %s: the record at byte %d (op %d by its header, %d bytes) is complete but fails verification (%v): damage to synced data, not a torn tail; refusing to open (remedy: restore the file; a single node: `iggy-server repair --truncate-metadata-wal` drops it and everything after it)",
			ErrWALCorrupt, s.path, d.at, d.headerOp, d.segSize-d.at, d.perr)
	case walSealedDamage:
		return fmt.Errorf("%w: WAL %s: the record at byte %d fails verification (%v) in a sealed segment (%s follows; a segment is started only after its predecessor's appends were synced): damage to synced data, not a torn tail; refusing to open (remedy: restore the file; a single node: `iggy-server repair --truncate-metadata-wal` drops it and everything after it)",
			ErrWALCorrupt, s.path, d.at, d.perr, filepath.Base(w.segs[d.seg+1].path))
	}
	w.tornPath, w.tornAt, w.tornBytes = s.path, d.cut, s.size-d.cut
	if err := s.f.Truncate(d.cut); err != nil {
		return fmt.Errorf("truncate torn WAL tail of %s at byte %d: %w", s.path, d.cut, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("fsync WAL %s after tail truncation: %w", s.path, err)
	}
	s.size = d.cut
	return nil
}

// setLiveLocked makes loc the latest record of its op.
func (w *WAL) setLiveLocked(loc walEntryLoc) {
	if old, held := w.live[loc.op]; held {
		w.segBySeq(old.seg).live--
	}
	if len(w.live) == 0 {
		w.lo, w.hi = loc.op, loc.op
	}
	w.lo, w.hi = min(w.lo, loc.op), max(w.hi, loc.op)
	w.live[loc.op] = loc
	w.segBySeq(loc.seg).live++
}

// removeRangeLocked drops the live ops in [from, to] from memory and
// returns them, walking the range or the map, whichever is shorter.
func (w *WAL) removeRangeLocked(from, to uint64) []uint64 {
	if len(w.live) == 0 {
		return nil
	}
	from, to = max(from, w.lo), min(to, w.hi)
	if from > to {
		return nil
	}
	var gone []uint64
	drop := func(op uint64) {
		if loc, held := w.live[op]; held {
			w.segBySeq(loc.seg).live--
			delete(w.live, op)
			gone = append(gone, op)
		}
	}
	if to-from < uint64(len(w.live)) {
		for op := from; ; op++ {
			drop(op)
			if op == to {
				break
			}
		}
	} else {
		for op := range w.live {
			if op >= from && op <= to {
				drop(op)
			}
		}
	}
	switch {
	case len(w.live) == 0:
		w.lo, w.hi = 0, 0
	case from == w.lo: // to < hi, or the map would be empty
		w.lo = to + 1
	case to == w.hi: // from > lo
		w.hi = from - 1
	}
	return gone
}

// segBySeq finds a retained segment (segments are contiguous from segs[0]).
func (w *WAL) segBySeq(seq uint64) *walSeg {
	return w.segs[seq-w.segs[0].seq]
}

// parseEntry validates and decodes the entry at the start of b.
func parseEntry(b []byte) (consensus.Prepare, int, error) {
	p, n, _, err := parseEntryBatch(b)
	return p, n, err
}

// isWALMagic says whether m is a WAL entry's magic (either format).
func isWALMagic(m uint32) bool { return m == walMagic || m == walMagicBatch }

// parseEntryBatch is parseEntry that also returns the entry's batch_back
// (0 for the first format: a write of its own).
func parseEntryBatch(b []byte) (consensus.Prepare, int, int64, error) {
	if len(b) < walHeaderBytes {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("%d bytes left, short of a %d-byte header", len(b), walHeaderBytes)
	}
	le := binary.LittleEndian
	magic := le.Uint32(b)
	if !isWALMagic(magic) {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("bad magic %08x", magic)
	}
	payloadLen := int(le.Uint32(b[4:]))
	if payloadLen > WALEntryBytesMax-walHeaderBytes {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("payload length %d above bound", payloadLen)
	}
	if len(b)-walHeaderBytes < payloadLen {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("payload length %d exceeds the %d bytes left", payloadLen, len(b)-walHeaderBytes)
	}
	payload := b[walHeaderBytes : walHeaderBytes+payloadLen]
	if sum := entryChecksum(b[:16], payload); sum != le.Uint64(b[16:]) {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("checksum mismatch")
	}
	var back int64
	if magic == walMagicBatch {
		if len(payload) < 4 {
			return consensus.Prepare{}, 0, 0, fmt.Errorf("payload of %d bytes has no batch_back", len(payload))
		}
		back = int64(le.Uint32(payload[len(payload)-4:]))
		payload = payload[:len(payload)-4]
	}
	p, err := decodePrepare(payload)
	if err != nil {
		return consensus.Prepare{}, 0, 0, err
	}
	if p.Header.Op != le.Uint64(b[8:]) {
		return consensus.Prepare{}, 0, 0, fmt.Errorf("header op %d differs from prepare op %d", le.Uint64(b[8:]), p.Header.Op)
	}
	return p, walHeaderBytes + payloadLen, back, nil
}

// completeRecord says whether b starts with a whole record by its framing: a magic was written
// (not zero), the declared length fits the bound and the bytes present, and the bytes are not all
// zero. A torn append leaves an incomplete record or a zero-filled page: pages reach the disk in any
// order, so the sector holding its header may be lost while a later one of the same write is kept
// (zero magic, then bytes: a hole, not a record). A complete record that fails verification was
// damaged after it was synced.
func completeRecord(b []byte) bool {
	if len(b) < walHeaderBytes || binary.LittleEndian.Uint32(b) == 0 {
		return false
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if n > WALEntryBytesMax-walHeaderBytes || walHeaderBytes+n > len(b) {
		return false
	}
	for _, v := range b {
		if v != 0 {
			return true
		}
	}
	return false
}

// ErrWALCorrupt matches the errors of a WAL whose synced records are damaged.
var ErrWALCorrupt = errors.New("metadata WAL corrupt")

// findValidEntry looks for any complete valid entry starting at or after
// from (candidates are positions holding the magic).
func findValidEntry(data []byte, from int) (at int, op uint64, found bool) {
	for i := from; i+walHeaderBytes <= len(data); i++ {
		if !isWALMagic(binary.LittleEndian.Uint32(data[i:])) {
			continue
		}
		if p, _, err := parseEntry(data[i:]); err == nil {
			return i, p.Header.Op, true
		}
	}
	return 0, 0, false
}

func entryChecksum(head, payload []byte) uint64 {
	h := xxh3.New()
	h.Write(head)
	h.Write(payload)
	return h.Sum64()
}

// appendEntry appends p's record to buf, which holds what one write puts
// down from its first byte (batch_back is the record's position in it).
func appendEntry(buf []byte, p *consensus.Prepare) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeaderBytes)...)
	buf = appendPrepare(buf, p)
	le := binary.LittleEndian
	buf = le.AppendUint32(buf, uint32(start))
	le.PutUint32(buf[start:], walMagicBatch)
	le.PutUint32(buf[start+4:], uint32(len(buf)-start-walHeaderBytes))
	le.PutUint64(buf[start+8:], p.Header.Op)
	le.PutUint64(buf[start+16:], entryChecksum(buf[start:start+16], buf[start+walHeaderBytes:]))
	return buf
}

// TornTail reports the torn tail OpenWAL cut: its byte position and length (0, 0 when none).
func (w *WAL) TornTail() (at, bytes int64) { return w.tornAt, w.tornBytes }

// TornTailFile names the segment whose torn tail OpenWAL cut ("" when none).
func (w *WAL) TornTailFile() string { return w.tornPath }

// createSegmentLocked creates segment seq (empty), fsyncs the directory so
// its entry survives a crash (fdatasync of later appends does not persist
// it), and makes it the active segment. A failed directory fsync poisons
// the WAL: whether the file exists after a crash is unknown.
func (w *WAL) createSegmentLocked(seq uint64) error {
	path := filepath.Join(w.dir, walSegmentName(seq))
	f, err := w.fs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("create WAL segment %s: %w", path, err)
	}
	if err := syncDir(w.fs, w.dir); err != nil {
		f.Close()
		w.poisoned = true
		return fmt.Errorf("WAL segment %s: %w", path, err)
	}
	w.segs = append(w.segs, &walSeg{seq: seq, path: path, f: f})
	return nil
}

// writeLocked writes buf (records whole records) at the end of the active
// segment, first starting a new segment when the active one is at a
// bound, and fdatasyncs it. It returns the segment and the offset buf
// starts at. A failed write is cut back (poisoned if that fails too); a
// failed fdatasync poisons.
func (w *WAL) writeLocked(buf []byte, records int, what string) (*walSeg, int64, error) {
	s := w.segs[len(w.segs)-1]
	if s.size > 0 && (s.records >= walSegmentRecordsMax || s.size >= walSegmentBytesMax) {
		if err := w.createSegmentLocked(s.seq + 1); err != nil {
			return nil, 0, fmt.Errorf("WAL %s: %w", what, err)
		}
		s = w.segs[len(w.segs)-1]
	}
	at := s.size
	if _, err := s.f.WriteAt(buf, at); err != nil {
		if terr := s.f.Truncate(at); terr != nil {
			w.poisoned = true
		}
		return nil, 0, fmt.Errorf("WAL %s: %w", what, err)
	}
	w.ioWritten += int64(len(buf))
	syncStart := time.Now()
	if err := datasync(s.f); err != nil {
		// After a failed fdatasync the page cache state is unknown: poison.
		w.poisoned = true
		return nil, 0, fmt.Errorf("WAL fdatasync (%s): %w", what, err)
	}
	ObserveSync(SyncMetadataWAL, syncStart)
	s.size += int64(len(buf))
	s.records += records
	w.size += int64(len(buf))
	return s, at, nil
}

// encodeEntries appends entries to buf as records, checking each
// against the entry bound and the tombstone marks, and returns their
// locations relative to the start of buf.
func encodeEntries(buf []byte, entries []consensus.Prepare, what string) ([]byte, []walEntryLoc, error) {
	locs := make([]walEntryLoc, 0, len(entries))
	for i := range entries {
		op := entries[i].Header.Op
		if prepareFixedBytes+len(entries[i].Body)+walHeaderBytes+4 > WALEntryBytesMax { // + batch_back
			return nil, nil, fmt.Errorf("WAL %s: op %d is %d bytes, above the %d-byte entry bound", what, op, len(entries[i].Body), WALEntryBytesMax)
		}
		if _, tomb := walTombstoneCount(&entries[i]); tomb {
			return nil, nil, fmt.Errorf("WAL %s: op %d carries the tombstone marks", what, op)
		}
		start := len(buf)
		buf = appendEntry(buf, &entries[i])
		locs = append(locs, walEntryLoc{op: op, offset: int64(start), size: int64(len(buf) - start)})
	}
	return buf, locs, nil
}

// recordLocked makes the records written at (s, base) live.
func (w *WAL) recordLocked(s *walSeg, base int64, locs []walEntryLoc) {
	for _, loc := range locs {
		loc.seg, loc.offset = s.seq, base+loc.offset
		if !s.hasOps || loc.op > s.maxOp {
			s.maxOp, s.hasOps = loc.op, true
		}
		w.setLiveLocked(loc)
	}
}

// Append writes entries (any op order; a record for an op already held
// supersedes it) at the end of the active segment and fdatasyncs once.
// On a failed write the tail is cut back; if that fails, or fdatasync
// fails, the WAL is poisoned.
func (w *WAL) Append(entries ...consensus.Prepare) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	if len(entries) == 0 {
		return nil
	}
	what := fmt.Sprintf("append ops %d..%d", entries[0].Header.Op, entries[len(entries)-1].Header.Op)
	buf, locs, err := encodeEntries(nil, entries, what)
	if err != nil {
		return err
	}
	s, base, err := w.writeLocked(buf, len(locs), what)
	if err != nil {
		return err
	}
	w.recordLocked(s, base, locs)
	return nil
}

// Ops returns the lowest and highest op held (ok false when empty).
func (w *WAL) Ops() (first, last uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for op := range w.live {
		if !ok || op < first {
			first = op
		}
		if !ok || op > last {
			last = op
		}
		ok = true
	}
	return first, last, ok
}

// Size returns the bytes held in all segments.
func (w *WAL) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// Segments returns how many segment files the WAL holds.
func (w *WAL) Segments() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.segs)
}

// Read returns the latest entry for op (ok false if not held).
func (w *WAL) Read(op uint64) (consensus.Prepare, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	loc, held := w.live[op]
	if !held {
		return consensus.Prepare{}, false, nil
	}
	b := make([]byte, loc.size)
	if _, err := w.segBySeq(loc.seg).f.ReadAt(b, loc.offset); err != nil {
		return consensus.Prepare{}, false, fmt.Errorf("WAL read op %d: %w", op, err)
	}
	w.ioRead += loc.size
	p, _, err := parseEntry(b)
	if err != nil {
		return consensus.Prepare{}, false, fmt.Errorf("WAL read op %d: %w", op, err)
	}
	return p, true, nil
}

// Compact releases every entry with op <= upToOp (covered by a
// checkpoint): they leave the WAL's view at once, and every leading
// segment that then holds no live entry is deleted, oldest first, each
// unlink followed by a directory fsync (so a crash leaves a suffix of the
// log, never a hole). When the active segment is among them a fresh one
// is started first. No record is read or rewritten: the cost is the files
// deleted. Entries <= upToOp in retained segments come back at the next
// open until their segment goes (the node ignores entries below its
// snapshot op).
func (w *WAL) Compact(upToOp uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	w.removeRangeLocked(0, upToOp)
	n := 0
	for n < len(w.segs) && w.segs[n].live == 0 && w.segs[n].size > 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	if n == len(w.segs) {
		if err := w.createSegmentLocked(w.segs[n-1].seq + 1); err != nil {
			return fmt.Errorf("WAL compact up to op %d: %w", upToOp, err)
		}
	}
	for n > 0 {
		s := w.segs[0]
		s.f.Close()
		if err := w.fs.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.poisoned = true
			return fmt.Errorf("WAL compact up to op %d: remove %s: %w", upToOp, s.path, err)
		}
		if err := syncDir(w.fs, w.dir); err != nil {
			w.poisoned = true
			return fmt.Errorf("WAL compact up to op %d: %w", upToOp, err)
		}
		w.segs = w.segs[1:]
		w.size -= s.size
		n--
	}
	return nil
}

// Close closes the segment files.
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, s := range w.segs {
		errs = append(errs, s.f.Close())
	}
	return errors.Join(errs...)
}
