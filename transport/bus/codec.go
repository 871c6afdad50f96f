package bus

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
)

// Command-specific offsets (from byte 0 of the header). Where upstream
// defines the message they are server-design §2.2's; "ours" marks fields
// upstream lacks, placed in bytes upstream leaves reserved. docs/bus.md has
// the full tables.
const (
	// Prepare / RepairPrepare (and each DoViewChange / StartView suffix entry).
	offPrepClient    = 128 // u128
	offPrepParent    = 144 // u128 (u64 widened)
	offPrepReqSum    = 160 // u128 (u64 widened): request_checksum
	offPrepOp        = 176
	offPrepCommit    = 184 // primary's commit_max when it prepared
	offPrepTimestamp = 192
	offPrepRequest   = 200
	offPrepOperation = 208 // u8 + 7 pad
	offPrepGroup     = 216
	offPrepUserID    = 224 // u32
	offPrepView      = 228 // u32, ours: the view the entry was prepared in
	offPrepSession   = 232 // u64, ours
	offPrepNonce     = 240 // u128, ours: RepairPrepare's repair-session nonce

	// PrepareOk.
	offOkParent    = 128 // u128
	offOkChecksum  = 144 // u128: prepare_checksum
	offOkOp        = 160
	offOkCommitMax = 168
	offOkTimestamp = 176
	offOkRequest   = 184
	offOkOperation = 192 // u8 + 7 pad
	offOkGroup     = 200

	// Commit heartbeat.
	offCommitChecksum  = 128 // u128, unused (0)
	offCommitCounter   = 144 // timestamp_monotonic: heartbeat counter
	offCommitCommitMin = 152
	offCommitCkptOp    = 160 // checkpoint_op, unused (0)
	offCommitGroup     = 168

	// StartViewChange, RequestStartView.
	offSvcGroup       = 128
	offSvcAmnesiac    = 136 // u8 0/1, ours: consensus.Message.Amnesiac
	offSvcRepaired    = 144 // u64, ours: consensus.Message.RepairProgress (primary-elect)
	offRsvGroup       = 128
	offRsvAmnesiac    = 136 // u8 0/1, ours
	offRsvFlags       = 137 // u8, ours: bit 0 view unknown (a wiped replica), bit 1 a backup's answer
	offRsvIncarnation = 240

	// RequestStartView flags (offRsvFlags).
	rsvViewUnknown = 1 << 0
	rsvProbeAnswer = 1 << 1

	// DoViewChange / StartView.
	offVcHeadOp      = 128
	offVcCommit      = 136
	offVcGroup       = 144
	offDvcLogView    = 152 // u32
	offDvcAmnesiac   = 156 // u8 0/1, ours
	offDvcLost       = 157 // u8 0/1, ours: consensus.Message.StorageLost
	offDvcCommitMax  = 160 // u64, ours: consensus.Message.CommitMax (unclamped; 0 = not reported)
	offDvcNack       = 224 // u128
	offDvcPresent    = 240 // u128
	offSvIncarnation = 240 // u128

	// RequestPrepares.
	offRpNonce  = 128
	offRpFromOp = 144
	offRpToOp   = 152
	offRpGroup  = 160

	// RepairDone / RangeEvicted.
	offRdNonce = 128
	offRdOp    = 144 // last served / first retained
	offRdGroup = 152

	// RequestStateTransfer.
	offRstNonce = 128
	offRstGroup = 144

	// StateTransferTarget.
	offSttNonce      = 128
	offSttSnapshotOp = 144 // upstream commit_op
	offSttGroup      = 152
	offSttAvailable  = 160 // u8
	offSttTransient  = 161 // u8 unavailable_transient, unused (0)
	offSttCommitMax  = 168 // unused (0)

	// RequestStateChunk.
	offRscNonce      = 128
	offRscOffset     = 144
	offRscGroup      = 152
	offRscLength     = 160 // u32, > 0
	offRscArtifact   = 164 // u32, unused (0)
	offRscSnapshotOp = 168 // ours

	// StateChunk.
	offScNonce      = 128
	offScOffset     = 144
	offScGroup      = 152
	offScArtifact   = 160 // u32, unused (0)
	offScAvailable  = 164 // u8, ours
	offScSnapshotOp = 168 // ours
)

// manifestBytes is the StateTransferTarget body when Available: snapshot
// size, snapshot checksum, anchor timestamp, anchor checksum (u64 each).
const manifestBytes = 32

// Codec encodes and decodes replica frames of one cluster. It is stateless
// and safe for concurrent use.
type Codec struct {
	cluster consensus.Uint128
}

// NewCodec returns a codec stamping and requiring cluster id cluster
// (ClusterID of [cluster] name).
func NewCodec(cluster consensus.Uint128) *Codec { return &Codec{cluster: cluster} }

// Cluster is the cluster id the codec stamps.
func (c *Codec) Cluster() consensus.Uint128 { return c.cluster }

// sealed reports whether the header checksum seals the frame: every kind
// except Prepare / RepairPrepare, whose checksum is the entry's identity.
func sealed(k consensus.MessageKind) bool {
	return k != consensus.MsgPrepare && k != consensus.MsgRepairPrepare
}

func knownKind(k consensus.MessageKind) bool {
	switch k {
	case consensus.MsgPrepare, consensus.MsgPrepareOk, consensus.MsgCommit, consensus.MsgStartViewChange,
		consensus.MsgDoViewChange, consensus.MsgStartView, consensus.MsgRequestStartView,
		consensus.MsgRequestPrepares, consensus.MsgRepairPrepare, consensus.MsgRepairDone,
		consensus.MsgRangeEvicted, consensus.MsgRequestStateTransfer, consensus.MsgStateTransferTarget,
		consensus.MsgRequestStateChunk, consensus.MsgStateChunk:
		return true
	}
	return false
}

// bodyLen is the body size of f's frame.
func bodyLen(f *fields) int {
	switch f.Kind {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare:
		return len(f.Entry.Body)
	case consensus.MsgDoViewChange, consensus.MsgStartView:
		return HeaderBytes * len(f.Suffix)
	case consensus.MsgStateTransferTarget:
		if f.Available {
			return manifestBytes
		}
	case consensus.MsgStateChunk:
		return len(f.ChunkData)
	}
	return 0
}

// EncodedSize is the frame size m encodes to (0 for an unknown kind).
func EncodedSize(m *consensus.Message) int {
	if !knownKind(m.Kind) {
		return 0
	}
	f := fromMessage(m)
	if f.Entry == nil && (f.Kind == consensus.MsgPrepare || f.Kind == consensus.MsgRepairPrepare) {
		return HeaderBytes
	}
	return HeaderBytes + bodyLen(&f)
}

// Encode appends m's frame to dst. Fields m.Kind does not carry are ignored;
// To is not on the wire (a connection joins one pair of replicas).
func (c *Codec) Encode(dst []byte, m *consensus.Message) ([]byte, error) {
	if !knownKind(m.Kind) {
		return dst, fmt.Errorf("encode replica frame: unknown message kind %d", m.Kind)
	}
	f := fromMessage(m)
	if (f.Kind == consensus.MsgPrepare || f.Kind == consensus.MsgRepairPrepare) && f.Entry == nil {
		return dst, fmt.Errorf("encode replica frame: kind %d without a prepare", m.Kind)
	}
	if len(f.Suffix) > SuffixHeadersMax {
		return dst, fmt.Errorf("encode replica frame: kind %d with %d suffix headers (max %d)", m.Kind, len(f.Suffix), SuffixHeadersMax)
	}
	n := bodyLen(&f)
	if n > math.MaxUint32-HeaderBytes {
		return dst, fmt.Errorf("encode replica frame: kind %d body of %d bytes exceeds the u32 size field", m.Kind, n)
	}
	start := len(dst)
	dst = slices.Grow(dst, HeaderBytes+n)
	dst = dst[:start+HeaderBytes+n]
	frame := dst[start:]
	body := frame[HeaderBytes:] // putBody writes every byte
	c.putBody(body, &f)
	c.putHeader(frame[:HeaderBytes], &f, n, bodyChecksum(f.Kind, body))
	return dst, nil
}

// EncodeSplit encodes m as Encode does, without copying a large body: a
// prepare's (or repair prepare's) body and a state chunk's data come back
// as body, aliasing m, after head, the 256-byte header; head followed by
// body is byte for byte the frame Encode produces. Every other kind comes
// back whole in head, with body nil. The caller must not modify body until
// it has been written (a prepare's body is immutable once proposed).
func (c *Codec) EncodeSplit(m *consensus.Message) (head, body []byte, err error) {
	switch m.Kind {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare, consensus.MsgStateChunk:
	default:
		head, err = c.Encode(nil, m)
		return head, nil, err
	}
	f := fromMessage(m)
	if f.Kind != consensus.MsgStateChunk && f.Entry == nil {
		return nil, nil, fmt.Errorf("encode replica frame: kind %d without a prepare", m.Kind)
	}
	if f.Kind == consensus.MsgStateChunk {
		body = f.ChunkData
	} else {
		body = f.Entry.Body
	}
	if len(body) > math.MaxUint32-HeaderBytes {
		return nil, nil, fmt.Errorf("encode replica frame: kind %d body of %d bytes exceeds the u32 size field", m.Kind, len(body))
	}
	head = make([]byte, HeaderBytes)
	c.putHeader(head, &f, len(body), bodyChecksum(f.Kind, body))
	if len(body) == 0 {
		body = nil
	}
	return head, body, nil
}

// bodyChecksum is the checksum_body of a frame: XXH3-64 of the body, or 0
// for an empty body of a sealed kind (a prepare always stamps it).
func bodyChecksum(k consensus.MessageKind, body []byte) uint64 {
	if len(body) == 0 && sealed(k) {
		return 0
	}
	return xxh3.Hash(body)
}

func (c *Codec) putBody(b []byte, f *fields) {
	switch f.Kind {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare:
		copy(b, f.Entry.Body)
	case consensus.MsgDoViewChange, consensus.MsgStartView:
		for i := range f.Suffix {
			c.putSuffixEntry(b[i*HeaderBytes:(i+1)*HeaderBytes], &f.Suffix[i], f.Group)
		}
	case consensus.MsgStateTransferTarget:
		if f.Available {
			le.PutUint64(b[0:], f.SnapshotSizeBytes)
			le.PutUint64(b[8:], f.SnapshotChecksum)
			le.PutUint64(b[16:], f.AnchorTimestamp)
			le.PutUint64(b[24:], f.AnchorChecksum)
		}
	case consensus.MsgStateChunk:
		copy(b, f.ChunkData)
	}
}

// putPrepareFields writes a prepare header's fields (checksum at 0 and the
// command-specific area; the caller writes the rest of the common header).
func putPrepareFields(h []byte, p *consensus.PrepareHeader, group uint64) {
	putWide(h[offChecksum:], p.Checksum)
	putU128(h[offPrepClient:], p.Client)
	putWide(h[offPrepParent:], p.Parent)
	putWide(h[offPrepReqSum:], p.ReqSum)
	le.PutUint64(h[offPrepOp:], p.Op)
	le.PutUint64(h[offPrepCommit:], p.Commit)
	le.PutUint64(h[offPrepTimestamp:], p.Timestamp)
	le.PutUint64(h[offPrepRequest:], p.Request)
	h[offPrepOperation] = byte(p.Operation)
	le.PutUint64(h[offPrepGroup:], group)
	le.PutUint32(h[offPrepUserID:], p.UserID)
	le.PutUint32(h[offPrepView:], p.View)
	le.PutUint64(h[offPrepSession:], p.Session)
}

func getPrepareFields(h []byte) (consensus.PrepareHeader, error) {
	var p consensus.PrepareHeader
	var err error
	if p.Checksum, err = getWide(h[offChecksum:], "prepare checksum"); err != nil {
		return p, err
	}
	if p.Parent, err = getWide(h[offPrepParent:], "parent"); err != nil {
		return p, err
	}
	if p.ReqSum, err = getWide(h[offPrepReqSum:], "request_checksum"); err != nil {
		return p, err
	}
	p.Client = getU128(h[offPrepClient:])
	p.Op = le.Uint64(h[offPrepOp:])
	p.Commit = le.Uint64(h[offPrepCommit:])
	p.Timestamp = le.Uint64(h[offPrepTimestamp:])
	p.Request = le.Uint64(h[offPrepRequest:])
	p.Operation = consensus.Operation(h[offPrepOperation])
	p.UserID = le.Uint32(h[offPrepUserID:])
	p.View = le.Uint32(h[offPrepView:])
	p.Session = le.Uint64(h[offPrepSession:])
	return p, nil
}

// putSuffixEntry writes one DoViewChange / StartView suffix entry: the
// prepare's durable header (command Prepare, its own view at 52 and 228,
// cluster and group; checksum_body, size and replica zero).
func (c *Codec) putSuffixEntry(e []byte, p *consensus.PrepareHeader, group uint64) {
	clear(e)
	putPrepareFields(e, p, group)
	putU128(e[offCluster:], c.cluster)
	le.PutUint32(e[offView:], p.View)
	e[offCommand] = byte(CommandPrepare)
}

// putHeader writes the whole 256-byte header of f's frame and seals it.
func (c *Codec) putHeader(h []byte, f *fields, bodyBytes int, bodySum uint64) {
	clear(h)
	switch f.Kind {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare:
		putPrepareFields(h, &f.Entry.Header, f.Group)
		if f.Kind == consensus.MsgRepairPrepare {
			putU128(h[offPrepNonce:], f.Nonce)
		}
	case consensus.MsgPrepareOk:
		putWide(h[offOkParent:], f.AckedParent)
		putWide(h[offOkChecksum:], f.AckedChecksum)
		le.PutUint64(h[offOkOp:], f.AckedOp)
		le.PutUint64(h[offOkCommitMax:], f.CommitMax)
		le.PutUint64(h[offOkTimestamp:], f.AckedTimestamp)
		le.PutUint64(h[offOkRequest:], f.AckedRequest)
		h[offOkOperation] = byte(f.AckedOperation)
		le.PutUint64(h[offOkGroup:], f.Group)
	case consensus.MsgCommit:
		le.PutUint64(h[offCommitCounter:], f.HeartbeatCounter)
		le.PutUint64(h[offCommitCommitMin:], f.CommitMin)
		le.PutUint64(h[offCommitGroup:], f.Group)
	case consensus.MsgStartViewChange:
		le.PutUint64(h[offSvcGroup:], f.Group)
		putBool(h[offSvcAmnesiac:], f.Amnesiac)
		le.PutUint64(h[offSvcRepaired:], f.RepairProgress)
	case consensus.MsgDoViewChange:
		le.PutUint64(h[offVcHeadOp:], f.HeadOp)
		le.PutUint64(h[offVcCommit:], f.CommitOp)
		le.PutUint64(h[offVcGroup:], f.Group)
		le.PutUint32(h[offDvcLogView:], f.LogView)
		putBool(h[offDvcAmnesiac:], f.Amnesiac)
		putBool(h[offDvcLost:], f.StorageLost)
		le.PutUint64(h[offDvcCommitMax:], f.CommitMax)
		putU128(h[offDvcNack:], f.Nack)
		putU128(h[offDvcPresent:], f.Present)
	case consensus.MsgStartView:
		le.PutUint64(h[offVcHeadOp:], f.HeadOp)
		le.PutUint64(h[offVcCommit:], f.CommitOp)
		le.PutUint64(h[offVcGroup:], f.Group)
		putU128(h[offSvIncarnation:], f.Incarnation)
	case consensus.MsgRequestStartView:
		le.PutUint64(h[offRsvGroup:], f.Group)
		putBool(h[offRsvAmnesiac:], f.Amnesiac)
		h[offRsvFlags] = 0
		if f.ViewUnknown {
			h[offRsvFlags] |= rsvViewUnknown
		}
		if f.ProbeAnswer {
			h[offRsvFlags] |= rsvProbeAnswer
		}
		putU128(h[offRsvIncarnation:], f.Incarnation)
	case consensus.MsgRequestPrepares:
		putU128(h[offRpNonce:], f.Nonce)
		le.PutUint64(h[offRpFromOp:], f.FromOp)
		le.PutUint64(h[offRpToOp:], f.ToOp)
		le.PutUint64(h[offRpGroup:], f.Group)
	case consensus.MsgRepairDone, consensus.MsgRangeEvicted:
		putU128(h[offRdNonce:], f.Nonce)
		op := f.LastServedOp
		if f.Kind == consensus.MsgRangeEvicted {
			op = f.FirstRetainedOp
		}
		le.PutUint64(h[offRdOp:], op)
		le.PutUint64(h[offRdGroup:], f.Group)
	case consensus.MsgRequestStateTransfer:
		putU128(h[offRstNonce:], f.Nonce)
		le.PutUint64(h[offRstGroup:], f.Group)
	case consensus.MsgStateTransferTarget:
		putU128(h[offSttNonce:], f.Nonce)
		le.PutUint64(h[offSttSnapshotOp:], f.SnapshotOp)
		le.PutUint64(h[offSttGroup:], f.Group)
		putBool(h[offSttAvailable:], f.Available)
	case consensus.MsgRequestStateChunk:
		putU128(h[offRscNonce:], f.Nonce)
		le.PutUint64(h[offRscOffset:], f.ChunkOffset)
		le.PutUint64(h[offRscGroup:], f.Group)
		le.PutUint32(h[offRscLength:], f.ChunkLengthBytes)
		le.PutUint64(h[offRscSnapshotOp:], f.SnapshotOp)
	case consensus.MsgStateChunk:
		putU128(h[offScNonce:], f.Nonce)
		le.PutUint64(h[offScOffset:], f.ChunkOffset)
		le.PutUint64(h[offScGroup:], f.Group)
		putBool(h[offScAvailable:], f.Available)
		le.PutUint64(h[offScSnapshotOp:], f.SnapshotOp)
	}
	if bodySum != 0 {
		putWide(h[offChecksumBody:], bodySum)
	}
	putU128(h[offCluster:], c.cluster)
	le.PutUint32(h[offSize:], uint32(HeaderBytes+bodyBytes))
	le.PutUint32(h[offView:], f.View)
	h[offCommand] = byte(f.Kind)
	h[offReplica] = f.From
	if sealed(f.Kind) {
		putWide(h[offChecksum:], frameChecksum(h))
	}
}

// frameChecksum is the seal of a control frame: XXH3-64 of header bytes
// 16..256 (which cover checksum_body, so header and body are both pinned).
func frameChecksum(h []byte) uint64 { return xxh3.Hash(h[offChecksumBody:HeaderBytes]) }

// Decode parses and validates one whole frame (header and body, len(frame)
// = the declared size). The message's byte slices (prepare body, chunk data)
// alias frame. To is left zero: the bus sets it. Any error wraps
// ErrInvalidFrame.
//
// A frame decodes only if it is exactly what Encode would produce for the
// message it decodes to: every reserved or unused byte zero, booleans 0/1,
// widened u128 fields with a zero high half, checksums matching.
func (c *Codec) Decode(frame []byte) (consensus.Message, error) {
	if len(frame) < HeaderBytes {
		return consensus.Message{}, invalid("%d bytes: shorter than the %d-byte header", len(frame), HeaderBytes)
	}
	h := frame[:HeaderBytes]
	if size := FrameSize(h); int64(size) != int64(len(frame)) {
		return consensus.Message{}, invalid("size field %d does not match the %d-byte frame", size, len(frame))
	}
	kind := consensus.MessageKind(h[offCommand])
	if !knownKind(kind) {
		return consensus.Message{}, invalid("unknown command %d", h[offCommand])
	}
	if getU128(h[offCluster:]) != c.cluster {
		return consensus.Message{}, invalid("command %d: cluster id mismatch", kind)
	}
	body := frame[HeaderBytes:]
	if sealed(kind) {
		sum, err := getWide(h[offChecksum:], "checksum")
		if err != nil {
			return consensus.Message{}, err
		}
		if sum != frameChecksum(h) {
			return consensus.Message{}, invalid("command %d: header checksum mismatch", kind)
		}
	}
	bodySum := bodyChecksum(kind, body)
	if got, err := getWide(h[offChecksumBody:], "checksum_body"); err != nil {
		return consensus.Message{}, err
	} else if got != bodySum {
		return consensus.Message{}, invalid("command %d: body checksum mismatch", kind)
	}
	f := fields{Kind: kind, From: h[offReplica], View: le.Uint32(h[offView:])}
	if err := c.getFields(&f, h, body); err != nil {
		return consensus.Message{}, err
	}
	var canon [HeaderBytes]byte
	c.putHeader(canon[:], &f, len(body), bodySum)
	if i := canonicalDiff(canon[:], h); i >= 0 {
		return consensus.Message{}, invalid("command %d: header byte %d is not canonical (reserved or malformed field)", kind, i)
	}
	return f.toMessage(), nil
}

// canonicalDiff is the first header byte that differs from the canonical
// encoding, looking past the seal first (a wrong field also changes the
// canonical seal, and the field is the better report).
func canonicalDiff(canon, h []byte) int {
	if i := firstDiff(canon[offChecksumBody:], h[offChecksumBody:]); i >= 0 {
		return offChecksumBody + i
	}
	return firstDiff(canon[:offChecksumBody], h[:offChecksumBody])
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// getFields reads the command-specific fields and the body of a frame whose
// checksums already verified, and checks the per-kind rules.
func (c *Codec) getFields(f *fields, h, body []byte) error {
	headerOnly := func() error {
		if len(body) != 0 {
			return invalid("command %d: header-only frame carries %d body bytes", f.Kind, len(body))
		}
		return nil
	}
	switch f.Kind {
	case consensus.MsgPrepare, consensus.MsgRepairPrepare:
		p, err := getPrepareFields(h)
		if err != nil {
			return err
		}
		if p.Op == 0 {
			return invalid("command %d: op 0", f.Kind)
		}
		f.Group = le.Uint64(h[offPrepGroup:])
		if f.Kind == consensus.MsgRepairPrepare {
			f.Nonce = getU128(h[offPrepNonce:])
		}
		var data []byte
		if len(body) > 0 {
			data = body
		}
		f.Entry = &consensus.Prepare{Header: p, Body: data}
		return nil
	case consensus.MsgPrepareOk:
		var err error
		if f.AckedParent, err = getWide(h[offOkParent:], "parent"); err != nil {
			return err
		}
		if f.AckedChecksum, err = getWide(h[offOkChecksum:], "prepare_checksum"); err != nil {
			return err
		}
		f.AckedOp = le.Uint64(h[offOkOp:])
		f.CommitMax = le.Uint64(h[offOkCommitMax:])
		f.AckedTimestamp = le.Uint64(h[offOkTimestamp:])
		f.AckedRequest = le.Uint64(h[offOkRequest:])
		f.AckedOperation = consensus.Operation(h[offOkOperation])
		f.Group = le.Uint64(h[offOkGroup:])
		return headerOnly()
	case consensus.MsgCommit:
		f.HeartbeatCounter = le.Uint64(h[offCommitCounter:])
		f.CommitMin = le.Uint64(h[offCommitCommitMin:])
		f.Group = le.Uint64(h[offCommitGroup:])
		return headerOnly()
	case consensus.MsgStartViewChange:
		f.Group = le.Uint64(h[offSvcGroup:])
		var err error
		if f.Amnesiac, err = getBool(h[offSvcAmnesiac], "start_view_change amnesiac"); err != nil {
			return err
		}
		f.RepairProgress = le.Uint64(h[offSvcRepaired:])
		return headerOnly()
	case consensus.MsgDoViewChange, consensus.MsgStartView:
		f.HeadOp = le.Uint64(h[offVcHeadOp:])
		f.CommitOp = le.Uint64(h[offVcCommit:])
		f.Group = le.Uint64(h[offVcGroup:])
		if f.CommitOp > f.HeadOp {
			return invalid("command %d: commit %d exceeds op %d", f.Kind, f.CommitOp, f.HeadOp)
		}
		n, err := c.getSuffix(f, body)
		if err != nil {
			return err
		}
		if f.Kind == consensus.MsgStartView {
			f.Incarnation = getU128(h[offSvIncarnation:])
			return nil
		}
		f.LogView = le.Uint32(h[offDvcLogView:])
		if f.Amnesiac, err = getBool(h[offDvcAmnesiac], "do_view_change amnesiac"); err != nil {
			return err
		}
		if f.StorageLost, err = getBool(h[offDvcLost], "do_view_change storage_lost"); err != nil {
			return err
		}
		f.CommitMax = le.Uint64(h[offDvcCommitMax:])
		f.Nack = getU128(h[offDvcNack:])
		f.Present = getU128(h[offDvcPresent:])
		if f.LogView > f.View {
			return invalid("do_view_change: log_view %d exceeds view %d", f.LogView, f.View)
		}
		if beyond := bitsFrom(n); f.Nack.Lo&beyond.Lo != 0 || f.Nack.Hi&beyond.Hi != 0 ||
			f.Present.Lo&beyond.Lo != 0 || f.Present.Hi&beyond.Hi != 0 {
			return invalid("do_view_change: bitset bits set past the %d-entry suffix", n)
		}
		return nil
	case consensus.MsgRequestStartView:
		f.Group = le.Uint64(h[offRsvGroup:])
		var err error
		if f.Amnesiac, err = getBool(h[offRsvAmnesiac], "request_start_view amnesiac"); err != nil {
			return err
		}
		flags := h[offRsvFlags]
		if flags&^(rsvViewUnknown|rsvProbeAnswer) != 0 {
			return invalid("request_start_view flags = %#x: unknown bits", flags)
		}
		f.ViewUnknown, f.ProbeAnswer = flags&rsvViewUnknown != 0, flags&rsvProbeAnswer != 0
		f.Incarnation = getU128(h[offRsvIncarnation:])
		return headerOnly()
	case consensus.MsgRequestPrepares:
		f.Nonce = getU128(h[offRpNonce:])
		f.FromOp = le.Uint64(h[offRpFromOp:])
		f.ToOp = le.Uint64(h[offRpToOp:])
		f.Group = le.Uint64(h[offRpGroup:])
		if f.FromOp == 0 || f.FromOp > f.ToOp {
			return invalid("request_prepares: range %d..%d: need 1 <= from <= to", f.FromOp, f.ToOp)
		}
		return headerOnly()
	case consensus.MsgRepairDone, consensus.MsgRangeEvicted:
		f.Nonce = getU128(h[offRdNonce:])
		if f.Kind == consensus.MsgRepairDone {
			f.LastServedOp = le.Uint64(h[offRdOp:])
		} else {
			f.FirstRetainedOp = le.Uint64(h[offRdOp:])
		}
		f.Group = le.Uint64(h[offRdGroup:])
		return headerOnly()
	case consensus.MsgRequestStateTransfer:
		f.Nonce = getU128(h[offRstNonce:])
		f.Group = le.Uint64(h[offRstGroup:])
		return headerOnly()
	case consensus.MsgStateTransferTarget:
		f.Nonce = getU128(h[offSttNonce:])
		f.SnapshotOp = le.Uint64(h[offSttSnapshotOp:])
		f.Group = le.Uint64(h[offSttGroup:])
		var err error
		if f.Available, err = getBool(h[offSttAvailable], "state_transfer_target available"); err != nil {
			return err
		}
		if !f.Available {
			return headerOnly()
		}
		if len(body) != manifestBytes {
			return invalid("state_transfer_target: available offer with a %d-byte manifest (want %d)", len(body), manifestBytes)
		}
		f.SnapshotSizeBytes = le.Uint64(body[0:])
		f.SnapshotChecksum = le.Uint64(body[8:])
		f.AnchorTimestamp = le.Uint64(body[16:])
		f.AnchorChecksum = le.Uint64(body[24:])
		return nil
	case consensus.MsgRequestStateChunk:
		f.Nonce = getU128(h[offRscNonce:])
		f.ChunkOffset = le.Uint64(h[offRscOffset:])
		f.Group = le.Uint64(h[offRscGroup:])
		f.ChunkLengthBytes = le.Uint32(h[offRscLength:])
		f.SnapshotOp = le.Uint64(h[offRscSnapshotOp:])
		if f.ChunkLengthBytes == 0 {
			return invalid("request_state_chunk: length 0")
		}
		return headerOnly()
	case consensus.MsgStateChunk:
		f.Nonce = getU128(h[offScNonce:])
		f.ChunkOffset = le.Uint64(h[offScOffset:])
		f.Group = le.Uint64(h[offScGroup:])
		f.SnapshotOp = le.Uint64(h[offScSnapshotOp:])
		var err error
		if f.Available, err = getBool(h[offScAvailable], "state_chunk available"); err != nil {
			return err
		}
		if !f.Available && len(body) != 0 {
			return invalid("state_chunk: unavailable chunk carries %d bytes", len(body))
		}
		if len(body) > 0 {
			f.ChunkData = body
		}
		return nil
	}
	return invalid("unknown command %d", f.Kind)
}

// getSuffix reads a DoViewChange / StartView suffix: whole 256-byte
// prepare headers, at most SuffixHeadersMax, each canonical.
func (c *Codec) getSuffix(f *fields, body []byte) (int, error) {
	if len(body)%HeaderBytes != 0 {
		return 0, invalid("command %d: body of %d bytes is not a whole number of headers", f.Kind, len(body))
	}
	n := len(body) / HeaderBytes
	if n > SuffixHeadersMax {
		return 0, invalid("command %d: %d suffix headers exceeds %d", f.Kind, n, SuffixHeadersMax)
	}
	if n == 0 {
		return 0, nil
	}
	f.Suffix = make([]consensus.PrepareHeader, n)
	var canon [HeaderBytes]byte
	for i := range n {
		e := body[i*HeaderBytes : (i+1)*HeaderBytes]
		p, err := getPrepareFields(e)
		if err != nil {
			return 0, fmt.Errorf("suffix entry %d: %w", i, err)
		}
		f.Suffix[i] = p
		c.putSuffixEntry(canon[:], &p, f.Group)
		if j := canonicalDiff(canon[:], e); j >= 0 {
			return 0, invalid("command %d: suffix entry %d byte %d is not canonical", f.Kind, i, j)
		}
	}
	return n, nil
}

// bitsFrom is the 128-bit mask of bits n and above.
func bitsFrom(n int) consensus.Uint128 {
	switch {
	case n >= 128:
		return consensus.Uint128{}
	case n >= 64:
		return consensus.Uint128{Hi: ^uint64(0) << (n - 64)}
	default:
		return consensus.Uint128{Lo: ^uint64(0) << n, Hi: ^uint64(0)}
	}
}
