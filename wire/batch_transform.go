package wire

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// SectionTransform rewrites one message section (a payload, or a non-empty user-headers block),
// appending the result to dst. It is how at-rest encryption rewrites a batch: the wire package knows the
// layout, the transform knows the cipher.
type SectionTransform func(dst, section []byte) ([]byte, error)

// AppendTransformedBatch appends to dst a copy of the batch record at the front of record (which may
// continue past it) with every payload and every non-empty user-headers block replaced by
// transform(section). Each frame keeps its id, offset delta and timestamp delta; its lengths and
// checksum are restamped over the new bytes, and the batch header keeps partition, offsets and
// timestamps with batch_length and batch_checksum restamped, so the result verifies exactly as the
// input did. Framing errors are *BatchError; a transform error is returned as is.
func AppendTransformedBatch(dst, record []byte, transform SectionTransform) ([]byte, error) {
	h, err := DecodeBatchHeader(record)
	if err != nil {
		return dst, err
	}
	if h.BatchLength > uint64(len(record)) {
		return dst, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d overruns the %d bytes present", h.BatchLength, len(record))
	}
	record = record[:h.BatchLength]
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	it := NewBatchIter(record)
	for it.Next() {
		m := it.Message()
		frameAt := len(dst)
		dst = append(dst, make([]byte, BatchMessageHeaderSize)...)
		if dst, err = transform(dst, m.Payload); err != nil {
			return dst[:start], err
		}
		payloadLen := len(dst) - frameAt - BatchMessageHeaderSize
		if len(m.UserHeaders) > 0 {
			if dst, err = transform(dst, m.UserHeaders); err != nil {
				return dst[:start], err
			}
		}
		headersLen := len(dst) - frameAt - BatchMessageHeaderSize - payloadLen
		if uint64(payloadLen) > uint64(^uint32(0)) || uint64(headersLen) > uint64(^uint32(0)) {
			return dst[:start], batchErrorf(ErrInvalidMessagePayloadLength,
				"frame %d: rewritten section does not fit a u32 length", it.Index()-1)
		}
		mh := m.BatchMessageHeader
		mh.PayloadLength, mh.UserHeadersLength = uint32(payloadLen), uint32(headersLen)
		mh.EncodeInto(dst[frameAt:])
		binary.LittleEndian.PutUint64(dst[frameAt:], xxh3.Hash(dst[frameAt+batchMessageChecksumCovered:]))
	}
	if err := it.Err(); err != nil {
		return dst[:start], err
	}
	if it.Index() != h.MessageCount {
		return dst[:start], batchErrorf(ErrInvalidMessagesCount,
			"message_count is %d but the frames hold %d messages", h.MessageCount, it.Index())
	}
	out := h
	out.BatchLength = uint64(len(dst) - start)
	out.EncodeInto(dst[start:])
	sum, err := ComputeBatchChecksum(out, dst[start:])
	if err != nil {
		return dst[:start], err
	}
	binary.LittleEndian.PutUint64(dst[start+batchChecksumOffset:], sum)
	return dst, nil
}
