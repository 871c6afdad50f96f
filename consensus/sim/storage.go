package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// storage is one replica's durable state for one group, as the real
// driver keeps it: an append-only journal of framed records (each with
// its own checksum), a two-copy superblock and the latest application
// snapshot. It survives crashes of the replica that owns it.
//
// Only writes of the Ready in progress can be lost: the driver persists
// (and fsyncs) a Ready before it sends its messages, so everything a
// crash may cut was never revealed to anyone.
//
// Checkpoints follow upstream's order (spec §4.3): snapshot file, then the
// superblock naming it (checkpoint_op and its anchor), then the journal is
// drained up to min(snapshot op, superblock checkpoint_op). A crash in
// between leaves a newer snapshot than the superblock names, with the
// journal still holding the ops in between.
type storage struct {
	log        [][]byte // framed records in write order
	superblock *consensus.VsrState
	snapshot   *consensus.Snapshot

	superblockWrites uint64
	tornRecords      uint64
	drained          uint64 // journal entries at or below were dropped

	// lazySync (the powerloss profile, `durability = replicated`): journal
	// records reach the page cache when written and the disk only at
	// sync(); synced is how many leading records a power loss keeps. The
	// superblock and snapshots are always synced. Without lazySync every
	// record is synced as it is written.
	lazySync bool
	synced   int
	// lost: op -> checksum of entries a power loss took from the page
	// cache, or a storage loss from the journal (storagelost.go); the
	// quorum audit counts them: the ack sent for them was honest when it
	// left.
	lost map[uint64]uint64

	// index mirrors what a replay would return (op -> checksum) so the
	// quorum audit can ask cheaply whether an op is durable here.
	index map[uint64]uint64
}

// holds reports whether op with this checksum is durable here: in the
// journal, or covered by the durable snapshot.
func (s *storage) holds(op, checksum uint64) bool {
	if s.snapshot != nil && s.snapshot.Op >= op {
		return true
	}
	sum, ok := s.index[op]
	return ok && sum == checksum
}

func (s *storage) reindex(entries []consensus.Prepare) {
	s.index = make(map[uint64]uint64, len(entries))
	for _, e := range entries {
		s.index[e.Header.Op] = e.Header.Checksum
	}
}

type recordKind uint8

const (
	recordEntry    recordKind = 1
	recordTruncate recordKind = 2
)

// writeKind orders the writes of one Ready.
type writeKind uint8

const (
	writeSnapshot writeKind = iota // a state-transfer snapshot, made durable first
	writeTruncate
	writeEntry
	writeSuperblock
)

type write struct {
	kind       writeKind
	truncate   uint64
	entry      consensus.Prepare
	superblock consensus.VsrState
	snapshot   consensus.Snapshot
}

// planWrites lists a Ready's durable writes in the order the driver
// issues them: a state-transfer snapshot, truncate, entries in op order,
// then the superblock (which may name the snapshot).
func planWrites(rd *consensus.Ready) []write {
	ws := make([]write, 0, len(rd.Entries)+3)
	if rd.Snapshot != nil {
		ws = append(ws, write{kind: writeSnapshot, snapshot: *rd.Snapshot})
	}
	if rd.Truncate != 0 {
		ws = append(ws, write{kind: writeTruncate, truncate: rd.Truncate})
	}
	for _, e := range rd.Entries {
		ws = append(ws, write{kind: writeEntry, entry: e})
	}
	if rd.Superblock != nil {
		ws = append(ws, write{kind: writeSuperblock, superblock: *rd.Superblock})
	}
	return ws
}

// apply makes w durable (with lazySync: a journal record reaches the page
// cache).
func (s *storage) apply(w write) {
	defer func() {
		if !s.lazySync {
			s.synced = len(s.log)
		}
	}()
	switch w.kind {
	case writeTruncate:
		s.log = append(s.log, frameRecord(recordTruncate, binary.LittleEndian.AppendUint64(nil, w.truncate)))
		for op := range s.index {
			if op >= w.truncate {
				delete(s.index, op)
			}
		}
	case writeEntry:
		s.log = append(s.log, frameRecord(recordEntry, encodePrepare(w.entry)))
		if s.index == nil {
			s.index = map[uint64]uint64{}
		}
		s.index[w.entry.Header.Op] = w.entry.Header.Checksum
	case writeSuperblock:
		sb := w.superblock
		sb.ViewHeaders = slices.Clone(sb.ViewHeaders) // durable bytes never alias the core's memory
		s.superblock = &sb
		s.superblockWrites++
		s.drain()
	case writeSnapshot:
		s.installSnapshot(w.snapshot)
	}
}

// applyTorn models a crash in the middle of w. A journal record is left
// with a damaged tail (its checksum fails on restart); a superblock write
// leaves the other copy, i.e. the previous superblock, in force; a snapshot
// write (temp file, rename) leaves the previous snapshot.
func (s *storage) applyTorn(w write, g *rng) {
	if w.kind != writeEntry {
		return
	}
	rec := frameRecord(recordEntry, encodePrepare(w.entry))
	if g.chance(0.5) && len(rec) > 1 {
		rec = rec[:g.between(1, len(rec)-1)]
	} else {
		i := g.intn(len(rec))
		rec[i] ^= byte(1 + g.intn(255))
	}
	s.log = append(s.log, rec)
	s.tornRecords++
}

// installSnapshot durably replaces the snapshot (write temp, rename). The
// journal is drained only once a superblock names the checkpoint.
func (s *storage) installSnapshot(snap consensus.Snapshot) {
	c := snap
	c.Data = slices.Clone(snap.Data)
	s.snapshot = &c
	s.drain()
}

// drainFloor is the op up to which the journal may be dropped: covered by
// the durable snapshot and named by the durable superblock.
func (s *storage) drainFloor() uint64 {
	if s.snapshot == nil || s.superblock == nil {
		return 0
	}
	return min(s.snapshot.Op, s.superblock.CheckpointOp)
}

// drain drops journal entries at or below the drain floor, rewriting the
// journal atomically, the way a WAL reclaims space after a checkpoint.
func (s *storage) drain() {
	if floor := s.drainFloor(); floor > s.drained {
		s.drained = floor
		s.compact()
	}
}

// compact rewrites the synced records as their live entries above the
// drained floor (an atomic, synced rewrite); unsynced records stay after
// them as they were (without lazySync there are none).
func (s *storage) compact() {
	entries, _ := replayLog(s.log[:s.synced])
	log := make([][]byte, 0, len(entries)+len(s.log)-s.synced)
	kept := entries[:0]
	for _, e := range entries {
		if e.Header.Op > s.drained {
			log = append(log, frameRecord(recordEntry, encodePrepare(e)))
			kept = append(kept, e)
		}
	}
	synced := len(log)
	log = append(log, s.log[s.synced:]...)
	s.log, s.synced = log, synced
	if synced == len(log) {
		s.reindex(kept)
		return
	}
	all, _ := s.replay()
	s.reindex(all)
}

// sync makes every journal record durable (an fdatasync of the WAL).
func (s *storage) sync() { s.synced = len(s.log) }

// unsynced reports whether a power loss would lose journal records.
func (s *storage) unsynced() bool { return s.synced < len(s.log) }

// losePageCache is a power loss: journal records written since the last
// sync are gone; the superblock and the snapshot were synced.
func (s *storage) losePageCache() {
	before := s.index
	clear(s.log[s.synced:])
	s.log = s.log[:s.synced]
	entries, _ := s.replay()
	s.reindex(entries)
	for op, sum := range before {
		if s.index[op] != sum {
			if s.lost == nil {
				s.lost = map[uint64]uint64{}
			}
			s.lost[op] = sum
		}
	}
}

// lostToFault reports whether a power loss or a storage loss took op with
// this checksum.
func (s *storage) lostToFault(op, checksum uint64) bool {
	sum, ok := s.lost[op]
	return ok && sum == checksum
}

// maybeCompact keeps the record log within a small factor of its live
// entries so long runs stay bounded in memory.
func (s *storage) maybeCompact() {
	if len(s.log) > 256 {
		entries, _ := s.replay()
		if len(s.log) > 4*len(entries)+64 {
			s.compact()
		}
	}
}

// replay decodes the record log in write order and stops at the first
// record whose checksum fails (a torn tail). It returns the surviving
// entries in op order and how many records were valid.
func (s *storage) replay() ([]consensus.Prepare, int) { return replayLog(s.log) }

// replayLog replays records in write order up to the first that fails its
// checksum.
func replayLog(log [][]byte) ([]consensus.Prepare, int) {
	var entries []consensus.Prepare // sorted by op, unique
	valid := 0
	for _, rec := range log {
		kind, payload, err := unframeRecord(rec)
		if err != nil {
			break
		}
		switch kind {
		case recordTruncate:
			from := binary.LittleEndian.Uint64(payload)
			i, _ := slices.BinarySearchFunc(entries, from, cmpEntryOp)
			entries = entries[:i]
		case recordEntry:
			p, err := decodePrepare(payload)
			if err != nil {
				return entries, valid
			}
			i, found := slices.BinarySearchFunc(entries, p.Header.Op, cmpEntryOp)
			if found {
				entries[i] = p
			} else {
				entries = slices.Insert(entries, i, p)
			}
		}
		valid++
	}
	return entries, valid
}

func cmpEntryOp(p consensus.Prepare, op uint64) int {
	switch {
	case p.Header.Op < op:
		return -1
	case p.Header.Op > op:
		return 1
	}
	return 0
}

// restore is what the restart path reads back: it cuts the journal at the
// first record that fails its checksum (so later appends follow the valid
// prefix, as a real WAL truncates its file) and returns the superblock,
// the snapshot and the entries from the snapshot's op on (the entry at the
// snapshot op, when the journal still holds it, anchors the hash chain).
func (s *storage) restore() (consensus.Restored, int) {
	entries, valid := s.replay()
	cut := len(s.log) - valid
	clear(s.log[valid:])
	s.log = s.log[:valid]
	s.synced = min(s.synced, valid)
	s.reindex(entries)
	var st consensus.Restored
	if s.superblock != nil {
		sb := *s.superblock
		sb.ViewHeaders = slices.Clone(sb.ViewHeaders)
		st.Superblock = &sb
	}
	floor := uint64(0)
	if s.snapshot != nil {
		snap := *s.snapshot
		snap.Data = slices.Clone(snap.Data)
		st.Snapshot = &snap
		floor = snap.Op
	}
	for _, e := range entries {
		if e.Header.Op >= floor {
			st.Entries = append(st.Entries, e)
		}
	}
	return st, cut
}

// frameRecord lays out kind u8 | len u32 | payload | xxh3-64 of the rest.
func frameRecord(kind recordKind, payload []byte) []byte {
	b := make([]byte, 0, 1+4+len(payload)+8)
	b = append(b, byte(kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

var errTornRecord = errors.New("journal record fails its checksum")

func unframeRecord(rec []byte) (recordKind, []byte, error) {
	if len(rec) < 1+4+8 {
		return 0, nil, fmt.Errorf("record of %d bytes: %w", len(rec), errTornRecord)
	}
	body, sum := rec[:len(rec)-8], binary.LittleEndian.Uint64(rec[len(rec)-8:])
	if xxh3.Hash(body) != sum {
		return 0, nil, errTornRecord
	}
	n := binary.LittleEndian.Uint32(body[1:5])
	if int(n) != len(body)-5 {
		return 0, nil, fmt.Errorf("record length %d, have %d: %w", n, len(body)-5, errTornRecord)
	}
	kind := recordKind(body[0])
	if kind != recordEntry && kind != recordTruncate {
		return 0, nil, fmt.Errorf("record kind %d: %w", kind, errTornRecord)
	}
	if kind == recordTruncate && n != 8 {
		return 0, nil, fmt.Errorf("truncate record of %d bytes: %w", n, errTornRecord)
	}
	return kind, body[5:], nil
}

const prepareHeaderBytes = 4 + 8*5 + 16 + 8*3 + 1 + 4

func encodePrepare(p consensus.Prepare) []byte {
	h := p.Header
	b := make([]byte, 0, prepareHeaderBytes+len(p.Body))
	b = binary.LittleEndian.AppendUint32(b, h.View)
	b = binary.LittleEndian.AppendUint64(b, h.Op)
	b = binary.LittleEndian.AppendUint64(b, h.Commit)
	b = binary.LittleEndian.AppendUint64(b, h.Timestamp)
	b = binary.LittleEndian.AppendUint64(b, h.Parent)
	b = binary.LittleEndian.AppendUint64(b, h.Checksum)
	b = binary.LittleEndian.AppendUint64(b, h.Client.Lo)
	b = binary.LittleEndian.AppendUint64(b, h.Client.Hi)
	b = binary.LittleEndian.AppendUint64(b, h.Session)
	b = binary.LittleEndian.AppendUint64(b, h.Request)
	b = binary.LittleEndian.AppendUint64(b, h.ReqSum)
	b = append(b, byte(h.Operation))
	b = binary.LittleEndian.AppendUint32(b, h.UserID)
	return append(b, p.Body...)
}

func decodePrepare(b []byte) (consensus.Prepare, error) {
	if len(b) < prepareHeaderBytes {
		return consensus.Prepare{}, fmt.Errorf("prepare record of %d bytes, header needs %d", len(b), prepareHeaderBytes)
	}
	le := binary.LittleEndian
	var h consensus.PrepareHeader
	h.View = le.Uint32(b[0:])
	h.Op = le.Uint64(b[4:])
	h.Commit = le.Uint64(b[12:])
	h.Timestamp = le.Uint64(b[20:])
	h.Parent = le.Uint64(b[28:])
	h.Checksum = le.Uint64(b[36:])
	h.Client.Lo = le.Uint64(b[44:])
	h.Client.Hi = le.Uint64(b[52:])
	h.Session = le.Uint64(b[60:])
	h.Request = le.Uint64(b[68:])
	h.ReqSum = le.Uint64(b[76:])
	h.Operation = consensus.Operation(b[84])
	h.UserID = le.Uint32(b[85:])
	p := consensus.Prepare{Header: h}
	if len(b) > prepareHeaderBytes {
		p.Body = slices.Clone(b[prepareHeaderBytes:])
	}
	return p, nil
}
