package wire

import (
	"encoding/binary"
	"fmt"
)

// Frame geometry (wire-protocol.md §1.1).
const (
	HeaderSize        = 256
	FrameSizeMax      = 64 << 20 // 64 MiB: server message_bus.max_message_size and Go vsr.MaxFrameSize
	offsetSize        = 48
	offsetCommand     = 60
	offsetReplica     = 61
	requestOffClient  = 128
	requestOffCheck   = 144
	requestOffTime    = 160
	requestOffRequest = 168
	requestOffOp      = 176
	requestOffSession = 184
	requestOffUserID  = 192
	requestOffCode    = 196
	replyOffChecksum  = 128
	replyOffContext   = 144
	replyOffClient    = 160
	replyOffOp        = 176
	replyOffCommit    = 184
	replyOffTime      = 192
	replyOffRequest   = 200
	replyOffOperation = 208
	replyOffStatus    = 216
)

// Command is the frame-type byte at header offset 60.
type Command uint8

// Frame types a client connection carries. The other values (0..29) are replica-to-replica only.
const (
	CommandRequest  Command = 5
	CommandReply    Command = 8
	CommandEviction Command = 13
)

func (c Command) String() string {
	switch c {
	case CommandRequest:
		return "Request"
	case CommandReply:
		return "Reply"
	case CommandEviction:
		return "Eviction"
	}
	return fmt.Sprintf("Command(%d)", uint8(c))
}

// Uint128 is a little-endian u128 (low 64 bits first on the wire): client ids and request checksums.
type Uint128 struct {
	Lo, Hi uint64
}

// IsZero reports whether both halves are zero.
func (u Uint128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

func (u Uint128) String() string { return fmt.Sprintf("%016x%016x", u.Hi, u.Lo) }

func getUint128(b []byte) Uint128 {
	return Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

func putUint128(b []byte, u Uint128) {
	binary.LittleEndian.PutUint64(b, u.Lo)
	binary.LittleEndian.PutUint64(b[8:], u.Hi)
}

// HeaderError names the header rule a frame broke.
type HeaderError struct {
	Field  string // header field, e.g. "command", "session"
	Reason string // rule that failed, with the offending value
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("invalid frame header: %s: %s", e.Field, e.Reason)
}

func headerErr(field, format string, args ...any) error {
	return &HeaderError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// FrameCommand returns the frame type of a header (offset 60); hdr must hold at least 61 bytes.
func FrameCommand(hdr []byte) Command { return Command(hdr[offsetCommand]) }

// FrameSize returns the size field (offset 48) of a header; hdr must hold at least 52 bytes.
func FrameSize(hdr []byte) uint32 { return binary.LittleEndian.Uint32(hdr[offsetSize:]) }

// RequestHeader holds the fields of a client request header (§1.2) that either side reads.
type RequestHeader struct {
	Size            uint32 // header + body bytes
	Client          Uint128
	RequestChecksum Uint128 // XXH3-64 of the body zero-extended, or zero (unchecked)
	Timestamp       uint64  // informational; echoed in the reply
	Request         uint64
	Operation       Operation
	Session         uint64
	UserID          uint32 // ignored by the server (it stamps its own)
	// Code is the command code from reserved bytes 196..199; it is only carried (and only decoded)
	// when Operation is NonReplicated, and zero otherwise.
	Code CommandCode
}

// BodySize returns Size minus the header, or 0 when Size is below the header size.
func (h RequestHeader) BodySize() int {
	if h.Size < HeaderSize {
		return 0
	}
	return int(h.Size) - HeaderSize
}

// DecodeRequestHeader decodes and validates a request header against the rules of §1.2: command must be
// Request, client non-zero, operation declared, client-sendable and non-zero, Register carries session 0
// and request 0, every other operation except NonReplicated carries session > 0 and request > 0, and the
// size lies in 256..64 MiB. A violation returns *HeaderError naming the rule.
func DecodeRequestHeader(b []byte) (RequestHeader, error) {
	if len(b) < HeaderSize {
		return RequestHeader{}, headerErr("length", "%d bytes, need %d", len(b), HeaderSize)
	}
	h := RequestHeader{
		Size:            binary.LittleEndian.Uint32(b[offsetSize:]),
		Client:          getUint128(b[requestOffClient:]),
		RequestChecksum: getUint128(b[requestOffCheck:]),
		Timestamp:       binary.LittleEndian.Uint64(b[requestOffTime:]),
		Request:         binary.LittleEndian.Uint64(b[requestOffRequest:]),
		Operation:       Operation(b[requestOffOp]),
		Session:         binary.LittleEndian.Uint64(b[requestOffSession:]),
		UserID:          binary.LittleEndian.Uint32(b[requestOffUserID:]),
	}
	if cmd := Command(b[offsetCommand]); cmd != CommandRequest {
		return h, headerErr("command", "byte %d is not Request (5)", uint8(cmd))
	}
	if err := checkFrameSize(h.Size, FrameSizeMax); err != nil {
		return h, err
	}
	if h.Client.IsZero() {
		return h, headerErr("client", "client id must be non-zero")
	}
	if !h.Operation.ClientSendable() {
		return h, headerErr("operation", "%s is not a client operation", h.Operation)
	}
	switch h.Operation {
	case OpRegister:
		if h.Session != 0 {
			return h, headerErr("session", "Register must carry session 0, got %d", h.Session)
		}
		if h.Request != 0 {
			return h, headerErr("request", "Register must carry request 0, got %d", h.Request)
		}
	case OpNonReplicated:
		h.Code = CommandCode(binary.LittleEndian.Uint32(b[requestOffCode:]))
	default:
		if h.Session == 0 {
			return h, headerErr("session", "%s requires a session > 0", h.Operation)
		}
		if h.Request == 0 {
			return h, headerErr("request", "%s requires a request id > 0", h.Operation)
		}
	}
	return h, nil
}

// PutRequestHeader writes h into dst[0:256] (all other bytes zero). The command code is written to
// reserved bytes 196..199 only for NonReplicated, as clients do.
func PutRequestHeader(dst []byte, h RequestHeader) {
	hdr := dst[:HeaderSize]
	clear(hdr)
	binary.LittleEndian.PutUint32(hdr[offsetSize:], h.Size)
	hdr[offsetCommand] = byte(CommandRequest)
	putUint128(hdr[requestOffClient:], h.Client)
	putUint128(hdr[requestOffCheck:], h.RequestChecksum)
	binary.LittleEndian.PutUint64(hdr[requestOffTime:], h.Timestamp)
	binary.LittleEndian.PutUint64(hdr[requestOffRequest:], h.Request)
	hdr[requestOffOp] = byte(h.Operation)
	binary.LittleEndian.PutUint64(hdr[requestOffSession:], h.Session)
	binary.LittleEndian.PutUint32(hdr[requestOffUserID:], h.UserID)
	if h.Operation == OpNonReplicated {
		binary.LittleEndian.PutUint32(hdr[requestOffCode:], uint32(h.Code))
	}
}

// EncodeRequest appends a complete request frame (header with Size set from body, then body) to dst.
func EncodeRequest(dst []byte, h RequestHeader, body []byte) []byte {
	h.Size = uint32(HeaderSize + len(body))
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	PutRequestHeader(dst[start:], h)
	return append(dst, body...)
}

// ReplyHeader holds the fields of a reply header (§1.3).
type ReplyHeader struct {
	Size            uint32
	RequestChecksum Uint128 // echo of the request's
	Context         Uint128
	Client          Uint128
	Op              uint64 // log op / session / 0; ignored by SDKs
	Commit          uint64
	Timestamp       uint64 // echo of the request's
	Request         uint64 // echo of the request id; the Go SDK drops the connection on a mismatch
	Operation       Operation
	Status          ErrorCode // 0 = OK; otherwise the body must be empty
}

// DecodeReplyHeader decodes a reply header: command must be Reply, size in 256..64 MiB, the operation a
// declared value, and a non-zero status must come with an empty body.
func DecodeReplyHeader(b []byte) (ReplyHeader, error) {
	if len(b) < HeaderSize {
		return ReplyHeader{}, headerErr("length", "%d bytes, need %d", len(b), HeaderSize)
	}
	h := ReplyHeader{
		Size:            binary.LittleEndian.Uint32(b[offsetSize:]),
		RequestChecksum: getUint128(b[replyOffChecksum:]),
		Context:         getUint128(b[replyOffContext:]),
		Client:          getUint128(b[replyOffClient:]),
		Op:              binary.LittleEndian.Uint64(b[replyOffOp:]),
		Commit:          binary.LittleEndian.Uint64(b[replyOffCommit:]),
		Timestamp:       binary.LittleEndian.Uint64(b[replyOffTime:]),
		Request:         binary.LittleEndian.Uint64(b[replyOffRequest:]),
		Operation:       Operation(b[replyOffOperation]),
		Status:          ErrorCode(binary.LittleEndian.Uint32(b[replyOffStatus:])),
	}
	if cmd := Command(b[offsetCommand]); cmd != CommandReply {
		return h, headerErr("command", "byte %d is not Reply (8)", uint8(cmd))
	}
	if err := checkFrameSize(h.Size, FrameSizeMax); err != nil {
		return h, err
	}
	if !h.Operation.Declared() || h.Operation == OpReserved {
		return h, headerErr("operation", "%s is not a declared reply operation", h.Operation)
	}
	if h.Status != OK && h.Size != HeaderSize {
		return h, headerErr("status", "status %s with a %d-byte body (must be empty)", h.Status, h.Size-HeaderSize)
	}
	return h, nil
}

// PutReplyHeader writes h into dst[0:256] (all other bytes zero).
func PutReplyHeader(dst []byte, h ReplyHeader) {
	hdr := dst[:HeaderSize]
	clear(hdr)
	binary.LittleEndian.PutUint32(hdr[offsetSize:], h.Size)
	hdr[offsetCommand] = byte(CommandReply)
	putUint128(hdr[replyOffChecksum:], h.RequestChecksum)
	putUint128(hdr[replyOffContext:], h.Context)
	putUint128(hdr[replyOffClient:], h.Client)
	binary.LittleEndian.PutUint64(hdr[replyOffOp:], h.Op)
	binary.LittleEndian.PutUint64(hdr[replyOffCommit:], h.Commit)
	binary.LittleEndian.PutUint64(hdr[replyOffTime:], h.Timestamp)
	binary.LittleEndian.PutUint64(hdr[replyOffRequest:], h.Request)
	hdr[replyOffOperation] = byte(h.Operation)
	binary.LittleEndian.PutUint32(hdr[replyOffStatus:], uint32(h.Status))
}

// ReplyTo builds the reply header for req: request checksum, client, timestamp and request id echoed,
// operation = req.Operation.ReplyOperation() (DeleteSegments → TruncatePartition).
func ReplyTo(req RequestHeader, status ErrorCode) ReplyHeader {
	return ReplyHeader{
		RequestChecksum: req.RequestChecksum,
		Client:          req.Client,
		Timestamp:       req.Timestamp,
		Request:         req.Request,
		Operation:       req.Operation.ReplyOperation(),
		Status:          status,
	}
}

// EncodeReply appends a complete reply frame for req to dst. With a non-zero status the body is dropped
// (a status reply must be empty). The body is written as given: callers of result-framed operations pass
// a body that already starts with its result section (see AppendResultOK / AppendResultRejection).
func EncodeReply(dst []byte, req RequestHeader, status ErrorCode, body []byte) []byte {
	return AppendReplyFrame(dst, ReplyTo(req, status), body)
}

// AppendReplyFrame appends header h (Size computed) and body to dst; a non-zero status drops the body.
func AppendReplyFrame(dst []byte, h ReplyHeader, body []byte) []byte {
	if h.Status != OK {
		body = nil
	}
	h.Size = uint32(HeaderSize + len(body))
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	PutReplyHeader(dst[start:], h)
	return append(dst, body...)
}
