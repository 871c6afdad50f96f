package journal

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/lodestream/lodestream/consensus"
)

// Segment references (issue 9 point 2). A message prepare whose batch the
// partition log already holds at a known place (staged past its applied
// end, partitions.Log.Stage) is recorded as its header and that place, not
// its body: the body is written once, into the segment. Record: magic
// "LWRF", payload = the encoded prepare header (body_len = the batch's
// length, no body) then segment start offset u64 and byte position u64;
// the checksum covers the 16 header bytes and the payload, as for entries.
//
// Opening resolves every live reference through the caller's resolver and
// verifies the body against the prepare's checksum; a reference that does
// not resolve is damage (ErrPrepareLogDamaged), as a record that does not
// parse is. A superseded reference is never read: its bytes may be gone
// (the caller wrote the prepare inline, InlineRefs, before cutting them).
//
// The log remembers the header and place of every live reference above
// the last reclaimed checkpoint, so the caller can write those prepares
// inline (InlineRefs) before the bytes they name go away: a staged tail
// cut, a segment deleted.

// refMagic starts a segment-reference record ("LWRF").
const refMagic uint32 = 0x4652574C

// refPlaceBytes: segment start offset and byte position after the header.
const refPlaceBytes = 16

// BodyRef is where a prepare's body lives in the partition log: the
// segment's start offset, the byte position in its .log file and the
// length (the whole batch record). A zero Length means no reference.
type BodyRef struct {
	Segment, Position, Length uint64
}

// BodyResolver reads the body a reference names (op is the prepare's).
type BodyResolver func(op uint64, ref BodyRef) ([]byte, error)

// WithBodyResolver lets OpenPrepareLog and CutPrepareLogAtDamage read the
// bodies segment references name.
func WithBodyResolver(r BodyResolver) Option {
	return func(o *options) { o.resolver = r }
}

// refEntry is a live reference: the prepare's header and where its body is.
type refEntry struct {
	header consensus.PrepareHeader
	ref    BodyRef
}

// appendRefRecord appends p's header and ref as a reference record.
func appendRefRecord(buf []byte, h *consensus.PrepareHeader, ref BodyRef) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeaderBytes)...)
	buf = appendPrepare(buf, &consensus.Prepare{Header: *h})
	le := binary.LittleEndian
	le.PutUint32(buf[len(buf)-4:], uint32(ref.Length)) // body_len, the last header field
	buf = le.AppendUint64(buf, ref.Segment)
	buf = le.AppendUint64(buf, ref.Position)
	le.PutUint32(buf[start:], refMagic)
	le.PutUint32(buf[start+4:], uint32(len(buf)-start-walHeaderBytes))
	le.PutUint64(buf[start+8:], h.Op)
	le.PutUint64(buf[start+16:], entryChecksum(buf[start:start+16], buf[start+walHeaderBytes:]))
	return buf
}

// parseRefRecord validates the reference record at the start of b.
func parseRefRecord(b []byte) (h consensus.PrepareHeader, ref BodyRef, n int, err error) {
	le := binary.LittleEndian
	if len(b) < walHeaderBytes || le.Uint32(b) != refMagic {
		return h, ref, 0, fmt.Errorf("not a reference record")
	}
	size := int(le.Uint32(b[4:]))
	if size != prepareFixedBytes+refPlaceBytes {
		return h, ref, 0, fmt.Errorf("reference record with payload length %d", size)
	}
	if len(b) < walHeaderBytes+size {
		return h, ref, 0, fmt.Errorf("reference record of %d bytes cut at %d", walHeaderBytes+size, len(b))
	}
	payload := b[walHeaderBytes : walHeaderBytes+size]
	if entryChecksum(b[:16], payload) != le.Uint64(b[16:]) {
		return h, ref, 0, fmt.Errorf("reference record checksum mismatch")
	}
	head := payload[:prepareFixedBytes]
	length := le.Uint32(head[prepareFixedBytes-4:])
	zeroed := append([]byte(nil), head...)
	le.PutUint32(zeroed[prepareFixedBytes-4:], 0)
	p, err := decodePrepare(zeroed)
	if err != nil {
		return h, ref, 0, fmt.Errorf("reference record: %w", err)
	}
	if p.Header.Op != le.Uint64(b[8:]) {
		return h, ref, 0, fmt.Errorf("reference record op %d differs from prepare op %d", le.Uint64(b[8:]), p.Header.Op)
	}
	if length == 0 {
		return h, ref, 0, fmt.Errorf("reference record of op %d names an empty body", p.Header.Op)
	}
	ref = BodyRef{Segment: le.Uint64(payload[prepareFixedBytes:]), Position: le.Uint64(payload[prepareFixedBytes+8:]), Length: uint64(length)}
	return p.Header, ref, walHeaderBytes + size, nil
}

// resolveBody reads and verifies the body ref names for the prepare h.
func resolveBody(resolver BodyResolver, h *consensus.PrepareHeader, ref BodyRef) ([]byte, error) {
	if resolver == nil {
		return nil, fmt.Errorf("op %d names a body in segment %d at byte %d and no resolver was given", h.Op, ref.Segment, ref.Position)
	}
	body, err := resolver(h.Op, ref)
	if err != nil {
		return nil, fmt.Errorf("op %d: body in segment %d at byte %d: %w", h.Op, ref.Segment, ref.Position, err)
	}
	if uint64(len(body)) != ref.Length || consensus.PrepareChecksum(h, body) != h.Checksum {
		return nil, fmt.Errorf("op %d: the %d bytes in segment %d at byte %d are not its body", h.Op, ref.Length, ref.Segment, ref.Position)
	}
	return body, nil
}

// resolveLive reads the bodies of the live references, in file order. It
// returns the first that does not resolve (its file and byte position),
// after resolving every one before it.
func resolveLive(resolver BodyResolver, live map[uint64]liveRecord) (failed *liveRecord, err error) {
	var refs []*liveRecord
	for op := range live {
		if r := live[op]; r.ref.Length > 0 {
			refs = append(refs, &r)
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].seq != refs[j].seq {
			return refs[i].seq < refs[j].seq
		}
		return refs[i].at < refs[j].at
	})
	for _, r := range refs {
		body, rerr := resolveBody(resolver, &r.p.Header, r.ref)
		if rerr != nil {
			return r, rerr
		}
		r.p.Body = body
		live[r.p.Header.Op] = *r
	}
	return nil, nil
}

// InlineRefs writes again, with their bodies, the prepares whose live
// references match (in op order): read supplies each body (from the
// partition log, before the caller removes the bytes). The new records
// supersede the references; the caller syncs them (Sync) before the bytes
// go. It reports how many it wrote.
func (l *PrepareLog) InlineRefs(match func(op uint64, ref BodyRef) bool, read BodyResolver) (int, error) {
	if l.poisoned != nil {
		return 0, l.poisoned
	}
	var ops []uint64
	for op, r := range l.refs {
		if match(op, r.ref) {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return 0, nil
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	entries := make([]consensus.Prepare, len(ops))
	for i, op := range ops {
		r := l.refs[op]
		body, err := resolveBody(read, &r.header, r.ref)
		if err != nil {
			return 0, fmt.Errorf("write prepare WAL %s references inline: %w", l.dir, err)
		}
		entries[i] = consensus.Prepare{Header: r.header, Body: body}
	}
	if err := l.Write(0, entries); err != nil {
		return 0, err
	}
	return len(entries), nil
}

// RefBytes is the length of the bodies the live references name (what
// the log would hold with them inline).
func (l *PrepareLog) RefBytes() int64 {
	var n int64
	for _, r := range l.refs {
		n += int64(r.ref.Length)
	}
	return n
}

// RefCount is how many live prepares the log holds as segment references.
func (l *PrepareLog) RefCount() int { return len(l.refs) }

// HasRefs reports a live reference matching match.
func (l *PrepareLog) HasRefs(match func(op uint64, ref BodyRef) bool) bool {
	for op, r := range l.refs {
		if match(op, r.ref) {
			return true
		}
	}
	return false
}
