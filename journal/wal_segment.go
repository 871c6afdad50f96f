package journal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

// The metadata WAL is a sequence of segment files in the metadata
// directory, journal-<seq>.wal with seq a 20-digit decimal that grows by
// one per new file. Records never span files; the concatenation of the
// retained segments in seq order is the log. A segment is closed for
// appends (sealed) once it reaches walSegmentRecordsMax records or
// walSegmentBytesMax bytes; the next append opens seq+1. Compaction
// deletes whole leading segments; a truncation appends a tombstone.
const (
	walSegmentPrefix = "journal-"
	walSegmentSuffix = ".wal"
	// walSegmentRecordsMax and walSegmentBytesMax seal the active segment:
	// an append that finds it at either bound goes to a new segment. One
	// append (its batch is never split) may carry a segment past them. 256
	// records is half the node's checkpoint interval (512 ops), so a
	// checkpoint's compaction frees whole files and about two checkpoint
	// windows stay on disk.
	walSegmentRecordsMax = 256
	walSegmentBytesMax   = 4 << 20
	// walScanBufferBytes is the read-ahead of the open's streaming scan;
	// besides it the scan holds one record (≤ WALEntryBytesMax) at a time.
	walScanBufferBytes = 1 << 20
)

// walSegmentName is the file name of segment seq.
func walSegmentName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", walSegmentPrefix, seq, walSegmentSuffix)
}

// walSegFile names one segment on disk. The single-file WAL of earlier
// releases (journal.wal) is listed as seq 0 with legacy set.
type walSegFile struct {
	seq    uint64
	path   string
	legacy bool
}

// listWALSegments lists dir's WAL files in seq order. Segments are created
// at seq+1 and deleted from the front only, so the retained seqs are
// contiguous: a gap means a file was removed by hand, and the log would
// silently miss its records, so it refuses (ErrWALCorrupt). journal.wal
// next to numbered segments cannot come from this code either (the open
// renames it before creating any) and refuses as well.
func listWALSegments(fsys vfs.FS, dir string) ([]walSegFile, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list WAL directory %s: %w", dir, err)
	}
	var segs []walSegFile
	legacy := false
	for _, e := range ents {
		name := e.Name()
		if name == walFileName {
			legacy = true
			continue
		}
		if !strings.HasPrefix(name, walSegmentPrefix) || !strings.HasSuffix(name, walSegmentSuffix) {
			continue
		}
		digits := strings.TrimSuffix(strings.TrimPrefix(name, walSegmentPrefix), walSegmentSuffix)
		seq, perr := strconv.ParseUint(digits, 10, 64)
		if perr != nil || len(digits) != 20 {
			continue
		}
		segs = append(segs, walSegFile{seq: seq, path: filepath.Join(dir, name)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].seq < segs[j].seq })
	if legacy {
		if len(segs) > 0 {
			return nil, fmt.Errorf("%w: %s holds both the single-file WAL %s and WAL segments (%s…): refusing to guess which is current (remedy: wipe the metadata directory and rejoin by state transfer, or remove the stale one)",
				ErrWALCorrupt, dir, walFileName, filepath.Base(segs[0].path))
		}
		return []walSegFile{{seq: 0, path: filepath.Join(dir, walFileName), legacy: true}}, nil
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].seq != segs[i-1].seq+1 {
			return nil, fmt.Errorf("%w: WAL segment %s is missing (between %s and %s): its records would be silently lost; refusing to open (remedy: restore the file; or wipe the metadata directory and rejoin by state transfer)",
				ErrWALCorrupt, walSegmentName(segs[i-1].seq+1), filepath.Base(segs[i-1].path), filepath.Base(segs[i].path))
		}
	}
	return segs, nil
}

// A tombstone is a record in the ordinary entry format (so every scan,
// check and repair verifies it like any other) whose prepare is marked by
// view MaxUint32, operation Reserved, checksum walTombstoneChecksum and a
// body of walTombstoneMark ‖ count u32. Replaying it removes every op >=
// its op held by the records before it. count records follow it as one
// write (a truncation and its re-appended entries): the scan applies the
// group only when all of them are present and valid; a group cut by a
// torn tail is dropped whole, tombstone included, so a crash never leaves
// the truncation without the re-appended entries. Append refuses a
// prepare carrying the marks.
const (
	walTombstoneView     = math.MaxUint32
	walTombstoneChecksum = 0x454E4F5453424D4F // "OMBSTONE"
)

var walTombstoneMark = []byte("LWAL-TOMBSTONE/1")

func walTombstone(from uint64, count int) consensus.Prepare {
	body := append([]byte(nil), walTombstoneMark...)
	body = binary.LittleEndian.AppendUint32(body, uint32(count))
	return consensus.Prepare{Header: consensus.PrepareHeader{
		View: walTombstoneView, Op: from, Operation: consensus.OperationReserved, Checksum: walTombstoneChecksum,
	}, Body: body}
}

// walTombstoneCount reports whether p is a tombstone and how many records
// its group holds after it.
func walTombstoneCount(p *consensus.Prepare) (count int, ok bool) {
	h := &p.Header
	if h.View != walTombstoneView || h.Operation != consensus.OperationReserved || h.Checksum != walTombstoneChecksum ||
		len(p.Body) != len(walTombstoneMark)+4 || !bytes.HasPrefix(p.Body, walTombstoneMark) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(p.Body[len(walTombstoneMark):])), true
}

// walRecord is one verified record the scan hands over, in log order.
type walRecord struct {
	seg          int // index into the scanned segments
	offset, size int64
	prepare      consensus.Prepare
	tombstone    bool
}

// walDamage kinds.
const (
	walTorn           = iota // an append that never completed: cut at cut
	walInterior              // a valid record follows the damage
	walCompleteDamage        // whole by its framing, fails verification
	walSealedDamage          // damage in a segment a later one follows
)

// walDamage describes the first record of the log that does not verify.
type walDamage struct {
	kind     int
	seg      int   // index of the damaged segment
	at       int64 // byte of the first bad record
	cut      int64 // where a repair (or, for a torn tail, the open) cuts: at, or the start of its tombstone group
	segSize  int64
	perr     error
	headerOp uint64 // op by the damaged record's header (complete damage)
	// the valid record found after the damage (interior)
	nextSeg int
	nextAt  int64
	nextOp  uint64
}

// scanWAL reads segs in order with a bounded streaming reader (never a
// whole file in memory: a walScanBufferBytes read-ahead and one record),
// calling visit for every record of the log in order; a tombstone group is
// handed over only once complete. It stops at the first record that does
// not verify and classifies it (nil when the log is sound).
func scanWAL(fsys vfs.FS, segs []walSegFile, visit func(walRecord)) (*walDamage, error) {
	var rec []byte
	var br *bufio.Reader
	for i := range segs {
		f, err := fsys.Open(segs[i].path)
		if err != nil {
			return nil, fmt.Errorf("open WAL segment %s: %w", segs[i].path, err)
		}
		dmg, err := scanWALSegment(fsys, f, i, segs, visit, &br, &rec)
		f.Close()
		if err != nil || dmg != nil {
			return dmg, err
		}
	}
	return nil, nil
}

func scanWALSegment(fsys vfs.FS, f vfs.File, idx int, segs []walSegFile, visit func(walRecord), brp **bufio.Reader, rec *[]byte) (*walDamage, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat WAL segment %s: %w", segs[idx].path, err)
	}
	size := st.Size()
	if *brp == nil {
		*brp = bufio.NewReaderSize(io.NewSectionReader(f, 0, size), walScanBufferBytes)
	} else {
		(*brp).Reset(io.NewSectionReader(f, 0, size))
	}
	br := *brp
	var group []walRecord // a tombstone group being read
	want := 0
	off := int64(0)
	for off < size {
		b, perr := readWALRecord(br, size-off, rec)
		var p consensus.Prepare
		n := 0
		if perr == nil {
			p, n, perr = parseEntry(b)
		}
		if perr == nil && len(group) > 0 {
			if _, tomb := walTombstoneCount(&p); tomb {
				perr = fmt.Errorf("a tombstone inside the tombstone group at byte %d (%d of %d records read)", group[0].offset, len(group)-1, want)
			}
		}
		if perr != nil {
			cut := off
			if len(group) > 0 {
				cut = group[0].offset
			}
			return classifyWALDamage(fsys, f, idx, segs, off, cut, size, perr)
		}
		r := walRecord{seg: idx, offset: off, size: int64(n), prepare: p}
		count, tomb := walTombstoneCount(&p)
		r.tombstone = tomb
		switch {
		case tomb && count > 0:
			group, want = append(group[:0], r), count
		case len(group) > 0:
			group = append(group, r)
			if len(group) == want+1 {
				for _, g := range group {
					visit(g)
				}
				group = group[:0]
			}
		default:
			visit(r)
		}
		off += int64(n)
	}
	if len(group) > 0 {
		// The file ends inside a group: its write never completed (torn,
		// if nothing follows) or the sealed segment was cut.
		return classifyWALDamage(fsys, f, idx, segs, off, group[0].offset, size,
			fmt.Errorf("the tombstone group at byte %d holds %d of its %d records", group[0].offset, len(group)-1, want))
	}
	return nil, nil
}

// readWALRecord reads the next record (header and payload) from br, left
// bytes remaining in the file; the bytes stay valid until the next call.
// Framing that cannot be a record is an error without reading further.
func readWALRecord(br *bufio.Reader, left int64, rec *[]byte) ([]byte, error) {
	if left < walHeaderBytes {
		return nil, fmt.Errorf("%d bytes left, short of a %d-byte header", left, walHeaderBytes)
	}
	if cap(*rec) < walHeaderBytes {
		*rec = make([]byte, walHeaderBytes, 64<<10)
	}
	b := (*rec)[:walHeaderBytes]
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if m := le.Uint32(b); !isWALMagic(m) {
		return nil, fmt.Errorf("bad magic %08x", m)
	}
	payloadLen := int64(le.Uint32(b[4:]))
	if payloadLen > WALEntryBytesMax-walHeaderBytes {
		return nil, fmt.Errorf("payload length %d above bound", payloadLen)
	}
	if left-walHeaderBytes < payloadLen {
		return nil, fmt.Errorf("payload length %d exceeds the %d bytes left", payloadLen, left-walHeaderBytes)
	}
	total := walHeaderBytes + int(payloadLen)
	if cap(*rec) < total {
		grown := make([]byte, total)
		copy(grown, b)
		*rec = grown
	}
	b = (*rec)[:total]
	if _, err := io.ReadFull(br, b[walHeaderBytes:]); err != nil {
		return nil, err
	}
	return b, nil
}

// classifyWALDamage decides what the bad record at (segment idx, byte at)
// is, reading only the rest of the log (this path runs once, on damage):
// a valid record of a later write after it, or any valid record after it
// in a sealed segment or a later one ⇒ interior corruption; only valid
// records of its own write after it, in the last segment, and a hole
// before them (holeEvidence) ⇒ that write torn (its pages reach the disk
// in any order); the same without a hole ⇒ interior corruption; nothing
// valid after it: a record whole by its framing (completeRecord) ⇒ synced
// data damaged, unless it is the last segment's and holds a hole (torn);
// damage in a segment that a later segment follows ⇒ a sealed file
// damaged (a segment is created only after its predecessor's last append
// was synced); else a torn tail of the last segment.
func classifyWALDamage(fsys vfs.FS, f vfs.File, idx int, segs []walSegFile, at, cut, size int64, perr error) (*walDamage, error) {
	d := &walDamage{seg: idx, at: at, cut: cut, segSize: size, perr: perr}
	sameWrite := int64(-1) // the first valid record of the damaged record's own write after it
	for from := at + 1; ; {
		v, found, err := findValidEntryIn(f, from, size)
		if err != nil {
			return nil, fmt.Errorf("scan WAL segment %s: %w", segs[idx].path, err)
		}
		if !found {
			break
		}
		if v.batchStart > at || idx < len(segs)-1 {
			// A later write follows (or the segment is sealed): the
			// damaged record's write was synced before it.
			d.kind, d.nextSeg, d.nextAt, d.nextOp = walInterior, idx, v.at, v.op
			return d, nil
		}
		if sameWrite < 0 {
			sameWrite = v.at
		}
		from = v.at + v.size
	}
	for j := idx + 1; j < len(segs); j++ {
		g, err := fsys.Open(segs[j].path)
		if err != nil {
			return nil, fmt.Errorf("open WAL segment %s: %w", segs[j].path, err)
		}
		st, err := g.Stat()
		var v walValid
		var found bool
		if err == nil {
			v, found, err = findValidEntryIn(g, 0, st.Size())
		}
		g.Close()
		if err != nil {
			return nil, fmt.Errorf("scan WAL segment %s: %w", segs[j].path, err)
		}
		if found {
			d.kind, d.nextSeg, d.nextAt, d.nextOp = walInterior, j, v.at, v.op
			return d, nil
		}
	}
	if sameWrite >= 0 {
		// Only records of its own write follow, in the last segment: a
		// hole there (holeEvidence) is that write torn, its pages having
		// reached the disk in any order before its fdatasync returned: a
		// torn tail. Bit rot in it is damage like any other.
		span := make([]byte, sameWrite-at)
		if _, err := f.ReadAt(span, at); err != nil {
			return nil, fmt.Errorf("scan WAL segment %s: %w", segs[idx].path, err)
		}
		if holeEvidence(span, at) {
			d.kind = walTorn
			return d, nil
		}
		v, _, err := findValidEntryIn(f, sameWrite, size)
		if err != nil {
			return nil, fmt.Errorf("scan WAL segment %s: %w", segs[idx].path, err)
		}
		d.kind, d.nextSeg, d.nextAt, d.nextOp = walInterior, idx, v.at, v.op
		return d, nil
	}
	complete, op, err := completeRecordIn(f, at, size)
	if err != nil {
		return nil, fmt.Errorf("scan WAL segment %s: %w", segs[idx].path, err)
	}
	hole := false
	if complete && idx == len(segs)-1 {
		// The last write's record, whole by its framing: a sector of it
		// lost (its pages reach the disk in any order) leaves a hole
		// inside it; rot leaves none.
		if hole, err = recordHasHole(f, at); err != nil {
			return nil, fmt.Errorf("scan WAL segment %s: %w", segs[idx].path, err)
		}
	}
	switch {
	case hole:
		d.kind = walTorn
	case complete:
		d.kind, d.headerOp = walCompleteDamage, op
	case idx < len(segs)-1:
		d.kind = walSealedDamage
	default:
		d.kind = walTorn
	}
	return d, nil
}

// recordHasHole reads the record at (whole by its framing: completeRecordIn)
// and says whether it holds a torn write's hole (holeEvidence).
func recordHasHole(f vfs.File, at int64) (bool, error) {
	var head [walHeaderBytes]byte
	if _, err := f.ReadAt(head[:], at); err != nil {
		return false, err
	}
	span := make([]byte, walHeaderBytes+int64(binary.LittleEndian.Uint32(head[4:])))
	if _, err := f.ReadAt(span, at); err != nil {
		return false, err
	}
	return holeEvidence(span, at), nil
}

// walValid is a valid record found after damage: where it starts, its op,
// its length and where the write that put it down started.
type walValid struct {
	at, size, batchStart int64
	op                   uint64
}

// findValidEntryIn is findValidEntry over bytes [from, size) of f, read
// in walScanBufferBytes chunks: the first position holding a magic where
// a complete valid record starts.
func findValidEntryIn(f vfs.File, from, size int64) (walValid, bool, error) {
	prefix := []byte("LWA") // both formats' magic starts so
	buf := make([]byte, walScanBufferBytes)
	var rec []byte
	for pos := from; pos+walHeaderBytes <= size; {
		n := min(int64(len(buf)), size-pos)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, pos); err != nil && !errors.Is(err, io.EOF) {
			return walValid{}, false, err
		}
		for i := 0; ; {
			k := bytes.Index(chunk[i:], prefix)
			if k < 0 {
				break
			}
			cand := pos + int64(i+k)
			i += k + 1
			if cand+walHeaderBytes > size {
				break
			}
			var head [walHeaderBytes]byte
			if _, err := f.ReadAt(head[:], cand); err != nil {
				return walValid{}, false, err
			}
			if !isWALMagic(binary.LittleEndian.Uint32(head[:])) {
				continue
			}
			total := walHeaderBytes + int64(binary.LittleEndian.Uint32(head[4:]))
			if total > WALEntryBytesMax || cand+total > size {
				continue
			}
			if int64(cap(rec)) < total {
				rec = make([]byte, total)
			}
			rec = rec[:total]
			if _, err := f.ReadAt(rec, cand); err != nil {
				return walValid{}, false, err
			}
			if p, _, back, perr := parseEntryBatch(rec); perr == nil && back <= cand {
				return walValid{at: cand, size: total, batchStart: cand - back, op: p.Header.Op}, true, nil
			}
		}
		if pos+n >= size {
			break
		}
		pos += n - int64(len(prefix)-1) // a magic straddling the chunk end is seen next time
	}
	return walValid{}, false, nil
}

// completeRecordIn is completeRecord over bytes [at, size) of f, streamed:
// a magic was written, the declared length fits the bound and the file,
// and the bytes are not all zero. It also returns the op the header names.
func completeRecordIn(f vfs.File, at, size int64) (bool, uint64, error) {
	if size-at < walHeaderBytes {
		return false, 0, nil
	}
	var head [walHeaderBytes]byte
	if _, err := f.ReadAt(head[:], at); err != nil {
		return false, 0, err
	}
	n := int64(binary.LittleEndian.Uint32(head[4:]))
	op := binary.LittleEndian.Uint64(head[8:])
	if binary.LittleEndian.Uint32(head[:]) == 0 {
		return false, op, nil // the header's sector never reached the disk (completeRecord)
	}
	if n > WALEntryBytesMax-walHeaderBytes || walHeaderBytes+n > size-at {
		return false, op, nil
	}
	buf := make([]byte, min(walScanBufferBytes, size-at))
	for pos := at; pos < size; {
		chunk := buf[:min(int64(len(buf)), size-pos)]
		if _, err := f.ReadAt(chunk, pos); err != nil && !errors.Is(err, io.EOF) {
			return false, 0, err
		}
		for _, v := range chunk {
			if v != 0 {
				return true, op, nil
			}
		}
		pos += int64(len(chunk))
	}
	return false, op, nil
}
