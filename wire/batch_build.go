package wire

import (
	"encoding/binary"
	"math"

	"github.com/zeebo/xxh3"
)

// BatchMessageInput is one message a producer puts into a batch.
type BatchMessageInput struct {
	// ID is written as-is (the Go SDK writes UUID bytes, Rust a u128 LE). The server never mints ids;
	// callers that want one for a zero ID must choose it before encoding, because the frame checksum
	// covers it.
	ID              [16]byte
	OriginTimestamp uint64 // µs since the epoch
	Payload         []byte
	UserHeaders     []byte // TLV block (wire-protocol.md §4.1), not validated here
}

// AppendBatch encodes messages as one producer batch record appended to dst: partition_id, base_offset
// and base_timestamp are zero, origin_timestamp is the earliest message timestamp, offset deltas are
// 0..n-1, and every frame checksum and the batch checksum are sealed.
func AppendBatch(dst []byte, messages []BatchMessageInput) ([]byte, error) {
	if len(messages) == 0 {
		return dst, batchErrorf(ErrInvalidMessagesCount, "cannot encode an empty batch")
	}
	origin := messages[0].OriginTimestamp
	total := uint64(BatchHeaderSize)
	for i := range messages {
		m := &messages[i]
		origin = min(origin, m.OriginTimestamp)
		switch {
		case len(m.Payload) == 0:
			return dst, batchErrorf(ErrEmptyMessagePayload, "message %d has an empty payload", i)
		case len(m.Payload) > BatchPayloadBytesMax:
			return dst, batchErrorf(ErrTooBigMessagePayload, "message %d payload is %d bytes, the limit is %d",
				i, len(m.Payload), BatchPayloadBytesMax)
		case len(m.UserHeaders) > BatchUserHeadersBytesMax:
			return dst, batchErrorf(ErrTooBigUserHeaders, "message %d user headers are %d bytes, the limit is %d",
				i, len(m.UserHeaders), BatchUserHeadersBytesMax)
		}
		total += BatchMessageHeaderSize + uint64(len(m.Payload)) + uint64(len(m.UserHeaders))
	}
	if total > BatchFrameBytesMax {
		return dst, batchErrorf(ErrInvalidMessagePayloadLength, "batch of %d bytes exceeds the %d-byte frame limit",
			total, BatchFrameBytesMax)
	}
	headerAt := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	for i := range messages {
		m := &messages[i]
		delta := m.OriginTimestamp - origin
		if delta > math.MaxUint32 {
			return dst[:headerAt], batchErrorf(ErrInvalidMessageTimestampDelta,
				"message %d origin timestamp %d is %d µs after the batch's earliest %d; the limit is %d",
				i, m.OriginTimestamp, delta, origin, uint64(math.MaxUint32))
		}
		frameAt := len(dst)
		var header [BatchMessageHeaderSize]byte
		BatchMessageHeader{
			ID:                m.ID,
			OffsetDelta:       uint32(i),
			TimestampDelta:    uint32(delta),
			UserHeadersLength: uint32(len(m.UserHeaders)),
			PayloadLength:     uint32(len(m.Payload)),
		}.EncodeInto(header[:])
		dst = append(dst, header[:]...)
		dst = append(dst, m.Payload...)
		dst = append(dst, m.UserHeaders...)
		binary.LittleEndian.PutUint64(dst[frameAt:], xxh3.Hash(dst[frameAt+batchMessageChecksumCovered:]))
	}
	h := BatchHeader{
		OriginTimestamp: origin,
		BatchLength:     total,
		MessageCount:    uint32(len(messages)),
	}
	h.EncodeInto(dst[headerAt:])
	sum, err := ComputeBatchChecksum(h, dst[headerAt:])
	if err != nil {
		return dst[:headerAt], err
	}
	binary.LittleEndian.PutUint64(dst[headerAt+batchChecksumOffset:], sum)
	return dst, nil
}
