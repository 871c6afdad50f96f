package wire

// BatchMessage is one message frame viewed in place: every slice aliases the batch bytes.
type BatchMessage struct {
	BatchMessageHeader
	Payload     []byte
	UserHeaders []byte
	Frame       []byte // the whole frame: 48-byte header, payload, user headers
	Start       int    // byte position of the frame inside the batch record (header included)
}

// BatchIter walks the frames of one batch record without allocating. It checks framing only (header
// present, reserved zero, lengths inside the record); checksums are VerifyBatch's job.
//
//	it := wire.NewBatchIter(record)
//	for it.Next() { m := it.Message(); ... }
//	if err := it.Err(); err != nil { ... }
type BatchIter struct {
	record []byte // bounded by the header's batch_length when it fits
	pos    int
	index  uint32
	err    error
	msg    BatchMessage
}

// NewBatchIter starts a walk over record, a batch record that begins with its 256-byte header. Frames
// are read up to batch_length (or len(record) when batch_length claims more than is present: the walk
// then reports the overrun).
func NewBatchIter(record []byte) BatchIter {
	h, err := DecodeBatchHeader(record)
	if err != nil {
		return BatchIter{err: err}
	}
	end := len(record)
	if h.BatchLength < uint64(end) {
		end = int(h.BatchLength)
	}
	return BatchIter{record: record[:end], pos: BatchHeaderSize}
}

// Next advances to the next frame; false at the end of the record or on a framing error (see Err).
func (it *BatchIter) Next() bool {
	if it.err != nil || it.pos >= len(it.record) {
		return false
	}
	rest := it.record[it.pos:]
	m, err := DecodeBatchMessageHeader(rest)
	if err != nil {
		it.err = batchErrorAt(err, it.index, it.pos)
		return false
	}
	size := m.FrameSize()
	if size > uint64(len(rest)) {
		it.err = batchErrorf(ErrInvalidMessagePayloadLength,
			"frame %d at byte %d claims %d bytes (payload %d, user headers %d) but only %d remain",
			it.index, it.pos, size, m.PayloadLength, m.UserHeadersLength, len(rest))
		return false
	}
	payloadEnd := BatchMessageHeaderSize + int(m.PayloadLength)
	it.msg = BatchMessage{
		BatchMessageHeader: m,
		Payload:            rest[BatchMessageHeaderSize:payloadEnd:payloadEnd],
		UserHeaders:        rest[payloadEnd:size:size],
		Frame:              rest[:size:size],
		Start:              it.pos,
	}
	it.pos += int(size)
	it.index++
	return true
}

// Message returns the current frame; valid until the next call to Next.
func (it *BatchIter) Message() *BatchMessage { return &it.msg }

// Index is the number of frames returned so far.
func (it *BatchIter) Index() uint32 { return it.index }

// Err is the framing error that stopped the walk, or nil.
func (it *BatchIter) Err() error { return it.err }

// batchErrorAt adds the frame index and byte position to a frame-level error.
func batchErrorAt(err error, index uint32, pos int) error {
	if be, ok := err.(*BatchError); ok {
		return batchErrorf(be.Code, "frame %d at byte %d: %s", index, pos, be.Detail)
	}
	return batchErrorf(ErrInvalidFormat, "frame %d at byte %d: %v", index, pos, err)
}
