package wire

import (
	"encoding/binary"
	"fmt"
)

// The 0.11 message batch (wire-protocol.md §4.4): one layout shared by the SendMessages body, the
// replicated prepare, the segment record on disk and every record of a poll reply.
//
//	[batch header: 256 bytes][frame 0][frame 1]...
//	frame = [message header: 48 bytes][payload][user headers]
const (
	// BatchHeaderSize is the fixed size of a batch header; bytes past BatchReservedOffset must be zero.
	BatchHeaderSize = 256
	// BatchMessageHeaderSize is the fixed size of the header in front of every message frame.
	BatchMessageHeaderSize = 48

	batchPartitionIDOffset     = 0
	batchBaseOffsetOffset      = 8
	batchBaseTimestampOffset   = 16
	batchOriginTimestampOffset = 24
	batchLengthOffset          = 32
	batchChecksumOffset        = 40
	batchMessageCountOffset    = 48
	BatchReservedOffset        = 52
	// BatchLengthOffset is where batch_length sits in the batch header (u64).
	BatchLengthOffset           = batchLengthOffset
	batchChecksumHeaderBytes    = 44 // the six header fields hashed ahead of the frame checksums
	batchFrameChecksumBytes     = 8
	batchMessageIDOffset        = 8
	batchMessageOffsetDeltaOff  = 24
	batchMessageTSDeltaOff      = 28
	batchMessageHeadersLenOff   = 32
	batchMessagePayloadLenOff   = 36
	batchMessageReservedOffset  = 40
	batchMessageChecksumCovered = 8 // the frame checksum covers frame[8..end]
)

// Size limits enforced at admission. The payload limit follows the Rust server and SDK
// (MAX_PAYLOAD_SIZE = 64 000 000 bytes); the Go SDK refuses above 10 MB on its side, so anything it
// sends is accepted. The user-header limit is upstream's MAX_USER_HEADERS_SIZE. A whole batch can never
// exceed a frame (64 MiB), which FrameSizeMax-aware callers check before decoding.
const (
	BatchPayloadBytesMax     = 64_000_000
	BatchUserHeadersBytesMax = 100_000
	BatchFrameBytesMax       = 64 << 20
)

// BatchHeader is the decoded 256-byte batch header. A producer leaves PartitionID, BaseOffset and
// BaseTimestamp zero; the server stamps them (StampBatch).
type BatchHeader struct {
	PartitionID     uint64
	BaseOffset      uint64
	BaseTimestamp   uint64 // µs since the epoch, server append time
	OriginTimestamp uint64 // µs since the epoch, the earliest producer timestamp of the batch
	BatchLength     uint64 // BatchHeaderSize + total frame bytes
	BatchChecksum   uint64
	MessageCount    uint32
}

// LastOffset is the absolute offset of the batch's last message, assuming offset deltas 0..n-1 (true for
// every stored batch; a poll slice keeps its base and starts at a later delta).
func (h BatchHeader) LastOffset() uint64 {
	if h.MessageCount == 0 {
		return h.BaseOffset
	}
	return h.BaseOffset + uint64(h.MessageCount) - 1
}

// BatchError is a typed batch rejection: Code is the wire error code the server answers with, Detail
// names the rule and where it failed. errors.Is(err, wire.ErrInvalidBatchChecksum) matches through
// Unwrap.
type BatchError struct {
	Code   ErrorCode
	Detail string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("message batch: %s: %s", e.Code.String(), e.Detail)
}

// Unwrap exposes the wire error code.
func (e *BatchError) Unwrap() error { return e.Code }

func batchErrorf(code ErrorCode, format string, args ...any) error {
	return &BatchError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// DecodeBatchHeader reads the batch header at the front of b. It checks that the header is complete,
// that batch_length covers the header and that the reserved bytes are zero; it does not look at frames.
func DecodeBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch header needs %d bytes, have %d", BatchHeaderSize, len(b))
	}
	h := BatchHeader{
		PartitionID:     binary.LittleEndian.Uint64(b[batchPartitionIDOffset:]),
		BaseOffset:      binary.LittleEndian.Uint64(b[batchBaseOffsetOffset:]),
		BaseTimestamp:   binary.LittleEndian.Uint64(b[batchBaseTimestampOffset:]),
		OriginTimestamp: binary.LittleEndian.Uint64(b[batchOriginTimestampOffset:]),
		BatchLength:     binary.LittleEndian.Uint64(b[batchLengthOffset:]),
		BatchChecksum:   binary.LittleEndian.Uint64(b[batchChecksumOffset:]),
		MessageCount:    binary.LittleEndian.Uint32(b[batchMessageCountOffset:]),
	}
	if h.BatchLength < BatchHeaderSize {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d does not cover the %d-byte batch header", h.BatchLength, BatchHeaderSize)
	}
	if i := firstNonZero(b[BatchReservedOffset:BatchHeaderSize]); i >= 0 {
		return BatchHeader{}, batchErrorf(ErrInvalidReservedField,
			"batch header reserved byte at offset %d is 0x%02x, must be zero", BatchReservedOffset+i,
			b[BatchReservedOffset+i])
	}
	return h, nil
}

// EncodeInto writes h into the first BatchHeaderSize bytes of b and zeroes the reserved region.
// b must be at least BatchHeaderSize long.
func (h BatchHeader) EncodeInto(b []byte) {
	clear(b[:BatchHeaderSize])
	binary.LittleEndian.PutUint64(b[batchPartitionIDOffset:], h.PartitionID)
	binary.LittleEndian.PutUint64(b[batchBaseOffsetOffset:], h.BaseOffset)
	binary.LittleEndian.PutUint64(b[batchBaseTimestampOffset:], h.BaseTimestamp)
	binary.LittleEndian.PutUint64(b[batchOriginTimestampOffset:], h.OriginTimestamp)
	binary.LittleEndian.PutUint64(b[batchLengthOffset:], h.BatchLength)
	binary.LittleEndian.PutUint64(b[batchChecksumOffset:], h.BatchChecksum)
	binary.LittleEndian.PutUint32(b[batchMessageCountOffset:], h.MessageCount)
}

// BatchMessageHeader is the decoded 48-byte header of one message frame.
type BatchMessageHeader struct {
	Checksum          uint64 // XXH3-64 over frame[8..end of user headers]
	ID                [16]byte
	OffsetDelta       uint32
	TimestampDelta    uint32 // µs after the batch origin_timestamp
	UserHeadersLength uint32
	PayloadLength     uint32
}

// FrameSize is the whole frame length: header, payload and user headers.
func (m BatchMessageHeader) FrameSize() uint64 {
	return BatchMessageHeaderSize + uint64(m.PayloadLength) + uint64(m.UserHeadersLength)
}

// DecodeBatchMessageHeader reads a frame header at the front of b and rejects non-zero reserved bytes.
func DecodeBatchMessageHeader(b []byte) (BatchMessageHeader, error) {
	if len(b) < BatchMessageHeaderSize {
		return BatchMessageHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"message header needs %d bytes, have %d", BatchMessageHeaderSize, len(b))
	}
	if binary.LittleEndian.Uint64(b[batchMessageReservedOffset:]) != 0 {
		return BatchMessageHeader{}, batchErrorf(ErrInvalidReservedField,
			"message header reserved bytes 40..48 must be zero")
	}
	var m BatchMessageHeader
	m.Checksum = binary.LittleEndian.Uint64(b[0:])
	copy(m.ID[:], b[batchMessageIDOffset:batchMessageIDOffset+16])
	m.OffsetDelta = binary.LittleEndian.Uint32(b[batchMessageOffsetDeltaOff:])
	m.TimestampDelta = binary.LittleEndian.Uint32(b[batchMessageTSDeltaOff:])
	m.UserHeadersLength = binary.LittleEndian.Uint32(b[batchMessageHeadersLenOff:])
	m.PayloadLength = binary.LittleEndian.Uint32(b[batchMessagePayloadLenOff:])
	return m, nil
}

// EncodeInto writes m into the first BatchMessageHeaderSize bytes of b (reserved bytes zeroed).
func (m BatchMessageHeader) EncodeInto(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], m.Checksum)
	copy(b[batchMessageIDOffset:batchMessageIDOffset+16], m.ID[:])
	binary.LittleEndian.PutUint32(b[batchMessageOffsetDeltaOff:], m.OffsetDelta)
	binary.LittleEndian.PutUint32(b[batchMessageTSDeltaOff:], m.TimestampDelta)
	binary.LittleEndian.PutUint32(b[batchMessageHeadersLenOff:], m.UserHeadersLength)
	binary.LittleEndian.PutUint32(b[batchMessagePayloadLenOff:], m.PayloadLength)
	binary.LittleEndian.PutUint64(b[batchMessageReservedOffset:], 0)
}

func firstNonZero(b []byte) int {
	for i, v := range b {
		if v != 0 {
			return i
		}
	}
	return -1
}
