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
//	magic u32 "SBLR" | record_len u32 (the whole record) | key [20] |
//	superblock record (encodeSuperblock: its own header, payload and
//	XXH3) | XXH3-64 over all preceding bytes of the record
//
// A record that fails verification with no valid record after it is a
// torn tail of a batch whose sync never finished: it is cut at open. One
// with a valid record after it is damage to synced state and refuses the
// open (a forgotten view could break a vote). The file is compacted when
// it passes its bound: the newest record of every live group is written to
// a new file, synced, and renamed over it.
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
	superblockLogMagic   uint32 = 0x524C4253 // "SBLR"
	superblockLogHead           = 8 + len(SuperblockKey{})
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
	off := 0
	for off < len(data) {
		key, seq, n, err := l.verify(data[off:])
		if err != nil {
			if next := nextValidRecord(l, data, off+1); next >= 0 {
				return fmt.Errorf("%w: %s: record at byte %d: %v, and a valid record follows at byte %d (remedy: wipe this node's data directory and let it rejoin by state transfer)",
					ErrSuperblockLogDamaged, l.path, off, err, next)
			}
			if err := l.f.Truncate(int64(off)); err != nil {
				return fmt.Errorf("cut the torn tail of %s at byte %d: %w", l.path, off, err)
			}
			if err := datasync(l.f); err != nil {
				return fmt.Errorf("sync %s after cutting its tail: %w", l.path, err)
			}
			break
		}
		if cur, ok := l.latest[key]; !ok || seq > cur.seq {
			l.latest[key] = recordLoc{off: int64(off), n: int64(n), seq: seq}
		}
		off += n
	}
	l.size = int64(off)
	return l.resync(data[:off])
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
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], superblockLogMagic)
	for from < len(data) {
		i := bytes.Index(data[from:], magic[:])
		if i < 0 {
			return -1
		}
		at := from + i
		if _, _, _, err := l.verify(data[at:]); err == nil {
			return at
		}
		from = at + 1
	}
	return -1
}

// verify checks the record at the start of b and returns its key, its
// superblock sequence and its length.
func (l *SuperblockLog) verify(b []byte) (SuperblockKey, uint64, int, error) {
	le := binary.LittleEndian
	var key SuperblockKey
	if len(b) < superblockLogHead+superblockLogTrailer {
		return key, 0, 0, fmt.Errorf("%d bytes left, shorter than a record", len(b))
	}
	if m := le.Uint32(b); m != superblockLogMagic {
		return key, 0, 0, fmt.Errorf("magic %#x", m)
	}
	n := int(le.Uint32(b[4:]))
	if n < superblockLogHead+superblockLogTrailer || n > superblockLogRecordMax || n > len(b) {
		return key, 0, 0, fmt.Errorf("record length %d (%d bytes left)", n, len(b))
	}
	if got, want := xxh3.Hash(b[:n-superblockLogTrailer]), le.Uint64(b[n-superblockLogTrailer:]); got != want {
		return key, 0, 0, fmt.Errorf("checksum %016x, recorded %016x", got, want)
	}
	copy(key[:], b[8:])
	seq, st, err := decodeSuperblock(b[superblockLogHead : n-superblockLogTrailer])
	if err != nil {
		return key, 0, 0, err
	}
	if !l.anyIdentity && st.Identity != l.identity {
		return key, 0, 0, fmt.Errorf("record of cluster %016x%016x replica %d of %d, configured replica %d of %d",
			st.Cluster.Hi, st.Cluster.Lo, st.ReplicaID, st.ReplicaCount, l.identity.ReplicaID, l.identity.ReplicaCount)
	}
	return key, seq, n, nil
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
	for off := 0; off < len(data); {
		key, seq, n, verr := l.verify(data[off:])
		if verr != nil {
			if next := nextValidRecord(l, data, off+1); next >= 0 {
				return states, fmt.Sprintf("%s: damaged record at byte %d (%v) before a valid one at byte %d: the server refuses to boot on it", superblockLogName, off, verr, next), nil
			}
			return states, "", nil // a torn tail: never relied on, cut at the next boot
		}
		if seq > seqs[key] {
			_, st, _ := decodeSuperblock(data[off+superblockLogHead : off+n-superblockLogTrailer])
			states[key], seqs[key] = st, seq
		}
		off += n
	}
	return states, "", nil
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
	le := binary.LittleEndian
	if got, want := xxh3.Hash(b[:loc.n-superblockLogTrailer]), le.Uint64(b[loc.n-superblockLogTrailer:]); got != want {
		return 0, nil, false, fmt.Errorf("%w: %s: record at byte %d changed since open", ErrSuperblockLogDamaged, l.path, loc.off)
	}
	seq, st, err = decodeSuperblock(b[superblockLogHead : loc.n-superblockLogTrailer])
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
		buf = binary.LittleEndian.AppendUint32(buf, superblockLogMagic)
		buf = binary.LittleEndian.AppendUint32(buf, 0)
		buf = append(buf, e.Key[:]...)
		buf = append(buf, encodeSuperblock(e.Sequence, &e.State)...)
		binary.LittleEndian.PutUint32(buf[start+4:], uint32(len(buf)-start+superblockLogTrailer))
		buf = binary.LittleEndian.AppendUint64(buf, xxh3.Hash(buf[start:]))
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
// synced, and renames it over the log (mu held).
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
		if _, err := f.WriteAt(b, off); err != nil {
			return fail(fmt.Errorf("write %s: %w", tmp, err))
		}
		latest[key] = recordLoc{off: off, n: loc.n, seq: loc.seq}
		off += loc.n
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
