package bus

import (
	"fmt"
	"math"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
)

// FetchKind is the command number of a fetch frame (commands 30–31, ours).
// Fetch frames are partition-plane, node-level frames: a lagging replica
// whose needed ops were evicted from every journal pulls a partition's
// stored message records from a peer, in bounded chunks. They are not
// consensus messages.
type FetchKind uint8

// The fetch frames.
const (
	FetchRequest FetchKind = 30 // replica → peer: send me stored records of Group from Offset
	FetchReply   FetchKind = 31 // peer → replica
	// FetchStatus asks a peer where it stands in Group (a node whose
	// storage is empty asks whether the group has history elsewhere).
	FetchStatus      FetchKind = 32
	FetchStatusReply FetchKind = 33 // peer → replica: View, Op, CommitMax, Newborn
)

func (k FetchKind) String() string {
	switch k {
	case FetchRequest:
		return "fetch_request"
	case FetchReply:
		return "fetch_reply"
	case FetchStatus:
		return "fetch_status"
	case FetchStatusReply:
		return "fetch_status_reply"
	}
	return fmt.Sprintf("fetch_kind(%d)", uint8(k))
}

// Command numbers of the fetch frames.
const (
	CommandFetchRequest     = Command(FetchRequest)
	CommandFetchReply       = Command(FetchReply)
	CommandFetchStatus      = Command(FetchStatus)
	CommandFetchStatusReply = Command(FetchStatusReply)
)

// IsFetchCommand reports whether c is one of the fetch frames.
func IsFetchCommand(c Command) bool {
	return c >= CommandFetchRequest && c <= CommandFetchStatusReply
}

// Fetch statuses (Fetch.Status, FetchReply only).
const (
	// FetchOK: Records holds whole batch records starting at Offset
	// (possibly none when Offset == NextOffset).
	FetchOK uint8 = 0
	// FetchNoSuchGroup: the peer does not serve this group (yet, or any more).
	FetchNoSuchGroup uint8 = 1
	// FetchBelowRetained: Offset is below the peer's FirstOffset
	// (retention removed it).
	FetchBelowRetained uint8 = 2
	// FetchUnavailable: the peer cannot read it now (quarantined, busy);
	// try another peer.
	FetchUnavailable uint8 = 3
	// FetchOtherEpoch: the peer's log is of another purge epoch than the
	// request's PurgeGeneration (a purge restarts a partition's offsets at
	// 0, so the same offsets name other records); the reply carries the
	// peer's PurgeGeneration and PurgeOp.
	FetchOtherEpoch uint8 = 4

	fetchStatusMax = FetchOtherEpoch
)

// Fetch is one fetch frame. Fields a Kind does not carry are zero (and are
// ignored by EncodeFetch); To is not on the wire (the receiving bus sets
// it).
type Fetch struct {
	Kind     FetchKind
	From, To uint8

	Group uint64            // every kind: partition consensus group id
	Nonce consensus.Uint128 // every kind: correlates a reply with its request

	// Offset: request: the first offset wanted; reply: the base offset of
	// the first record in Records.
	Offset uint64
	// EndOffset: request: stop before this offset; reply: the end of the
	// records sent (the offset after the last record's last message; ==
	// Offset when Records is empty, > Offset otherwise).
	EndOffset uint64
	// BytesMax (request only, >= 1) bounds the reply's Records bytes. A
	// reply carries at least one whole record if one is available even
	// when it alone exceeds BytesMax, but never more than the bus's
	// max_message_size allows (FetchRecordsMax).
	BytesMax uint32

	// PurgeGeneration: request: the purge epoch the records must be of;
	// reply: the peer's. PurgeOp (reply only): the op of the group's log
	// that carried out the peer's purge generation (0: none).
	PurgeGeneration uint64
	PurgeOp         uint64

	FirstOffset uint64 // reply only: the peer's first stored offset
	NextOffset  uint64 // reply only: the peer's log end (the next offset it would assign)
	Status      uint8  // reply only: a Fetch* status
	// Records (reply only, FetchOK only): the body, whole batch records
	// exactly as stored, back to back. The bus does not parse them (the
	// node verifies each with wire.VerifyBatchRecord); the frame's
	// checksum_body covers them. Nil when empty; a decoded reply's Records
	// alias the frame.
	Records []byte

	// FetchStatusReply only: the peer's position in Group (its view, log
	// head op and commit_max; all zero: the group has no history there).
	View      uint32
	Op        uint64
	CommitMax uint64
	// Newborn (FetchStatusReply only): the peer is the primary of view 0
	// of a cluster it joined as a fresh replica in this process, and has
	// committed nothing and never changed view since. Its log (ops it
	// prepared that no backup acknowledged yet) is then no history a
	// peer could have lost (node/storage_lost.go).
	Newborn bool
}

// StatusName is the status's name for logs ("" on a request).
func (f *Fetch) StatusName() string {
	if f.Kind != FetchReply {
		return ""
	}
	if n := [...]string{"ok", "no_such_group", "below_retained", "unavailable", "other_epoch"}; int(f.Status) < len(n) {
		return n[f.Status]
	}
	return fmt.Sprintf("status(%d)", f.Status)
}

// FetchRecordsMax is the most Records bytes a FetchReply may carry on a bus
// whose max_message_size is maxMessageBytes (the frame is the header plus
// the records). A server answering a fetch caps the records it sends
// (whole records only) at min(this, the request's BytesMax), except that
// one record alone may exceed BytesMax.
func FetchRecordsMax(maxMessageBytes uint64) uint64 {
	if maxMessageBytes <= HeaderBytes {
		return 0
	}
	return min(maxMessageBytes, math.MaxUint32) - HeaderBytes
}

// Fetch frame offsets (ours, not taken from upstream; from byte 0
// of the header). Every byte not listed is zero.
//
//	| off | field        | type | kinds   | Fetch       |
//	|-----|--------------|------|---------|-------------|
//	| 128 | nonce        | u128 | both    | Nonce       |
//	| 144 | group        | u64  | both    | Group       |
//	| 152 | offset       | u64  | both    | Offset      |
//	| 160 | end_offset   | u64  | both    | EndOffset   |
//	| 168 | bytes_max    | u32  | request | BytesMax    |
//	| 176 | first_offset | u64  | reply   | FirstOffset |
//	| 184 | next_offset  | u64  | reply   | NextOffset  |
//	| 192 | status ≤ 4   | u8   | reply   | Status      |
//	| 193 | newborn ≤ 1  | u8   | status_reply | Newborn |
//	| 196 | view         | u32  | status_reply | View   |
//	| 200 | op           | u64  | status_reply | Op     |
//	| 208 | commit_max   | u64  | status_reply | CommitMax |
//	| 216 | purge_generation | u64 | both  | PurgeGeneration |
//	| 224 | purge_op     | u64  | reply   | PurgeOp     |
//
// FetchStatus carries nonce and group only; FetchStatusReply nonce,
// group, newborn, view, op and commit_max. Neither has a body.
//
// Common header: checksum = seal, checksum_body = XXH3-64(Records) widened
// (0 when there are none), cluster, size = 256 + len(Records), view 0,
// command, replica = From.
const (
	offFetchNonce       = 128 // u128
	offFetchGroup       = 144 // u64
	offFetchOffset      = 152 // u64
	offFetchEndOffset   = 160 // u64
	offFetchBytesMax    = 168 // u32: FetchRequest
	offFetchFirstOffset = 176 // u64: FetchReply
	offFetchNextOffset  = 184 // u64: FetchReply
	offFetchStatus      = 192 // u8: FetchReply
	offFetchNewborn     = 193 // u8: FetchStatusReply
	offFetchView        = 196 // u32: FetchStatusReply
	offFetchOp          = 200 // u64: FetchStatusReply
	offFetchCommitMax   = 208 // u64: FetchStatusReply
	offFetchPurgeGen    = 216 // u64: FetchRequest, FetchReply
	offFetchPurgeOp     = 224 // u64: FetchReply
)

func knownFetch(k FetchKind) bool { return IsFetchCommand(Command(k)) }

// fetchBody is the body f's frame carries: the records of a reply.
func fetchBody(f *Fetch) []byte {
	if f.Kind == FetchReply {
		return f.Records
	}
	return nil
}

// FetchEncodedSize is the frame size f encodes to (0 for an unknown kind).
func FetchEncodedSize(f *Fetch) int {
	if !knownFetch(f.Kind) {
		return 0
	}
	return HeaderBytes + len(fetchBody(f))
}

// checkFetch applies the per-kind rules (shared by EncodeFetch and
// DecodeFetch, so the encoder never produces a frame the decoder refuses).
func checkFetch(f *Fetch) error {
	switch f.Kind {
	case FetchRequest:
		if f.BytesMax == 0 {
			return invalid("%s: bytes_max 0", f.Kind)
		}
	case FetchReply:
		if f.Status > fetchStatusMax {
			return invalid("%s: status %d (max %d)", f.Kind, f.Status, fetchStatusMax)
		}
		if f.EndOffset < f.Offset {
			return invalid("%s: end_offset %d below offset %d", f.Kind, f.EndOffset, f.Offset)
		}
		if len(f.Records) == 0 {
			if f.EndOffset != f.Offset {
				return invalid("%s: no records but end_offset %d != offset %d", f.Kind, f.EndOffset, f.Offset)
			}
		} else {
			if f.Status != FetchOK {
				return invalid("%s: status %d carries %d record bytes", f.Kind, f.Status, len(f.Records))
			}
			if f.EndOffset == f.Offset {
				return invalid("%s: %d record bytes but end_offset == offset %d", f.Kind, len(f.Records), f.Offset)
			}
		}
	}
	return nil
}

// EncodeFetch appends f's frame to dst: a sealed header, and for a reply
// the records as the body. Fields f.Kind does not carry are ignored (a
// request's Records too); an unknown kind or a frame DecodeFetch would
// refuse (status out of range, BytesMax 0 on a request, a reply's offsets
// inconsistent with its records) is refused.
func (c *Codec) EncodeFetch(dst []byte, f *Fetch) ([]byte, error) {
	if !knownFetch(f.Kind) {
		return dst, fmt.Errorf("encode fetch frame: unknown kind %d", f.Kind)
	}
	g := fetchFields(f)
	if err := checkFetch(&g); err != nil {
		return dst, fmt.Errorf("encode fetch frame: %w", err)
	}
	body := fetchBody(&g)
	if len(body) > math.MaxUint32-HeaderBytes {
		return dst, fmt.Errorf("encode fetch frame: %d record bytes exceed the u32 size field", len(body))
	}
	start := len(dst)
	dst = slices.Grow(dst, HeaderBytes+len(body))
	dst = dst[:start+HeaderBytes]
	dst = append(dst, body...)
	frame := dst[start:]
	c.putFetchHeader(frame[:HeaderBytes], &g, len(body), fetchBodyChecksum(body))
	return dst, nil
}

// fetchFields is f with only the fields its kind carries (the shape
// DecodeFetch returns, To zero).
func fetchFields(f *Fetch) Fetch {
	g := Fetch{Kind: f.Kind, From: f.From, Group: f.Group, Nonce: f.Nonce}
	switch f.Kind {
	case FetchRequest, FetchReply:
		g.Offset, g.EndOffset = f.Offset, f.EndOffset
	}
	switch f.Kind {
	case FetchRequest:
		g.BytesMax, g.PurgeGeneration = f.BytesMax, f.PurgeGeneration
	case FetchReply:
		g.FirstOffset, g.NextOffset, g.Status = f.FirstOffset, f.NextOffset, f.Status
		g.PurgeGeneration, g.PurgeOp = f.PurgeGeneration, f.PurgeOp
		if len(f.Records) > 0 {
			g.Records = f.Records
		}
	case FetchStatusReply:
		g.View, g.Op, g.CommitMax, g.Newborn = f.View, f.Op, f.CommitMax, f.Newborn
	}
	return g
}

// fetchBodyChecksum is a fetch frame's checksum_body: XXH3-64 of the
// records, 0 for none (as for every sealed kind).
func fetchBodyChecksum(body []byte) uint64 {
	if len(body) == 0 {
		return 0
	}
	return xxh3.Hash(body)
}

// putFetchHeader writes the whole 256-byte header of f's frame and seals
// it.
func (c *Codec) putFetchHeader(h []byte, f *Fetch, bodyBytes int, bodySum uint64) {
	clear(h)
	putU128(h[offFetchNonce:], f.Nonce)
	le.PutUint64(h[offFetchGroup:], f.Group)
	switch f.Kind {
	case FetchRequest:
		le.PutUint64(h[offFetchOffset:], f.Offset)
		le.PutUint64(h[offFetchEndOffset:], f.EndOffset)
		le.PutUint32(h[offFetchBytesMax:], f.BytesMax)
		le.PutUint64(h[offFetchPurgeGen:], f.PurgeGeneration)
	case FetchReply:
		le.PutUint64(h[offFetchOffset:], f.Offset)
		le.PutUint64(h[offFetchEndOffset:], f.EndOffset)
		le.PutUint64(h[offFetchFirstOffset:], f.FirstOffset)
		le.PutUint64(h[offFetchNextOffset:], f.NextOffset)
		h[offFetchStatus] = f.Status
		le.PutUint64(h[offFetchPurgeGen:], f.PurgeGeneration)
		le.PutUint64(h[offFetchPurgeOp:], f.PurgeOp)
	case FetchStatusReply:
		if f.Newborn {
			h[offFetchNewborn] = 1
		}
		le.PutUint32(h[offFetchView:], f.View)
		le.PutUint64(h[offFetchOp:], f.Op)
		le.PutUint64(h[offFetchCommitMax:], f.CommitMax)
	}
	if bodySum != 0 {
		putWide(h[offChecksumBody:], bodySum)
	}
	putU128(h[offCluster:], c.cluster)
	le.PutUint32(h[offSize:], uint32(HeaderBytes+bodyBytes))
	h[offCommand] = byte(f.Kind)
	h[offReplica] = f.From
	putWide(h[offChecksum:], frameChecksum(h))
}

// DecodeFetch parses and validates one whole fetch frame (len(frame) = the
// declared size). To is left zero: the bus sets it. The records are not
// parsed, only checked against checksum_body; a reply's Records alias
// frame. Any error wraps ErrInvalidFrame.
//
// As with Decode, a frame decodes only if it is exactly what EncodeFetch
// produces for the result: the seal and checksum_body matching, view 0,
// every byte a kind does not carry zero, a request header only with
// bytes_max ≥ 1, a reply's status in range and its offsets consistent
// with its records (end_offset ≥ offset, == offset exactly when there are
// none; records only with status ok).
func (c *Codec) DecodeFetch(frame []byte) (Fetch, error) {
	if len(frame) < HeaderBytes {
		return Fetch{}, invalid("%d bytes: shorter than the %d-byte header", len(frame), HeaderBytes)
	}
	h := frame[:HeaderBytes]
	if size := FrameSize(h); int64(size) != int64(len(frame)) {
		return Fetch{}, invalid("size field %d does not match the %d-byte frame", size, len(frame))
	}
	kind := FetchKind(h[offCommand])
	if !knownFetch(kind) {
		return Fetch{}, invalid("command %d is not a fetch frame", h[offCommand])
	}
	if getU128(h[offCluster:]) != c.cluster {
		return Fetch{}, invalid("%s: cluster id mismatch", kind)
	}
	sum, err := getWide(h[offChecksum:], "checksum")
	if err != nil {
		return Fetch{}, err
	}
	if sum != frameChecksum(h) {
		return Fetch{}, invalid("%s: header checksum mismatch", kind)
	}
	body := frame[HeaderBytes:]
	bodySum := fetchBodyChecksum(body)
	if got, err := getWide(h[offChecksumBody:], "checksum_body"); err != nil {
		return Fetch{}, err
	} else if got != bodySum {
		return Fetch{}, invalid("%s: body checksum mismatch", kind)
	}
	f := Fetch{Kind: kind, From: h[offReplica], Group: le.Uint64(h[offFetchGroup:]), Nonce: getU128(h[offFetchNonce:])}
	if kind != FetchReply && len(body) != 0 {
		return Fetch{}, invalid("%s: header-only frame carries %d body bytes", kind, len(body))
	}
	switch kind {
	case FetchRequest:
		f.Offset, f.EndOffset = le.Uint64(h[offFetchOffset:]), le.Uint64(h[offFetchEndOffset:])
		f.BytesMax = le.Uint32(h[offFetchBytesMax:])
		f.PurgeGeneration = le.Uint64(h[offFetchPurgeGen:])
	case FetchStatusReply:
		if h[offFetchNewborn] > 1 {
			return Fetch{}, invalid("%s: newborn %d (max 1)", kind, h[offFetchNewborn])
		}
		f.Newborn = h[offFetchNewborn] == 1
		f.View, f.Op, f.CommitMax = le.Uint32(h[offFetchView:]), le.Uint64(h[offFetchOp:]), le.Uint64(h[offFetchCommitMax:])
	case FetchReply:
		f.Offset, f.EndOffset = le.Uint64(h[offFetchOffset:]), le.Uint64(h[offFetchEndOffset:])
		f.FirstOffset = le.Uint64(h[offFetchFirstOffset:])
		f.NextOffset = le.Uint64(h[offFetchNextOffset:])
		f.Status = h[offFetchStatus]
		f.PurgeGeneration, f.PurgeOp = le.Uint64(h[offFetchPurgeGen:]), le.Uint64(h[offFetchPurgeOp:])
		if len(body) > 0 {
			f.Records = body
		}
	}
	if err := checkFetch(&f); err != nil {
		return Fetch{}, err
	}
	var canon [HeaderBytes]byte
	c.putFetchHeader(canon[:], &f, len(body), bodySum)
	if i := canonicalDiff(canon[:], h); i >= 0 {
		return Fetch{}, invalid("%s: header byte %d is not canonical (reserved or malformed field)", kind, i)
	}
	return f, nil
}
