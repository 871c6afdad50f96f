package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// WAL entry layout (little-endian):
//
//	magic u32 "LWAL" | payload_len u32 | op u64 | checksum u64 | payload
//
// checksum = XXH3-64 over header bytes 0..16 followed by the payload, so a
// damaged length, op or payload is detected. The payload is an encoded
// consensus.Prepare (prepare_codec.go).
const (
	walMagic         uint32 = 0x4C41574C // "LWAL"
	walHeaderBytes          = 24
	WALEntryBytesMax        = 64 << 20
	// walFileBytesMax bounds the file read at open; checkpoints keep the
	// metadata WAL far below it.
	walFileBytesMax = 4 << 30
	walFileName     = "journal.wal"
)

// ErrWALPoisoned is returned after a failed write left the file in an
// unknown state; the process must reopen (and rescan) the WAL.
var ErrWALPoisoned = errors.New("metadata WAL poisoned by an earlier write failure")

type walEntryLoc struct {
	op     uint64
	offset int64
	size   int64 // header + payload
}

// WAL is the append-only metadata journal (metadata/journal.wal). Entries
// may be appended in any op order (journal repair fills gaps later); a
// later record for an op supersedes an earlier one. One writer; methods
// are serialized by a mutex.
type WAL struct {
	mu       sync.Mutex
	dir      string
	path     string
	f        *os.File
	size     int64
	records  []walEntryLoc          // every record, in file order
	live     map[uint64]walEntryLoc // op → its latest record
	poisoned bool
	// tornAt, tornBytes: the torn tail the open cut (TornTail).
	tornAt, tornBytes int64
}

// OpenWAL opens (creating if needed) dir/journal.wal, scans it and returns
// the recovered entries (latest record per op) in op order. A damaged tail
// (no complete valid entry after the damage) is truncated and fsynced;
// damage followed by a valid entry is interior corruption and refuses to
// open.
func OpenWAL(dir string) (*WAL, []consensus.Prepare, error) {
	if err := ensureDir(dir); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, walFileName)
	// A leftover temp file is an unfinished rewrite: the original is intact.
	if err := os.Remove(path + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove stale %s.tmp: %w", path, err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open WAL %s: %w", path, err)
	}
	if created {
		// fdatasync of later appends does not persist the directory entry.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	w := &WAL{dir: dir, path: path, f: f, live: make(map[uint64]walEntryLoc)}
	recovered, err := w.scan()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return w, recovered, nil
}

func (w *WAL) scan() ([]consensus.Prepare, error) {
	st, err := w.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat WAL %s: %w", w.path, err)
	}
	if st.Size() > walFileBytesMax {
		return nil, fmt.Errorf("WAL %s is %d bytes, above the %d-byte bound", w.path, st.Size(), int64(walFileBytesMax))
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(io.NewSectionReader(w.f, 0, st.Size()), data); err != nil {
		return nil, fmt.Errorf("read WAL %s: %w", w.path, err)
	}
	byOp := make(map[uint64]consensus.Prepare)
	off := 0
	for off < len(data) {
		p, n, perr := parseEntry(data[off:])
		if perr != nil {
			if at, op, found := findValidEntry(data, off+1); found {
				return nil, fmt.Errorf("%w: WAL %s interior corruption at byte %d (%v): a valid entry (op %d) follows at byte %d; refusing to open (remedy: wipe the metadata directory and rejoin by state transfer; a single node: `iggy-server repair --truncate-metadata-wal` drops it and everything after it)",
					ErrWALCorrupt, w.path, off, perr, op, at)
			}
			if completeRecord(data[off:]) {
				// Every Append is fdatasynced before it returns: a whole record
				// that fails verification was synced and then damaged.
				return nil, fmt.Errorf("%w: WAL %s: the record at byte %d (op %d by its header, %d bytes) is complete but fails verification (%v): damage to synced data, not a torn tail; refusing to open (remedy: restore the file; a single node: `iggy-server repair --truncate-metadata-wal` drops it and everything after it)",
					ErrWALCorrupt, w.path, off, binary.LittleEndian.Uint64(data[off+8:]), len(data)-off, perr)
			}
			w.tornAt, w.tornBytes = int64(off), int64(len(data)-off)
			if err := w.f.Truncate(int64(off)); err != nil {
				return nil, fmt.Errorf("truncate torn WAL tail at byte %d: %w", off, err)
			}
			if err := w.f.Sync(); err != nil {
				return nil, fmt.Errorf("fsync WAL after tail truncation: %w", err)
			}
			break
		}
		loc := walEntryLoc{op: p.Header.Op, offset: int64(off), size: int64(n)}
		w.records = append(w.records, loc)
		w.live[loc.op] = loc
		byOp[loc.op] = p
		off += n
	}
	w.size = int64(off)
	recovered := make([]consensus.Prepare, 0, len(byOp))
	for _, op := range sortedOps(w.live) {
		recovered = append(recovered, byOp[op])
	}
	return recovered, nil
}

func sortedOps(m map[uint64]walEntryLoc) []uint64 {
	ops := make([]uint64, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	return ops
}

// parseEntry validates and decodes the entry at the start of b.
func parseEntry(b []byte) (consensus.Prepare, int, error) {
	if len(b) < walHeaderBytes {
		return consensus.Prepare{}, 0, fmt.Errorf("%d bytes left, short of a %d-byte header", len(b), walHeaderBytes)
	}
	le := binary.LittleEndian
	if m := le.Uint32(b); m != walMagic {
		return consensus.Prepare{}, 0, fmt.Errorf("bad magic %08x", m)
	}
	payloadLen := int(le.Uint32(b[4:]))
	if payloadLen > WALEntryBytesMax-walHeaderBytes {
		return consensus.Prepare{}, 0, fmt.Errorf("payload length %d above bound", payloadLen)
	}
	if len(b)-walHeaderBytes < payloadLen {
		return consensus.Prepare{}, 0, fmt.Errorf("payload length %d exceeds the %d bytes left", payloadLen, len(b)-walHeaderBytes)
	}
	payload := b[walHeaderBytes : walHeaderBytes+payloadLen]
	if sum := entryChecksum(b[:16], payload); sum != le.Uint64(b[16:]) {
		return consensus.Prepare{}, 0, fmt.Errorf("checksum mismatch")
	}
	p, err := decodePrepare(payload)
	if err != nil {
		return consensus.Prepare{}, 0, err
	}
	if p.Header.Op != le.Uint64(b[8:]) {
		return consensus.Prepare{}, 0, fmt.Errorf("header op %d differs from prepare op %d", le.Uint64(b[8:]), p.Header.Op)
	}
	return p, walHeaderBytes + payloadLen, nil
}

// completeRecord says whether b starts with a whole record by its framing: the declared length fits
// the bound and the bytes present, and the bytes are not all zero. A torn append leaves an incomplete
// record (or a zero-filled page); a complete record that fails verification was damaged after it was
// synced.
func completeRecord(b []byte) bool {
	if len(b) < walHeaderBytes {
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

// TornTail reports the torn tail OpenWAL cut: its byte position and length (0, 0 when none).
func (w *WAL) TornTail() (at, bytes int64) { return w.tornAt, w.tornBytes }

// ErrWALCorrupt matches the errors of a WAL whose synced records are damaged.
var ErrWALCorrupt = errors.New("metadata WAL corrupt")

// findValidEntry looks for any complete valid entry starting at or after
// from (candidates are positions holding the magic).
func findValidEntry(data []byte, from int) (at int, op uint64, found bool) {
	for i := from; i+walHeaderBytes <= len(data); i++ {
		if binary.LittleEndian.Uint32(data[i:]) != walMagic {
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

func appendEntry(buf []byte, p *consensus.Prepare) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeaderBytes)...)
	buf = appendPrepare(buf, p)
	le := binary.LittleEndian
	le.PutUint32(buf[start:], walMagic)
	le.PutUint32(buf[start+4:], uint32(len(buf)-start-walHeaderBytes))
	le.PutUint64(buf[start+8:], p.Header.Op)
	le.PutUint64(buf[start+16:], entryChecksum(buf[start:start+16], buf[start+walHeaderBytes:]))
	return buf
}

// Append writes entries (any op order; a record for an op already held
// supersedes it) and fdatasyncs once. On a failed write the tail is cut
// back; if that fails, or fdatasync fails, the WAL is poisoned.
func (w *WAL) Append(entries ...consensus.Prepare) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	if len(entries) == 0 {
		return nil
	}
	var buf []byte
	locs := make([]walEntryLoc, 0, len(entries))
	for i := range entries {
		op := entries[i].Header.Op
		if prepareFixedBytes+len(entries[i].Body)+walHeaderBytes > WALEntryBytesMax {
			return fmt.Errorf("WAL append: op %d is %d bytes, above the %d-byte entry bound", op, len(entries[i].Body), WALEntryBytesMax)
		}
		start := len(buf)
		buf = appendEntry(buf, &entries[i])
		locs = append(locs, walEntryLoc{op: op, offset: w.size + int64(start), size: int64(len(buf) - start)})
	}
	first, last := locs[0].op, locs[len(locs)-1].op
	if _, err := w.f.WriteAt(buf, w.size); err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.poisoned = true
		}
		return fmt.Errorf("WAL append ops %d..%d: %w", first, last, err)
	}
	syncStart := time.Now()
	if err := datasync(w.f); err != nil {
		// After a failed fdatasync the page cache state is unknown: poison.
		w.poisoned = true
		return fmt.Errorf("WAL fdatasync ops %d..%d: %w", first, last, err)
	}
	ObserveSync(SyncMetadataWAL, syncStart)
	w.size += int64(len(buf))
	for _, loc := range locs {
		w.records = append(w.records, loc)
		w.live[loc.op] = loc
	}
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

// Size returns the file size in bytes.
func (w *WAL) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
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
	if _, err := w.f.ReadAt(b, loc.offset); err != nil {
		return consensus.Prepare{}, false, fmt.Errorf("WAL read op %d: %w", op, err)
	}
	p, _, err := parseEntry(b)
	if err != nil {
		return consensus.Prepare{}, false, fmt.Errorf("WAL read op %d: %w", op, err)
	}
	return p, true, nil
}

// TruncateFrom removes every entry with op >= from (a divergent suffix).
// When those records form the file's tail the file is cut and fsynced;
// otherwise the kept entries are rewritten (see rewriteLocked).
func (w *WAL) TruncateFrom(from uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	cut := -1
	for i, r := range w.records {
		if r.op >= from {
			if cut < 0 {
				cut = i
			}
		} else if cut >= 0 {
			// A kept op was written after a dropped one: not a clean tail.
			return w.rewriteLocked(func(op uint64) bool { return op < from }, nil, "truncate")
		}
	}
	if cut < 0 {
		return nil
	}
	at := w.records[cut].offset
	if err := w.f.Truncate(at); err != nil {
		w.poisoned = true
		return fmt.Errorf("WAL truncate from op %d: %w", from, err)
	}
	if err := w.f.Sync(); err != nil {
		w.poisoned = true
		return fmt.Errorf("WAL fsync after truncate from op %d: %w", from, err)
	}
	w.size = at
	w.records = w.records[:cut]
	w.live = make(map[uint64]walEntryLoc, len(w.records))
	for _, r := range w.records {
		w.live[r.op] = r
	}
	return nil
}

// Compact drops every entry with op <= upToOp (covered by a checkpoint)
// and superseded records, rewriting the rest.
func (w *WAL) Compact(upToOp uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	drop := len(w.records) != len(w.live) // superseded records
	for op := range w.live {
		drop = drop || op <= upToOp
	}
	if !drop {
		return nil
	}
	return w.rewriteLocked(func(op uint64) bool { return op > upToOp }, nil, "compact")
}

// rewriteLocked keeps the latest record of every op passing keep, plus
// extra (a record of extra supersedes a kept one of the same op; within
// extra the last wins), in op order: written to journal.wal.tmp, fsynced,
// renamed over the WAL, dir fsynced. The old file stays intact until the
// rename, so a crash leaves either the old or the new file. A failure
// poisons the WAL: after a rename whose directory fsync failed, the open
// handle would point at the replaced file.
func (w *WAL) rewriteLocked(keep func(op uint64) bool, extra []consensus.Prepare, what string) error {
	fresh := make(map[uint64]*consensus.Prepare, len(extra))
	for i := range extra {
		op := extra[i].Header.Op
		if prepareFixedBytes+len(extra[i].Body)+walHeaderBytes > WALEntryBytesMax {
			return fmt.Errorf("WAL %s: op %d is %d bytes, above the %d-byte entry bound", what, op, len(extra[i].Body), WALEntryBytesMax)
		}
		fresh[op] = &extra[i]
	}
	ops := make([]uint64, 0, len(w.live)+len(fresh))
	for op := range w.live {
		if _, replaced := fresh[op]; keep(op) && !replaced {
			ops = append(ops, op)
		}
	}
	for op := range fresh {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	var buf []byte
	records := make([]walEntryLoc, 0, len(ops))
	for _, op := range ops {
		start := len(buf)
		if p, ok := fresh[op]; ok {
			buf = appendEntry(buf, p)
		} else {
			loc := w.live[op]
			rec := make([]byte, loc.size)
			if _, err := w.f.ReadAt(rec, loc.offset); err != nil {
				return fmt.Errorf("WAL %s: read op %d: %w", what, op, err)
			}
			buf = append(buf, rec...)
		}
		records = append(records, walEntryLoc{op: op, offset: int64(start), size: int64(len(buf) - start)})
	}
	if err := replaceFile(w.path, buf); err != nil {
		w.poisoned = true
		return fmt.Errorf("WAL %s: %w", what, err)
	}
	f, err := os.OpenFile(w.path, os.O_RDWR, 0o644)
	if err != nil {
		w.poisoned = true
		return fmt.Errorf("WAL %s: reopen %s: %w", what, w.path, err)
	}
	w.f.Close()
	w.f = f
	w.size = int64(len(buf))
	w.records = records
	w.live = make(map[uint64]walEntryLoc, len(records))
	for _, r := range records {
		w.live[r.op] = r
	}
	return nil
}

// Close closes the file.
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
