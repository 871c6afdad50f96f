package wire

import "encoding/binary"

// StampBatch writes the server-owned fields (partition_id, base_offset, base_timestamp) into the batch
// record b in place and re-seals batch_checksum. Frame bytes are untouched, so frame checksums stay
// valid. b must be exactly one record whose framing is sound (VerifyBatch passed); a framing error is
// returned and b is left unchanged.
func StampBatch(b []byte, partitionID uint32, baseOffset, baseTimestamp uint64) error {
	h, err := DecodeBatchHeader(b)
	if err != nil {
		return err
	}
	if h.BatchLength != uint64(len(b)) {
		return batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d does not equal the %d batch bytes present", h.BatchLength, len(b))
	}
	h.PartitionID = uint64(partitionID)
	h.BaseOffset = baseOffset
	h.BaseTimestamp = baseTimestamp
	sum, err := ComputeBatchChecksum(h, b)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(b[batchPartitionIDOffset:], h.PartitionID)
	binary.LittleEndian.PutUint64(b[batchBaseOffsetOffset:], h.BaseOffset)
	binary.LittleEndian.PutUint64(b[batchBaseTimestampOffset:], h.BaseTimestamp)
	binary.LittleEndian.PutUint64(b[batchChecksumOffset:], sum)
	return nil
}

// AppendBatchSlice appends to dst a record holding messages [first, first+count) of the batch record
// src: the header is copied with message_count and batch_length rewritten (base_offset, base_timestamp
// and origin_timestamp kept, so base_offset + offset_delta stays the absolute offset) and the batch
// checksum re-sealed over the kept frames. Frames are copied verbatim. When the range is the whole batch
// the record is copied unchanged.
func AppendBatchSlice(dst, src []byte, first, count uint32) ([]byte, error) {
	h, err := DecodeBatchHeader(src)
	if err != nil {
		return dst, err
	}
	if h.BatchLength > uint64(len(src)) {
		return dst, batchErrorf(ErrInvalidMessagePayloadLength,
			"batch_length %d overruns the %d bytes present", h.BatchLength, len(src))
	}
	src = src[:h.BatchLength]
	if count == 0 || uint64(first)+uint64(count) > uint64(h.MessageCount) {
		return dst, batchErrorf(ErrInvalidMessagesCount,
			"slice [%d, %d) is empty or outside the batch's %d messages", first, uint64(first)+uint64(count),
			h.MessageCount)
	}
	if first == 0 && count == h.MessageCount {
		return append(dst, src...), nil
	}
	start, end := -1, -1
	it := NewBatchIter(src)
	for it.Next() {
		index := it.Index() - 1
		m := it.Message()
		if index == first {
			start = m.Start
		}
		if index == first+count-1 {
			end = m.Start + len(m.Frame)
			break
		}
	}
	if err := it.Err(); err != nil {
		return dst, err
	}
	if start < 0 || end < 0 {
		return dst, batchErrorf(ErrInvalidMessagesCount,
			"batch declares %d messages but its frames end before message %d", h.MessageCount, first+count-1)
	}
	sliced := h
	sliced.MessageCount = count
	sliced.BatchLength = uint64(BatchHeaderSize + end - start)
	headerAt := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	dst = append(dst, src[start:end]...)
	sliced.EncodeInto(dst[headerAt:])
	sum, err := ComputeBatchChecksum(sliced, dst[headerAt:])
	if err != nil {
		return dst[:headerAt], err
	}
	binary.LittleEndian.PutUint64(dst[headerAt+batchChecksumOffset:], sum)
	return dst, nil
}

// SliceBatch returns a new record holding messages [first, first+count) of src; see AppendBatchSlice.
func SliceBatch(src []byte, first, count uint32) ([]byte, error) {
	return AppendBatchSlice(nil, src, first, count)
}
