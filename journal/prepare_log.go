package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// PrepareLog is a partition group's prepare WAL (cluster mode): every
// prepare the replica accepts is written here before its PrepareOk
// leaves, so a replica restarted after a crash (or all of them after a
// full restart) votes with the journal it acknowledged, like the metadata
// group does, instead of with its last checkpoint.
//
// Layout: a directory of files named by a sequence number
// (00000000000000000001.pwal, ...), oldest first. Records use the
// metadata WAL's entry format (a later record for an op supersedes an
// earlier one) plus a truncation record: magic "LWTX", op = from, a
// payload of (op, header checksum) pairs, checksum over the 16 header
// bytes and the payload; it removes every op >= from written before it,
// except a listed op whose live record has the listed checksum. Write
// lists the ops >= from of the entries that follow it in the same call:
// a crash that cuts the call after the truncation record leaves each of
// them with its old record (when that is the same prepare, which it may
// have acknowledged), its new one, or none (an old record of another
// prepare is divergent, and the new one was never acknowledged), never
// without a prepare it acknowledged (consensus.Restored.JournalIntact).
// Records of older releases ("LWTR", no payload, no exceptions) are still
// read. So truncation and appends cost what they write,
// and reclaiming is deleting whole leading files whose ops all sit below
// the durable checkpoint (Reclaim), never a rewrite.
//
// Syncing is the caller's choice (Sync): a replicated topic's prepares
// are written without fsync (they survive a process crash in the page
// cache, not a power loss); a persisted topic's are synced before the ack.
//
// A message prepare whose batch the partition log holds already may be
// recorded as a segment reference instead of with its body
// (prepare_log_refs.go).
//
// One goroutine at a time: the partition's shard, or the write it hands
// to carryOutBatch, never both.
type PrepareLog struct {
	fs       vfs.FS
	dir      string
	files    []prepareFile // oldest first; the last one is appended to
	f        vfs.File      // the last file, opened for append (nil: none yet)
	poisoned error
	// dirty: the last file was written since the last Sync; dirDirty: a
	// file was created or removed since; closedDirty: files closed (by a
	// rotation or Close) with writes not synced yet, oldest first.
	dirty, dirDirty bool
	closedDirty     []uint64
	rotateBytes     int64 // SetRotateBytes; default prepareLogRotateBytes
	w               *bufio.Writer
	// refs: the live prepares recorded as segment references, by op
	// (those below the last reclaimed checkpoint forgotten).
	refs map[uint64]refEntry
}

// liveRecord is an op's latest record while a log is read: the prepare
// (its body resolved later for a reference), the reference, and where the
// record starts.
type liveRecord struct {
	p   consensus.Prepare
	ref BodyRef
	seq uint64
	at  int64
}

type prepareFile struct {
	seq   uint64
	bytes int64
	maxOp uint64 // highest op of an entry record in it (0: none)
	// damaged: a record at damageAt failed to parse (not a torn tail).
	damaged  bool
	damageAt int64
}

const (
	prepareLogSuffix = ".pwal"
	// prepareLogRotateBytes: by default Reclaim starts a new file once the
	// last one is this big, so whole files can be deleted as checkpoints
	// pass (SetRotateBytes lowers it).
	prepareLogRotateBytes = 1 << 20
	// prepareLogFilesMax bounds the files one log may hold at open.
	prepareLogFilesMax        = 4096
	truncMagic         uint32 = 0x5254574C // "LWTR" (older releases: no exceptions)
	truncKeepMagic     uint32 = 0x5854574C // "LWTX": with exceptions
	// truncKeepPairBytes: one exception, (op, header checksum).
	truncKeepPairBytes = 16
)

// ErrPrepareLogDamaged matches a prepare WAL whose records are damaged
// before its last file's tail: what it acknowledged can no longer be
// trusted to be all there.
var ErrPrepareLogDamaged = errors.New("partition prepare WAL damaged")

// OpenPrepareLog opens (creating if needed) the prepare WAL in dir and
// returns the live entries with op >= fromOp, in op order. A torn tail of
// the last file (an incomplete final record) is cut; any other damage is
// ErrPrepareLogDamaged, and the log is still returned, emptied of nothing:
// the caller decides (a replica that may have lost acknowledged prepares
// must not vote on its own; see consensus.Restored.StorageLost).
func OpenPrepareLog(dir string, fromOp uint64, opts ...Option) (*PrepareLog, []consensus.Prepare, error) {
	fsys := fsOf(opts)
	if err := ensureDir(fsys, dir); err != nil {
		return nil, nil, err
	}
	l := &PrepareLog{fs: fsys, dir: dir, rotateBytes: prepareLogRotateBytes, refs: make(map[uint64]refEntry)}
	seqs, err := l.listFiles()
	if err != nil {
		return nil, nil, err
	}
	live := make(map[uint64]liveRecord)
	var damage error
	for i, seq := range seqs {
		last := i == len(seqs)-1
		pf, derr := l.scanFile(seq, last, fromOp, live)
		if derr != nil && damage == nil {
			damage = derr
		}
		l.files = append(l.files, pf)
	}
	if failed, rerr := resolveLive(resolverOf(opts), live); rerr != nil {
		// Unresolved, it is lost with every later record (as after damage).
		for op, r := range live {
			if r.seq > failed.seq || (r.seq == failed.seq && r.at >= failed.at) {
				delete(live, op)
			}
		}
		if damage == nil {
			damage = fmt.Errorf("%s: record at byte %d: %v", l.path(failed.seq), failed.at, rerr)
		}
	}
	ops := make([]uint64, 0, len(live))
	for op, r := range live {
		ops = append(ops, op)
		if r.ref.Length > 0 {
			l.refs[op] = refEntry{header: r.p.Header, ref: r.ref}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	entries := make([]consensus.Prepare, len(ops))
	for i, op := range ops {
		entries[i] = live[op].p
	}
	if damage != nil {
		return l, entries, fmt.Errorf("%w: %v", ErrPrepareLogDamaged, damage)
	}
	return l, entries, nil
}

func (l *PrepareLog) listFiles() ([]uint64, error) {
	des, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list prepare WAL %s: %w", l.dir, err)
	}
	var seqs []uint64
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, prepareLogSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, prepareLogSuffix), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("prepare WAL %s: unexpected file %s", l.dir, name)
		}
		seqs = append(seqs, seq)
	}
	if len(seqs) > prepareLogFilesMax {
		return nil, fmt.Errorf("prepare WAL %s holds %d files, above the bound of %d", l.dir, len(seqs), prepareLogFilesMax)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

func (l *PrepareLog) path(seq uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%020d%s", seq, prepareLogSuffix))
}

// scanFile replays one file's records into live. Damage in the last file
// with nothing valid after it is a torn tail: cut. Anything else is
// reported (the file's readable records before it still count).
func (l *PrepareLog) scanFile(seq uint64, last bool, fromOp uint64, live map[uint64]liveRecord) (prepareFile, error) {
	path := l.path(seq)
	pf := prepareFile{seq: seq}
	f, err := l.fs.Open(path)
	if err != nil {
		return pf, fmt.Errorf("open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return pf, fmt.Errorf("stat %s: %w", path, err)
	}
	// A file holds at most the rotation size plus one entry and one
	// truncation record.
	if st.Size() > prepareLogRotateBytes+2*WALEntryBytesMax {
		f.Close()
		return pf, fmt.Errorf("%s is %d bytes, above a prepare WAL file's bound", path, st.Size())
	}
	data := make([]byte, st.Size())
	_, err = io.ReadFull(f, data)
	f.Close()
	if err != nil {
		return pf, fmt.Errorf("read %s: %w", path, err)
	}
	off := 0
	for off < len(data) {
		n, op, isTrunc, keep, perr := parsePrepareLogRecord(data[off:])
		if perr != nil {
			if found := findValidPrepareLogRecord(data, off+1); !last || found || completeRecord(data[off:]) {
				pf.bytes, pf.damaged, pf.damageAt = int64(len(data)), true, int64(off)
				return pf, fmt.Errorf("%s: record at byte %d: %v", path, off, perr)
			}
			// Torn tail: the write never completed, so nothing it held was
			// acknowledged. Cut it so appends continue after valid records.
			if err := l.fs.Truncate(path, int64(off)); err != nil {
				return pf, fmt.Errorf("cut the torn tail of %s at byte %d: %w", path, off, err)
			}
			break
		}
		if isTrunc {
			for o, r := range live {
				if o >= op && keep[o] != r.p.Header.Checksum {
					delete(live, o)
				}
			}
		} else {
			pf.maxOp = max(pf.maxOp, op)
			if op >= fromOp {
				rec := liveRecord{seq: seq, at: int64(off)}
				var err error
				if binary.LittleEndian.Uint32(data[off:]) == refMagic {
					rec.p.Header, rec.ref, _, err = parseRefRecord(data[off : off+n])
				} else {
					rec.p, _, err = parseEntry(data[off : off+n])
				}
				if err != nil {
					pf.damaged, pf.damageAt = true, int64(off)
					return pf, fmt.Errorf("%s: record at byte %d: %v", path, off, err)
				}
				live[op] = rec
			} else {
				delete(live, op)
			}
		}
		off += n
	}
	pf.bytes = int64(off)
	return pf, nil
}

// parsePrepareLogRecord validates the record at the start of b: its
// length, op, whether it is a truncation record and, for one, the ops it
// keeps with the header checksum each must have (nil: none).
func parsePrepareLogRecord(b []byte) (n int, op uint64, isTrunc bool, keep map[uint64]uint64, err error) {
	le := binary.LittleEndian
	if len(b) >= walHeaderBytes && le.Uint32(b) == truncMagic {
		if le.Uint32(b[4:]) != 0 {
			return 0, 0, false, nil, fmt.Errorf("truncation record with payload length %d", le.Uint32(b[4:]))
		}
		if entryChecksum(b[:16], nil) != le.Uint64(b[16:]) {
			return 0, 0, false, nil, fmt.Errorf("truncation record checksum mismatch")
		}
		return walHeaderBytes, le.Uint64(b[8:]), true, nil, nil
	}
	if len(b) >= walHeaderBytes && le.Uint32(b) == truncKeepMagic {
		size := int(le.Uint32(b[4:]))
		if size%truncKeepPairBytes != 0 || size > WALEntryBytesMax-walHeaderBytes {
			return 0, 0, false, nil, fmt.Errorf("truncation record with payload length %d", size)
		}
		if len(b) < walHeaderBytes+size {
			return 0, 0, false, nil, fmt.Errorf("truncation record of %d bytes cut at %d", walHeaderBytes+size, len(b))
		}
		payload := b[walHeaderBytes : walHeaderBytes+size]
		if entryChecksum(b[:16], payload) != le.Uint64(b[16:]) {
			return 0, 0, false, nil, fmt.Errorf("truncation record checksum mismatch")
		}
		from := le.Uint64(b[8:])
		if size > 0 {
			keep = make(map[uint64]uint64, size/truncKeepPairBytes)
		}
		for i := 0; i < size; i += truncKeepPairBytes {
			o := le.Uint64(payload[i:])
			if o < from {
				return 0, 0, false, nil, fmt.Errorf("truncation record from op %d keeps op %d below it", from, o)
			}
			keep[o] = le.Uint64(payload[i+8:])
		}
		return walHeaderBytes + size, from, true, keep, nil
	}
	if len(b) >= walHeaderBytes && le.Uint32(b) == refMagic {
		h, _, n, err := parseRefRecord(b)
		if err != nil {
			return 0, 0, false, nil, err
		}
		return n, h.Op, false, nil, nil
	}
	p, n, err := parseEntry(b)
	if err != nil {
		return 0, 0, false, nil, err
	}
	return n, p.Header.Op, false, nil, nil
}

// findValidPrepareLogRecord says whether a complete valid entry or
// reference record starts at or after from.
func findValidPrepareLogRecord(data []byte, from int) bool {
	if _, _, found := findValidEntry(data, from); found {
		return true
	}
	for i := from; i+walHeaderBytes <= len(data); i++ {
		if binary.LittleEndian.Uint32(data[i:]) != refMagic {
			continue
		}
		if _, _, _, err := parseRefRecord(data[i:]); err == nil {
			return true
		}
	}
	return false
}

// appendTruncRecord appends a truncation record from op from that keeps
// the entries' ops >= from whose live record is the same prepare.
func appendTruncRecord(buf []byte, from uint64, entries []consensus.Prepare) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeaderBytes)...)
	le := binary.LittleEndian
	for i := range entries {
		if h := &entries[i].Header; h.Op >= from {
			buf = le.AppendUint64(buf, h.Op)
			buf = le.AppendUint64(buf, h.Checksum)
		}
	}
	le.PutUint32(buf[start:], truncKeepMagic)
	le.PutUint32(buf[start+4:], uint32(len(buf)-start-walHeaderBytes))
	le.PutUint64(buf[start+8:], from)
	le.PutUint64(buf[start+16:], entryChecksum(buf[start:start+16], buf[start+walHeaderBytes:]))
	return buf
}

// Write records a Ready's journal work: if from != 0, every op >= from is
// removed first (but for the entries' own ops whose record already holds
// the same prepare: a crash before their copies are written must not
// take them), then entries are appended, starting a new file whenever
// the last one reached the rotation size (so reclaiming whole files
// stays precise). Record headers are built in one small buffer and the
// bodies written from where they are (no copy of a batch into a record
// buffer). Not synced (see Sync).
func (l *PrepareLog) Write(from uint64, entries []consensus.Prepare) error {
	return l.WriteRefs(from, entries, nil)
}

// WriteRefs is Write with segment references: entries[i] is recorded as
// refs[i] (header and place, no body) when refs[i].Length > 0, which must
// be the length of its body. refs may be nil or shorter than entries.
func (l *PrepareLog) WriteRefs(from uint64, entries []consensus.Prepare, refs []BodyRef) error {
	if l.poisoned != nil {
		return l.poisoned
	}
	if from == 0 && len(entries) == 0 {
		return nil
	}
	refAt := func(i int) BodyRef {
		if i < len(refs) {
			return refs[i]
		}
		return BodyRef{}
	}
	for i := range entries {
		if r := refAt(i); r.Length > 0 && r.Length != uint64(len(entries[i].Body)) {
			return fmt.Errorf("write prepare WAL %s: op %d references %d bytes, its body has %d", l.dir,
				entries[i].Header.Op, r.Length, len(entries[i].Body))
		}
	}
	// Exact capacity: the head slices below stay valid (no reallocation).
	heads := make([]byte, 0, walHeaderBytes+len(entries)*(truncKeepPairBytes+walHeaderBytes+prepareFixedBytes+refPlaceBytes))
	var pieces [][]byte
	var size int64
	var maxOp uint64
	// chunkFrom, chunkFirst: what the pieces not yet written hold (the
	// truncation, entries[chunkFirst:i]): the references are noted only
	// once their records are down.
	chunkFrom, chunkFirst := from, 0
	noteChunk := func(upTo int) {
		if chunkFrom != 0 {
			// As the truncation record does: an op >= from goes unless an
			// entry of this call is the same prepare.
			kept := make(map[uint64]uint64)
			for j := range entries {
				if h := &entries[j].Header; h.Op >= chunkFrom {
					kept[h.Op] = h.Checksum
				}
			}
			for op, r := range l.refs {
				if sum, ok := kept[op]; op >= chunkFrom && (!ok || sum != r.header.Checksum) {
					delete(l.refs, op)
				}
			}
			chunkFrom = 0
		}
		for j := chunkFirst; j < upTo; j++ {
			if r := refAt(j); r.Length > 0 {
				l.refs[entries[j].Header.Op] = refEntry{header: entries[j].Header, ref: r}
			} else {
				delete(l.refs, entries[j].Header.Op)
			}
		}
		chunkFirst = upTo
	}
	if l.refs == nil {
		l.refs = make(map[uint64]refEntry)
	}
	if from != 0 {
		heads = appendTruncRecord(heads, from, entries)
		pieces, size = append(pieces, heads), int64(len(heads))
	}
	for i := range entries {
		if n := len(l.files); size > 0 && n > 0 && l.files[n-1].bytes+size >= l.rotateBytes {
			if err := l.writeLast(pieces, size, maxOp); err != nil {
				return err
			}
			noteChunk(i)
			pieces, size, maxOp = pieces[:0], 0, 0
		}
		start := len(heads)
		written := int64(len(entries[i].Body))
		if r := refAt(i); r.Length > 0 {
			heads = appendRefRecord(heads, &entries[i].Header, r)
			pieces = append(pieces, heads[start:len(heads):len(heads)])
			written = 0
		} else {
			heads = appendEntryHead(heads, &entries[i])
			pieces = append(pieces, heads[start:len(heads):len(heads)])
			if body := entries[i].Body; len(body) > 0 {
				pieces = append(pieces, body)
			}
		}
		size += int64(len(heads)-start) + written
		maxOp = max(maxOp, entries[i].Header.Op)
	}
	if err := l.writeLast(pieces, size, maxOp); err != nil {
		return err
	}
	noteChunk(len(entries))
	return nil
}

// appendEntryHead appends the record header and the encoded prepare
// header of p: with p.Body after it, the bytes appendEntry produces.
func appendEntryHead(buf []byte, p *consensus.Prepare) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeaderBytes)...)
	body := p.Body
	buf = appendPrepare(buf, &consensus.Prepare{Header: p.Header})
	le := binary.LittleEndian
	le.PutUint32(buf[len(buf)-4:], uint32(len(body))) // body_len, the last header field
	le.PutUint32(buf[start:], walMagic)
	le.PutUint32(buf[start+4:], uint32(len(buf)-start-walHeaderBytes+len(body)))
	le.PutUint64(buf[start+8:], p.Header.Op)
	h := xxh3.New()
	h.Write(buf[start : start+16])
	h.Write(buf[start+walHeaderBytes:])
	h.Write(body)
	le.PutUint64(buf[start+16:], h.Sum64())
	return buf
}

// writeLast appends pieces (whole records, size bytes, entries up to
// maxOp) to the last file, after starting a new one if the last one is
// full; small pieces are coalesced, large ones written as they are.
func (l *PrepareLog) writeLast(pieces [][]byte, size int64, maxOp uint64) error {
	if size == 0 {
		return nil
	}
	if n := len(l.files); n > 0 && l.files[n-1].bytes >= l.rotateBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	if err := l.openLast(); err != nil {
		return err
	}
	last := &l.files[len(l.files)-1]
	if l.w == nil {
		l.w = bufio.NewWriterSize(l.f, 64<<10)
	}
	l.w.Reset(l.f)
	var err error
	for _, piece := range pieces {
		if _, err = l.w.Write(piece); err != nil {
			break
		}
	}
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil {
		// The file may hold part of the records: cut it back, or stop using it.
		if terr := l.f.Truncate(last.bytes); terr != nil {
			l.poisoned = fmt.Errorf("prepare WAL %s poisoned: write failed (%v) and its tail could not be cut: %w", l.dir, err, terr)
		}
		l.f.Seek(last.bytes, io.SeekStart)
		return fmt.Errorf("write prepare WAL %s: %w", l.dir, err)
	}
	last.bytes += size
	last.maxOp = max(last.maxOp, maxOp)
	l.dirty = true
	return nil
}

// openLast makes sure the last file is open for appending, creating the
// first file of an empty log.
func (l *PrepareLog) openLast() error {
	if l.f != nil {
		return nil
	}
	if len(l.files) == 0 {
		l.files = append(l.files, prepareFile{seq: 1})
	}
	last := l.files[len(l.files)-1]
	path := l.path(last.seq)
	f, err := l.fs.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open prepare WAL file %s: %w", path, err)
	}
	if last.bytes == 0 {
		l.dirDirty = true // possibly created: its name is durable after a directory fsync
	}
	if _, err := f.Seek(last.bytes, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("seek prepare WAL file %s: %w", path, err)
	}
	l.f = f
	return nil
}

// Sync makes everything written so far durable: the data of files closed
// since with writes not synced (a Write that crossed a rotation, a
// rotation or Close after unsynced writes), oldest first, then the last
// file's, and the directory entries of files created or removed since.
func (l *PrepareLog) Sync() error {
	if l.poisoned != nil {
		return l.poisoned
	}
	for len(l.closedDirty) > 0 {
		seq := l.closedDirty[0]
		if n := len(l.files); l.f != nil && seq == l.files[n-1].seq {
			l.dirty = true // reopened since: synced below through l.f
		} else if err := l.syncClosed(seq); err != nil {
			l.poisoned = fmt.Errorf("prepare WAL %s poisoned: fsync of a closed file failed: %w", l.dir, err)
			return l.poisoned
		}
		l.closedDirty = l.closedDirty[1:]
	}
	if l.dirty && l.f != nil {
		if err := datasync(l.f); err != nil {
			// A failed fsync leaves the page cache's state unknown: never
			// retried on the same file as if nothing happened.
			l.poisoned = fmt.Errorf("prepare WAL %s poisoned: fsync failed: %w", l.dir, err)
			return l.poisoned
		}
		l.dirty = false
	}
	if l.dirDirty {
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
		l.dirDirty = false
	}
	return nil
}

// syncClosed fdatasyncs file seq through a descriptor of its own (the
// kernel writes the file's dirty pages back whichever descriptor asks).
func (l *PrepareLog) syncClosed(seq uint64) error {
	f, err := l.fs.OpenFile(l.path(seq), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = datasync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Reclaim releases history a durable checkpoint at checkpointOp covers:
// leading files whose entries are all below it are deleted (the entry at
// checkpointOp stays, the restart's hash-chain anchor), and a big last
// file is closed so the next write starts a new one.
func (l *PrepareLog) Reclaim(checkpointOp uint64) error {
	if l.poisoned != nil || len(l.files) == 0 {
		return l.poisoned
	}
	for op := range l.refs {
		if op < checkpointOp {
			delete(l.refs, op) // a restart reads from the checkpoint's op on
		}
	}
	if last := l.files[len(l.files)-1]; last.bytes >= l.rotateBytes || (last.maxOp < checkpointOp && last.bytes > 0) {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	removed := 0
	for removed < len(l.files)-1 && l.files[removed].maxOp < checkpointOp {
		path := l.path(l.files[removed].seq)
		if err := l.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove reclaimed prepare WAL file %s: %w", path, err)
		}
		removed++
	}
	if removed > 0 {
		l.dirDirty = true
		l.files = append(l.files[:0], l.files[removed:]...)
		// Removed files need no sync any more.
		kept := l.closedDirty[:0]
		for _, seq := range l.closedDirty {
			if seq >= l.files[0].seq {
				kept = append(kept, seq)
			}
		}
		l.closedDirty = kept
	}
	return nil
}

// SetRotateBytes sets the file size at which Reclaim starts a new file
// (at most the default: a file must stay readable whole at open).
func (l *PrepareLog) SetRotateBytes(n int64) {
	l.rotateBytes = min(max(n, 4<<10), prepareLogRotateBytes)
}

// Rewrite writes entries again into a fresh file and syncs it with the
// directory: a truncation record at the first entry's op, then the
// entries, which supersede the older records when the log is read. After
// a failed fsync the older files may not hold what reads show (the
// kernel may have dropped the pages it could not write); the fresh copy
// does, once this returns nil.
func (l *PrepareLog) Rewrite(entries []consensus.Prepare) error {
	if len(entries) == 0 {
		return nil
	}
	if l.poisoned != nil {
		return l.poisoned
	}
	if n := len(l.files); n > 0 && l.files[n-1].bytes > 0 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	if err := l.Write(entries[0].Header.Op, entries); err != nil {
		return err
	}
	return l.Sync()
}

// rotate closes the last file; the next write starts a new one. Unsynced
// writes in it (a replicated topic's, or the first part of a Write that
// crosses the rotation) are left to the next Sync (closedDirty), which
// a replicated topic may never call.
func (l *PrepareLog) rotate() error {
	last := l.files[len(l.files)-1]
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			return fmt.Errorf("close prepare WAL file %s: %w", l.path(last.seq), err)
		}
		l.f = nil
	}
	if l.dirty {
		l.closedDirty = append(l.closedDirty, last.seq)
	}
	l.dirty = false
	l.files = append(l.files, prepareFile{seq: last.seq + 1})
	return nil
}

// Bytes is what the log holds on disk now.
func (l *PrepareLog) Bytes() int64 {
	var n int64
	for _, f := range l.files {
		n += f.bytes
	}
	return n
}

// Close closes the open file; the log stays usable (the next Write
// reopens its last file). What was written and not synced stays so, until
// the next Sync.
func (l *PrepareLog) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if l.dirty {
		l.closedDirty = append(l.closedDirty, l.files[len(l.files)-1].seq)
		l.dirty = false
	}
	return err
}

// CutPrepareLogAtDamage cuts the prepare WAL in dir at its first damaged
// record: that file is truncated there (durably) and every later file
// removed. It is for a replica that lost power (the node's boot record):
// unsynced writes may come back in pieces anywhere after the last sync, so
// a damaged record and everything after it are what the power loss took,
// and the replica rejoins amnesiac (it never counts its journal as proof
// of what it acknowledged). A live segment reference at or above fromOp
// whose body does not resolve (WithBodyResolver) is damage too. It
// reports where it cut; cut is false when nothing was damaged.
func CutPrepareLogAtDamage(dir string, fromOp uint64, opts ...Option) (cut bool, file string, at int64, err error) {
	l := &PrepareLog{fs: fsOf(opts), dir: dir}
	seqs, err := l.listFiles()
	if err != nil {
		return false, "", 0, err
	}
	live := make(map[uint64]liveRecord)
	cutSeq, cutAt, cutIndex := uint64(0), int64(-1), len(seqs)
	for i, seq := range seqs {
		pf, derr := l.scanFile(seq, i == len(seqs)-1, fromOp, live)
		if derr == nil {
			continue
		}
		if !pf.damaged {
			return false, "", 0, derr
		}
		cutSeq, cutAt, cutIndex = seq, pf.damageAt, i
		break
	}
	if failed, rerr := resolveLive(resolverOf(opts), live); rerr != nil {
		// Read before any parse damage (the scan stopped there).
		cutSeq, cutAt = failed.seq, failed.at
		for i, seq := range seqs {
			if seq == failed.seq {
				cutIndex = i
			}
		}
	}
	if cutAt < 0 {
		return false, "", 0, nil
	}
	path := l.path(cutSeq)
	if err := truncateDurably(l.fs, path, cutAt); err != nil {
		return false, "", 0, fmt.Errorf("cut %s at byte %d: %w", path, cutAt, err)
	}
	for _, later := range seqs[cutIndex+1:] {
		if err := l.fs.Remove(l.path(later)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, "", 0, fmt.Errorf("remove %s after the cut: %w", l.path(later), err)
		}
	}
	if err := syncDir(l.fs, dir); err != nil {
		return false, "", 0, err
	}
	return true, path, cutAt, nil
}

// truncateDurably truncates path to size and syncs it.
func truncateDurably(fsys vfs.FS, path string, size int64) error {
	if err := fsys.Truncate(path, size); err != nil {
		return err
	}
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	serr := f.Sync()
	return errors.Join(serr, f.Close())
}
