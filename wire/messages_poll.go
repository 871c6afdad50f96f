package wire

import (
	"encoding/binary"
	"fmt"
)

// PollResyncPartitionID is the partition_id of an empty poll reply telling a consumer-group member that
// it does not own the partition at the current generation and must re-sync (wire-protocol.md §4.5).
const PollResyncPartitionID uint32 = 0xFFFFFFFF

// PollMessagesReplyPrefixSize is [partition_id u32][current_offset u64][messages_count u32]: the minimum
// (and empty) poll reply.
const PollMessagesReplyPrefixSize = 16

// PollMessagesRequest is a PollMessages (code 100) body:
//
//	[Consumer][Ident stream][Ident topic][OptPartition][PollingStrategy][count u32][auto_commit u8]
type PollMessagesRequest struct {
	Consumer   Consumer
	Stream     Identifier
	Topic      Identifier
	Partition  OptPartition
	Strategy   PollingStrategy
	Count      uint32
	AutoCommit bool
}

// DecodePollMessages decodes a PollMessages body; bytes after auto_commit are ignored (as upstream).
func DecodePollMessages(body []byte) (PollMessagesRequest, error) {
	d := newDecoder("PollMessages", body)
	var r PollMessagesRequest
	r.Consumer = d.consumer("consumer")
	r.Stream = d.ident("stream_id")
	r.Topic = d.ident("topic_id")
	r.Partition = d.optPartition("partition")
	r.Strategy = d.pollingStrategy("strategy")
	r.Count = d.u32("count")
	r.AutoCommit = d.bool("auto_commit")
	d.skipTrailing()
	if err := d.err(); err != nil {
		return PollMessagesRequest{}, err
	}
	return r, nil
}

// Append encodes the request body (client side).
func (r PollMessagesRequest) Append(b []byte) []byte {
	b = r.Consumer.Append(b)
	b = r.Stream.Append(b)
	b = r.Topic.Append(b)
	b = r.Partition.Append(b)
	b = r.Strategy.Append(b)
	b = binary.LittleEndian.AppendUint32(b, r.Count)
	if r.AutoCommit {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendPollMessagesReply encodes a poll reply: the 16-byte prefix followed by records, which must be
// whole batch records holding messagesCount messages in total (partitions.Log.Poll produces them).
func AppendPollMessagesReply(dst []byte, partitionID uint32, currentOffset uint64, messagesCount uint32,
	records []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, partitionID)
	dst = binary.LittleEndian.AppendUint64(dst, currentOffset)
	dst = binary.LittleEndian.AppendUint32(dst, messagesCount)
	return append(dst, records...)
}

// PutPollMessagesReplyPrefix writes the 16-byte reply prefix into b[:16], for a server that reserved
// the prefix, appended records behind it (partitions.Log.PollInto) and learned the count afterwards.
func PutPollMessagesReplyPrefix(b []byte, partitionID uint32, currentOffset uint64, messagesCount uint32) {
	binary.LittleEndian.PutUint32(b[0:], partitionID)
	binary.LittleEndian.PutUint64(b[4:], currentOffset)
	binary.LittleEndian.PutUint32(b[12:], messagesCount)
}

// PolledMessage is one message of a decoded poll reply, with absolute offset and timestamps resolved
// from its batch record. Payload and UserHeaders alias the reply bytes.
type PolledMessage struct {
	Offset          uint64 // base_offset + offset_delta
	Timestamp       uint64 // the record's base_timestamp (server append time, µs)
	OriginTimestamp uint64 // origin_timestamp + timestamp_delta (µs)
	ID              [16]byte
	Checksum        uint64
	PartitionID     uint64
	Payload         []byte
	UserHeaders     []byte
}

// PollMessagesReply is a decoded poll reply.
type PollMessagesReply struct {
	PartitionID   uint32
	CurrentOffset uint64
	MessagesCount uint32
	Messages      []PolledMessage
}

// DecodePollMessagesReply decodes a poll reply with the strictest checks any SDK applies: records walk
// the body exactly, each record's batch_length fits, reserved bytes are zero in every batch and frame
// header, frames tile each record with the record's message_count, and the total number of frames
// equals the prefix messages_count. Frame checksums are not verified (clients do not either); the
// per-record batch checksum is, because a server slice must be re-sealed.
func DecodePollMessagesReply(b []byte) (PollMessagesReply, error) {
	if len(b) < PollMessagesReplyPrefixSize {
		return PollMessagesReply{}, fmt.Errorf("poll reply: %d bytes is short of the %d-byte prefix",
			len(b), PollMessagesReplyPrefixSize)
	}
	r := PollMessagesReply{
		PartitionID:   binary.LittleEndian.Uint32(b[0:]),
		CurrentOffset: binary.LittleEndian.Uint64(b[4:]),
		MessagesCount: binary.LittleEndian.Uint32(b[12:]),
	}
	pos := PollMessagesReplyPrefixSize
	// The count is remote-controlled: size the slice by what the body can hold.
	r.Messages = make([]PolledMessage, 0, min(int(r.MessagesCount), (len(b)-pos)/BatchMessageHeaderSize))
	for pos < len(b) {
		h, err := DecodeBatchHeader(b[pos:])
		if err != nil {
			return PollMessagesReply{}, fmt.Errorf("poll reply: record at byte %d: %w", pos, err)
		}
		if h.BatchLength > uint64(len(b)-pos) {
			return PollMessagesReply{}, fmt.Errorf("poll reply: record at byte %d: batch_length %d overruns the %d bytes left",
				pos, h.BatchLength, len(b)-pos)
		}
		record := b[pos : pos+int(h.BatchLength)]
		sum, err := ComputeBatchChecksum(h, record)
		if err != nil {
			return PollMessagesReply{}, fmt.Errorf("poll reply: record at byte %d: %w", pos, err)
		}
		if sum != h.BatchChecksum {
			return PollMessagesReply{}, fmt.Errorf("poll reply: record at byte %d: %w", pos,
				batchErrorf(ErrInvalidBatchChecksum, "stored %#016x, computed %#016x", h.BatchChecksum, sum))
		}
		it := NewBatchIter(record)
		for it.Next() {
			m := it.Message()
			r.Messages = append(r.Messages, PolledMessage{
				Offset:          h.BaseOffset + uint64(m.OffsetDelta),
				Timestamp:       h.BaseTimestamp,
				OriginTimestamp: h.OriginTimestamp + uint64(m.TimestampDelta),
				ID:              m.ID,
				Checksum:        m.Checksum,
				PartitionID:     h.PartitionID,
				Payload:         m.Payload,
				UserHeaders:     m.UserHeaders,
			})
		}
		pos += len(record)
	}
	if uint64(len(r.Messages)) != uint64(r.MessagesCount) {
		return PollMessagesReply{}, fmt.Errorf("poll reply: %d messages decoded, prefix declares %d",
			len(r.Messages), r.MessagesCount)
	}
	return r, nil
}
