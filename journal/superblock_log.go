package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// SuperblockLog holds the superblock records of many groups in one
// append-only file per node (issue 8 point 8): every group whose durable
// VSR state changed in one batch is written with the others, one write and
// one fdatasync for all. A view change of 10,000 partition groups then
// costs a few syncs, not two fsyncs and a rename per group. It stands
// beside each group's two-slot Superblock: a group's durable state is its
// newest record by sequence, wherever it is (the slots hold at least the
// group's first state; SuperblockSequence keeps the sequence shared).
//
// Record, little-endian:
//
//	magic u32 "SBL2" | record_len u32 (the whole record) |
//	batch_back u32 (bytes from the first record of its batch to it) |
//	key [20] | superblock record (encodeSuperblock: its own header,
//	payload and XXH3) | XXH3-64 over all preceding bytes of the record
//
// (The first format, magic "SBLR", had no batch_back: each such record is
// read as a batch of its own.)
//
// A batch is one write and one fdatasync; the next batch is written only
// after that sync succeeded. Until then its pages may reach the disk in
// any order (a power loss, or a failed fdatasync that wrote some of them),
// so the last batch may hold holes before valid records. A record that
// fails verification is therefore a torn tail, cut at open, when every
// valid record after it belongs to its own batch (batch_back reaches back
// over the damage); a valid record of a later batch after it means the
// damaged one was synced: that refuses the open (a forgotten view could
// break a vote). The file is compacted when it passes its bound: the
// newest record of every live group is written to a new file as a batch
// of its own, synced, and renamed over it.
type SuperblockLog struct {
	mu       sync.Mutex
	fs       vfs.FS
	path     string
	identity Identity
	f        vfs.File
	size     int64
	// latest: where each key's newest record is (by sequence).
	latest map[SuperblockKey]recordLoc
	// bytesMin: compaction waits until the file passes this and four times
	// what the live records take.
	bytesMin int64
	live     func(SuperblockKey) bool
	poisoned error
	// anyIdentity: a read-only reader (ReadSuperblockLog) takes records of
	// any identity.
	anyIdentity bool
}

// SuperblockKey names a group in the log (the caller's encoding).
type SuperblockKey [20]byte

// SuperblockLogEntry is one group's new durable state in a batch.
type SuperblockLogEntry struct {
	Key      SuperblockKey
	Sequence uint64 // above every earlier record of the group, in the log or its slots
	State    SuperblockState
}

type recordLoc struct {
	off, n int64
	seq    uint64
}

const (
	superblockLogMagicV1 uint32 = 0x524C4253 // "SBLR": no batch_back
	superblockLogMagic   uint32 = 0x324C4253 // "SBL2"
	superblockLogHeadV1         = 8 + len(SuperblockKey{})
	superblockLogHead           = 12 + len(SuperblockKey{})
	superblockLogTrailer        = 8
	superblockLogName           = "superblocks.log"
	// SuperblockLogBytesMin is the default compaction floor.
	SuperblockLogBytesMin = 16 << 20
	// superblockLogRecordMax bounds a record read at open (the largest
	// superblock record plus the framing).
	superblockLogRecordMax = superblockLogHead + superblockHeaderBytes + superblockPayloadBytesMax + superblockTrailerBytes + superblockLogTrailer
)

// ErrSuperblockLogDamaged marks damage to synced records.
var ErrSuperblockLogDamaged = errors.New("superblock log damaged")

// ErrSuperblockLogPoisoned marks a log that failed a sync (or could not
// cut off a failed append): nothing more is written to it until restart.
var ErrSuperblockLogPoisoned = errors.New("superblock log failed a sync")

// OpenSuperblockLog opens (or creates) dir/superblocks.log, cutting a torn
// tail. live says whether a key's group still exists (compaction drops the
// others); nil keeps every key.
func OpenSuperblockLog(dir string, id Identity, bytesMin int64, live func(SuperblockKey) bool, opts ...Option) (*SuperblockLog, error) {
	fsys := fsOf(opts)
	if err := ensureDir(fsys, dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, superblockLogName)
	_ = fsys.Remove(path + ".tmp") // an interrupted compaction: the old file stands
	_, statErr := fsys.Stat(path)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// Created: its name is durable only after a directory fsync (the
		// appends' fdatasync does not persist it), or a power loss could
		// take every synced record with the file.
		if err := syncDir(fsys, dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	l := &SuperblockLog{fs: fsys, path: path, identity: id, f: f, latest: make(map[SuperblockKey]recordLoc),
		bytesMin: max(bytesMin, 1<<20), live: live}
	if err := l.load(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// load scans the file, indexes each key's newest record and cuts a torn tail.
func (l *SuperblockLog) load() error {
	data, err := io.ReadAll(l.f)
	if err != nil {
		return fmt.Errorf("read %s: %w", l.path, err)
	}
	end, dmg := l.scan(data, func(off int, r sbLogRecord) {
		if cur, ok := l.latest[r.key]; !ok || r.seq > cur.seq {
			l.latest[r.key] = recordLoc{off: int64(off), n: int64(r.n), seq: r.seq}
		}
	})
	if dmg != nil {
		return fmt.Errorf("%w: %s: %v (remedy: wipe this node's data directory and let it rejoin by state transfer)", ErrSuperblockLogDamaged, l.path, dmg)
	}
	if end < len(data) {
		if err := l.f.Truncate(int64(end)); err != nil {
			return fmt.Errorf("cut the torn tail of %s at byte %d: %w", l.path, end, err)
		}
		if err := datasync(l.f); err != nil {
			return fmt.Errorf("sync %s after cutting its tail: %w", l.path, err)
		}
	}
	l.size = int64(end)
	return l.resync(data[:end])
}

// sbLogRecord is one verified record.
type sbLogRecord struct {
	key  SuperblockKey
	seq  uint64
	n    int // the whole record's length
	head int // where its superblock record starts
	back int // bytes from its batch's first record to it
}

// scan walks data's records in order, calling visit for each one that
// verifies, and returns where the sound prefix ends. A record that fails
// verification ends it: when a valid record of a later batch follows, the
// damaged one was synced (its batch's sync succeeded before the next batch
// was written) and scan returns that damage; otherwise everything from it
// on is the last batch, torn by a crash or a failed sync (its pages reach
// the disk in any order, so a hole before valid records of the same batch
// is expected: holeEvidence): a torn tail. Bytes damaged in place before
// such records, with no hole, are rot: damage.
func (l *SuperblockLog) scan(data []byte, visit func(off int, r sbLogRecord)) (end int, damage error) {
	off := 0
	for off < len(data) {
		r, err := l.verify(data[off:])
		if err != nil {
			firstSame := -1 // the first valid record of its own batch after it
			for at := off + 1; ; {
				next := nextValidRecord(l, data, at)
				if next < 0 {
					break
				}
				later, _ := l.verify(data[next:])
				if next-later.back > off {
					return off, fmt.Errorf("record at byte %d: %v, and a valid record of a later batch follows at byte %d", off, err, next)
				}
				if firstSame < 0 {
					firstSame = next
				}
				at = next + later.n
			}
			if firstSame >= 0 && !holeEvidence(data[off:firstSame], int64(off)) {
				return off, fmt.Errorf("record at byte %d: %v (not a torn write's hole), and a valid record of its batch follows at byte %d", off, err, firstSame)
			}
			return off, nil
		}
		visit(off, r)
		off += r.n
	}
	return off, nil
}

// resync writes what load read again in place, fdatasyncs it and fsyncs
// the directory, before anything is appended after it: a process whose
// fdatasync failed poisoned the log and stopped, and the kernel may have
// dropped those pages while reads still show them (fsyncgate); appending
// synced records after them would leave a hole that a power loss reveals
// (a damaged log, and a node that no longer boots). As journal.WAL's
// resyncLocked; found by the metadata simulator (seed 286).
func (l *SuperblockLog) resync(data []byte) error {
	if len(data) > 0 {
		if _, err := l.f.WriteAt(data, 0); err != nil {
			return fmt.Errorf("resync %s: %w", l.path, err)
		}
		if err := datasync(l.f); err != nil {
			return fmt.Errorf("resync %s: %w", l.path, err)
		}
	}
	return syncDir(l.fs, filepath.Dir(l.path))
}

// nextValidRecord is the offset of the first record after from that
// verifies (-1: none).
func nextValidRecord(l *SuperblockLog, data []byte, from int) int {
	magic := []byte("SBL") // both formats' magic starts so
	for from < len(data) {
		i := bytes.Index(data[from:], magic)
		if i < 0 {
			return -1
		}
		at := from + i
		if _, err := l.verify(data[at:]); err == nil {
			return at
		}
		from = at + 1
	}
	return -1
}

// verify checks the record at the start of b.
func (l *SuperblockLog) verify(b []byte) (sbLogRecord, error) {
	le := binary.LittleEndian
	var r sbLogRecord
	if len(b) < superblockLogHeadV1+superblockLogTrailer {
		return r, fmt.Errorf("%d bytes left, shorter than a record", len(b))
	}
	switch m := le.Uint32(b); m {
	case superblockLogMagic:
		r.head = superblockLogHead
	case superblockLogMagicV1:
		r.head = superblockLogHeadV1
	default:
		return r, fmt.Errorf("magic %#x", m)
	}
	n := int(le.Uint32(b[4:]))
	if n < r.head+superblockLogTrailer || n > superblockLogRecordMax || n > len(b) {
		return r, fmt.Errorf("record length %d (%d bytes left)", n, len(b))
	}
	if got, want := xxh3.Hash(b[:n-superblockLogTrailer]), le.Uint64(b[n-superblockLogTrailer:]); got != want {
		return r, fmt.Errorf("checksum %016x, recorded %016x", got, want)
	}
	if r.head == superblockLogHead {
		r.back = int(le.Uint32(b[8:]))
	}
	copy(r.key[:], b[r.head-len(r.key):])
	seq, st, err := decodeSuperblock(b[r.head : n-superblockLogTrailer])
	if err != nil {
		return r, err
	}
	if !l.anyIdentity && st.Identity != l.identity {
		return r, fmt.Errorf("record of cluster %016x%016x replica %d of %d, configured replica %d of %d",
			st.Cluster.Hi, st.Cluster.Lo, st.ReplicaID, st.ReplicaCount, l.identity.ReplicaID, l.identity.ReplicaCount)
	}
	r.seq, r.n = seq, n
	return r, nil
}

// appendSuperblockLogRecord appends key's record holding the superblock
// record body, back bytes after its batch's first record.
func appendSuperblockLogRecord(buf []byte, key SuperblockKey, body []byte, back int) []byte {
	start := len(buf)
	le := binary.LittleEndian
	buf = le.AppendUint32(buf, superblockLogMagic)
	buf = le.AppendUint32(buf, uint32(superblockLogHead+len(body)+superblockLogTrailer))
	buf = le.AppendUint32(buf, uint32(back))
	buf = append(buf, key[:]...)
	buf = append(buf, body...)
	return le.AppendUint64(buf, xxh3.Hash(buf[start:]))
}

// ReadSuperblockLog reads dir's superblock log without changing it (tools
// and tests, also beside a running server): the newest state of each key
// among the records that verify, up to the first that does not. damage
// describes a record that fails before valid ones (the server refuses to
// open such a log); a torn tail (nothing valid after it) is not damage:
// no sync covered it, and the next open cuts it.
func ReadSuperblockLog(dir string, opts ...Option) (states map[SuperblockKey]*SuperblockState, damage string, err error) {
	path := filepath.Join(dir, superblockLogName)
	data, err := fsOf(opts).ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	l := &SuperblockLog{path: path, anyIdentity: true}
	states = make(map[SuperblockKey]*SuperblockState)
	seqs := make(map[SuperblockKey]uint64)
	_, dmg := l.scan(data, func(off int, r sbLogRecord) {
		if r.seq > seqs[r.key] {
			_, st, _ := decodeSuperblock(data[off+r.head : off+r.n-superblockLogTrailer])
			states[r.key], seqs[r.key] = st, r.seq
		}
	})
	if dmg != nil {
		return states, fmt.Sprintf("%s: damaged %v: the server refuses to boot on it", superblockLogName, dmg), nil
	}
	return states, "", nil // a torn tail of the last batch, if any: never relied on, cut at the next boot
}

// Latest returns a key's newest record (ok false when it has none).
func (l *SuperblockLog) Latest(key SuperblockKey) (seq uint64, st *SuperblockState, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	loc, ok := l.latest[key]
	if !ok {
		return 0, nil, false, nil
	}
	b := make([]byte, loc.n)
	if _, err := l.f.ReadAt(b, loc.off); err != nil {
		return 0, nil, false, fmt.Errorf("read %s at byte %d: %w", l.path, loc.off, err)
	}
	r, err := l.verify(b)
	if err != nil {
		return 0, nil, false, fmt.Errorf("%w: %s: record at byte %d changed since open: %v", ErrSuperblockLogDamaged, l.path, loc.off, err)
	}
	seq, st, err = decodeSuperblock(b[r.head : r.n-superblockLogTrailer])
	if err != nil {
		return 0, nil, false, err
	}
	return seq, st, true, nil
}

// Append makes a batch of records durable: one write, one fdatasync. A
// failed write is cut off again; a failed sync poisons the log (what the
// file holds is unknown: no later batch may claim durability on it).
func (l *SuperblockLog) Append(batch []SuperblockLogEntry) error {
	if len(batch) == 0 {
		return nil
	}
	buf := make([]byte, 0, len(batch)*(superblockLogHead+superblockHeaderBytes+superblockPayloadBytes+superblockTrailerBytes+superblockLogTrailer))
	locs := make([]recordLoc, len(batch))
	for i := range batch {
		e := &batch[i]
		if e.State.Identity != l.identity {
			return fmt.Errorf("superblock log append: identity %+v differs from opened %+v", e.State.Identity, l.identity)
		}
		if e.State.LogView > e.State.View {
			return fmt.Errorf("superblock log append: log_view %d above view %d", e.State.LogView, e.State.View)
		}
		start := len(buf)
		buf = appendSuperblockLogRecord(buf, e.Key, encodeSuperblock(e.Sequence, &e.State), start)
		locs[i] = recordLoc{off: int64(start), n: int64(len(buf) - start), seq: e.Sequence}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.poisoned != nil {
		return l.poisoned
	}
	start := time.Now()
	if _, err := l.f.WriteAt(buf, l.size); err != nil {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.poisoned = fmt.Errorf("%w: %s: a failed append could not be cut off (%v): %v", ErrSuperblockLogPoisoned, l.path, terr, err)
			return l.poisoned
		}
		return fmt.Errorf("append %d superblock records to %s: %w", len(batch), l.path, err)
	}
	if err := datasync(l.f); err != nil {
		l.poisoned = fmt.Errorf("%w: sync %s: %v", ErrSuperblockLogPoisoned, l.path, err)
		return l.poisoned
	}
	ObserveSync(SyncSuperblock, start)
	for i := range batch {
		loc := locs[i]
		loc.off += l.size
		if cur, ok := l.latest[batch[i].Key]; !ok || loc.seq > cur.seq {
			l.latest[batch[i].Key] = loc
		}
	}
	l.size += int64(len(buf))
	if l.size > max(l.bytesMin, 4*l.liveBytes()) {
		if err := l.compact(); err != nil {
			// The old file still holds everything: the next batch tries again.
			return nil // the batch itself is durable
		}
	}
	return nil
}

func (l *SuperblockLog) liveBytes() int64 {
	var n int64
	for _, loc := range l.latest {
		n += loc.n
	}
	return n
}

// compact writes the newest record of every live key to a new file,
// synced, and renames it over the log (mu held). Each record is written
// as a batch of its own (batch_back 0): all are synced before the rename
// shows them, so damage to any of them is damage to synced state.
func (l *SuperblockLog) compact() error {
	keep := make([]SuperblockKey, 0, len(l.latest))
	for key := range l.latest {
		if l.live == nil || l.live(key) {
			keep = append(keep, key)
		}
	}
	// In key order: the same records give the same file (a replayed run
	// of the simulator writes the same bytes).
	slices.SortFunc(keep, func(a, b SuperblockKey) int { return bytes.Compare(a[:], b[:]) })
	tmp := l.path + ".tmp"
	f, err := l.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	fail := func(err error) error {
		f.Close()
		_ = l.fs.Remove(tmp)
		return err
	}
	latest := make(map[SuperblockKey]recordLoc, len(keep))
	var off int64
	for _, key := range keep {
		loc := l.latest[key]
		b := make([]byte, loc.n)
		if _, err := l.f.ReadAt(b, loc.off); err != nil {
			return fail(fmt.Errorf("read %s at byte %d: %w", l.path, loc.off, err))
		}
		r, err := l.verify(b)
		if err != nil {
			return fail(fmt.Errorf("%w: %s: record at byte %d changed since open: %v", ErrSuperblockLogDamaged, l.path, loc.off, err))
		}
		rec := appendSuperblockLogRecord(nil, key, b[r.head:r.n-superblockLogTrailer], 0)
		if _, err := f.WriteAt(rec, off); err != nil {
			return fail(fmt.Errorf("write %s: %w", tmp, err))
		}
		latest[key] = recordLoc{off: off, n: int64(len(rec)), seq: loc.seq}
		off += int64(len(rec))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync %s: %w", tmp, err))
	}
	if err := l.fs.Rename(tmp, l.path); err != nil {
		return fail(fmt.Errorf("rename %s over %s: %w", tmp, l.path, err))
	}
	if err := syncDir(l.fs, filepath.Dir(l.path)); err != nil {
		// The rename may not be durable: either file holds every live
		// record, and the new one is the one open from now on.
		f.Close()
		l.poisoned = fmt.Errorf("%w: sync the directory of %s after compaction: %v", ErrSuperblockLogPoisoned, l.path, err)
		return l.poisoned
	}
	l.f.Close()
	l.f, l.latest, l.size = f, latest, off
	return nil
}

// Size is the file's length in bytes.
func (l *SuperblockLog) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Close closes the file.
func (l *SuperblockLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
