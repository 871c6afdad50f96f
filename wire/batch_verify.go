package wire

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// VerifyBatch proves that b is exactly one well-formed, intact batch record, as the server requires at
// SendMessages admission:
//
//   - header complete, batch_length == len(b) and ≤ 64 MiB, reserved bytes zero (4025, 4101);
//   - message_count ≥ 1 and frames tile batch_length with exactly message_count frames (4009, 4025);
//   - every frame: reserved zero (4101), offset_delta == its index (4100), payload 1..64 000 000 bytes
//     (4024, 4022), user headers ≤ 100 000 bytes (4017), XXH3-64 of frame[8..end] == stored (4027);
//   - batch_checksum == XXH3-64(44 header-field bytes ‖ frame checksums) (4039).
//
// The returned error is a *BatchError whose Code is the wire code to answer with.
func VerifyBatch(b []byte) (BatchHeader, error) {
	h, err := DecodeBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.BatchLength != uint64(len(b)) {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d does not equal the %d batch bytes present", h.BatchLength, len(b))
	}
	return h, verifyBatchBody(h, b)
}

// VerifyBatchRecord is VerifyBatch for a record at the front of b, where b may continue past it (a
// segment file or a poll reply walked record by record). The record is b[:h.BatchLength].
func VerifyBatchRecord(b []byte) (BatchHeader, error) {
	h, err := DecodeBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.BatchLength > uint64(len(b)) {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d overruns the %d bytes present", h.BatchLength, len(b))
	}
	return h, verifyBatchBody(h, b[:h.BatchLength])
}

func verifyBatchBody(h BatchHeader, record []byte) error {
	if h.BatchLength > BatchFrameBytesMax {
		return batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d exceeds the %d-byte frame limit", h.BatchLength, BatchFrameBytesMax)
	}
	if h.MessageCount == 0 {
		return batchErrorf(ErrInvalidMessagesCount, "message_count is 0, a batch carries at least one message")
	}
	var sealer batchSealer
	sealer.start(h)
	it := NewBatchIter(record)
	for it.Next() {
		m := it.Message()
		index := it.Index() - 1
		if index >= h.MessageCount {
			return batchErrorf(ErrInvalidMessagesCount,
				"more frames than message_count %d (frame %d at byte %d)", h.MessageCount, index, m.Start)
		}
		if err := checkBatchMessage(m, index); err != nil {
			return err
		}
		sealer.add(m.Frame)
	}
	if err := it.Err(); err != nil {
		return err
	}
	if it.Index() != h.MessageCount {
		return batchErrorf(ErrInvalidMessagesCount,
			"message_count is %d but the frames hold %d messages", h.MessageCount, it.Index())
	}
	if sum := sealer.sum(); sum != h.BatchChecksum {
		return batchErrorf(ErrInvalidBatchChecksum,
			"batch at base offset %d: stored checksum %#016x, computed %#016x", h.BaseOffset, h.BatchChecksum, sum)
	}
	return nil
}

func checkBatchMessage(m *BatchMessage, index uint32) error {
	switch {
	case m.OffsetDelta != index:
		return batchErrorf(ErrInvalidOffset, "frame %d has offset_delta %d, must equal its index", index, m.OffsetDelta)
	case m.PayloadLength == 0:
		return batchErrorf(ErrEmptyMessagePayload, "frame %d has an empty payload", index)
	case m.PayloadLength > BatchPayloadBytesMax:
		return batchErrorf(ErrTooBigMessagePayload, "frame %d payload is %d bytes, the limit is %d",
			index, m.PayloadLength, BatchPayloadBytesMax)
	case m.UserHeadersLength > BatchUserHeadersBytesMax:
		return batchErrorf(ErrTooBigUserHeaders, "frame %d user headers are %d bytes, the limit is %d",
			index, m.UserHeadersLength, BatchUserHeadersBytesMax)
	}
	if sum := xxh3.Hash(m.Frame[batchMessageChecksumCovered:]); sum != m.Checksum {
		return batchErrorf(ErrInvalidMessageChecksum, "frame %d: stored checksum %#016x, computed %#016x",
			index, m.Checksum, sum)
	}
	return nil
}

// batchSealer computes a batch checksum: XXH3-64 over the 44 header-field bytes followed by every
// frame's stored checksum. Input is staged in a fixed buffer so the streaming hasher sees large writes
// (one Write per 8-byte checksum costs more than the hashing itself).
type batchSealer struct {
	hasher xxh3.Hasher
	buf    [1024]byte
	n      int
}

func (s *batchSealer) start(h BatchHeader) {
	binary.LittleEndian.PutUint64(s.buf[0:], h.PartitionID)
	binary.LittleEndian.PutUint64(s.buf[8:], h.BaseOffset)
	binary.LittleEndian.PutUint64(s.buf[16:], h.BaseTimestamp)
	binary.LittleEndian.PutUint64(s.buf[24:], h.OriginTimestamp)
	binary.LittleEndian.PutUint64(s.buf[32:], h.BatchLength)
	binary.LittleEndian.PutUint32(s.buf[40:], h.MessageCount)
	s.n = batchChecksumHeaderBytes
	s.hasher.Reset()
}

// add stages the stored checksum of frame (its first 8 bytes).
func (s *batchSealer) add(frame []byte) {
	if s.n+batchFrameChecksumBytes > len(s.buf) {
		s.hasher.Write(s.buf[:s.n])
		s.n = 0
	}
	s.n += copy(s.buf[s.n:], frame[:batchFrameChecksumBytes])
}

func (s *batchSealer) sum() uint64 {
	s.hasher.Write(s.buf[:s.n])
	s.n = 0
	return s.hasher.Sum64()
}

// ComputeBatchChecksum returns the batch checksum of header h over the frames of record (the record's
// own header bytes are ignored: h supplies the fields, so a caller can hash a header it is about to
// write). It checks framing but not the per-message checksums.
func ComputeBatchChecksum(h BatchHeader, record []byte) (uint64, error) {
	var sealer batchSealer
	sealer.start(h)
	it := NewBatchIter(record)
	for it.Next() {
		sealer.add(it.Message().Frame)
	}
	if err := it.Err(); err != nil {
		return 0, err
	}
	if it.Index() != h.MessageCount {
		return 0, batchErrorf(ErrInvalidMessagesCount,
			"message_count is %d but the frames hold %d messages", h.MessageCount, it.Index())
	}
	return sealer.sum(), nil
}

// CheckBatchSeal is the cheap integrity check for a batch this process already verified once (commit-
// time append): framing and the batch checksum over the stored frame checksums, without re-hashing
// message bodies. b must be exactly one record.
func CheckBatchSeal(b []byte) (BatchHeader, error) {
	h, err := DecodeBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.BatchLength != uint64(len(b)) {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d does not equal the %d batch bytes present", h.BatchLength, len(b))
	}
	if h.MessageCount == 0 {
		return BatchHeader{}, batchErrorf(ErrInvalidMessagesCount, "message_count is 0")
	}
	sum, err := ComputeBatchChecksum(h, b)
	if err != nil {
		return BatchHeader{}, err
	}
	if sum != h.BatchChecksum {
		return BatchHeader{}, batchErrorf(ErrInvalidBatchChecksum,
			"batch at base offset %d: stored checksum %#016x, computed %#016x", h.BaseOffset, h.BatchChecksum, sum)
	}
	return h, nil
}
