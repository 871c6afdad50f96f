package wire

import (
	"encoding/binary"
	"fmt"
)

// SendMessagesRequest is a decoded SendMessages (code 101) body (wire-protocol.md §4.4.1):
//
//	[metadata_length u32][Ident stream][Ident topic][Partitioning][messages_count u32][one batch record]
type SendMessagesRequest struct {
	Stream        Identifier
	Topic         Identifier
	Partitioning  Partitioning
	MessagesCount uint32
	// Batch is the batch record, aliasing the body: exactly the bytes after the metadata. The server
	// stamps it in place (StampBatch) once a partition and offsets are chosen.
	Batch []byte
	// Header is the verified batch header as the producer sent it.
	Header BatchHeader
}

// sendMessagesMetadataMin is the smallest metadata section: two 1-character string identifiers
// (3 bytes each), a balanced partitioning (2 bytes) and messages_count (4 bytes).
const sendMessagesMetadataMin = 3 + 3 + 2 + 4

// DecodeSendMessages decodes and fully verifies a SendMessages body: the metadata section must be
// exactly metadata_length bytes, the batch must fill the rest of the body exactly, its message_count
// must equal the metadata messages_count, and VerifyBatch must pass. Metadata errors are *BodyError
// (InvalidCommand, or InvalidKeyValueLength for a bad key); batch errors are *BatchError with the
// specific code (4009, 4017, 4022, 4024, 4025, 4027, 4039, 4100, 4101).
func DecodeSendMessages(body []byte) (SendMessagesRequest, error) {
	req, err := DecodeSendMessagesMetadata(body)
	if err != nil {
		return SendMessagesRequest{}, err
	}
	h, err := VerifyBatch(req.Batch)
	if err != nil {
		return SendMessagesRequest{}, err
	}
	if h.MessageCount != req.MessagesCount {
		return SendMessagesRequest{}, batchErrorf(ErrInvalidMessagesCount,
			"metadata messages_count %d does not match the batch's message_count %d",
			req.MessagesCount, h.MessageCount)
	}
	req.Header = h
	return req, nil
}

// DecodeSendMessagesMetadata decodes the routing metadata and locates the batch without verifying it
// (for a router that only needs stream, topic and partitioning). Batch aliases the rest of the body.
func DecodeSendMessagesMetadata(body []byte) (SendMessagesRequest, error) {
	d := newDecoder("SendMessages", body)
	metadataLength := d.u32("metadata_length")
	if d.failed() {
		return SendMessagesRequest{}, d.err()
	}
	if metadataLength < sendMessagesMetadataMin || uint64(metadataLength) > uint64(d.remaining()) {
		d.fail("metadata_length", "metadata_length %d is outside %d..%d (the bytes present)",
			metadataLength, sendMessagesMetadataMin, d.remaining())
		return SendMessagesRequest{}, d.err()
	}
	metadataEnd := d.off + int(metadataLength)
	var req SendMessagesRequest
	req.Stream = d.ident("stream_id")
	req.Topic = d.ident("topic_id")
	req.Partitioning = d.partitioning("partitioning")
	req.MessagesCount = d.u32("messages_count")
	if d.failed() {
		return SendMessagesRequest{}, d.err()
	}
	if d.off != metadataEnd {
		d.fail("metadata_length", "metadata_length %d but the metadata fields take %d bytes",
			metadataLength, d.off-4)
		return SendMessagesRequest{}, d.err()
	}
	if req.MessagesCount == 0 {
		return SendMessagesRequest{}, batchErrorf(ErrInvalidMessagesCount, "metadata messages_count is 0")
	}
	req.Batch = d.rest()
	return req, nil
}

// AppendSendMessages encodes a complete SendMessages body (client side): metadata plus a freshly sealed
// producer batch built from messages.
func AppendSendMessages(dst []byte, stream, topic Identifier, partitioning Partitioning,
	messages []BatchMessageInput) ([]byte, error) {
	if err := stream.Validate(); err != nil {
		return dst, fmt.Errorf("send messages: stream id: %w", err)
	}
	if err := topic.Validate(); err != nil {
		return dst, fmt.Errorf("send messages: topic id: %w", err)
	}
	if err := validatePartitioning(partitioning); err != nil {
		return dst, fmt.Errorf("send messages: %w", err)
	}
	start := len(dst)
	dst = appendSendMessagesMetadata(dst, stream, topic, partitioning, uint32(len(messages)))
	out, err := AppendBatch(dst, messages)
	if err != nil {
		return dst[:start], fmt.Errorf("send messages: %w", err)
	}
	return out, nil
}

// AppendSendMessagesBatch encodes a SendMessages body around an already-built batch record (for example
// one forwarded from another node). The metadata messages_count is taken from the batch header.
func AppendSendMessagesBatch(dst []byte, stream, topic Identifier, partitioning Partitioning,
	batch []byte) ([]byte, error) {
	h, err := DecodeBatchHeader(batch)
	if err != nil {
		return dst, fmt.Errorf("send messages: %w", err)
	}
	if h.BatchLength != uint64(len(batch)) {
		return dst, fmt.Errorf("send messages: batch_length %d does not equal the %d batch bytes",
			h.BatchLength, len(batch))
	}
	if err := validatePartitioning(partitioning); err != nil {
		return dst, fmt.Errorf("send messages: %w", err)
	}
	dst = appendSendMessagesMetadata(dst, stream, topic, partitioning, h.MessageCount)
	return append(dst, batch...), nil
}

func appendSendMessagesMetadata(dst []byte, stream, topic Identifier, partitioning Partitioning,
	count uint32) []byte {
	lengthAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = stream.Append(dst)
	dst = topic.Append(dst)
	dst = partitioning.Append(dst)
	dst = binary.LittleEndian.AppendUint32(dst, count)
	binary.LittleEndian.PutUint32(dst[lengthAt:], uint32(len(dst)-lengthAt-4))
	return dst
}

func validatePartitioning(p Partitioning) error {
	switch p.Kind {
	case PartitioningBalanced, PartitioningPartitionID:
		return nil
	case PartitioningMessagesKey:
		if len(p.Key) == 0 || len(p.Key) > 255 {
			return batchErrorf(ErrInvalidKeyValueLength, "messages key is %d bytes, must be 1..255", len(p.Key))
		}
		return nil
	}
	return batchErrorf(ErrInvalidCommand, "partitioning kind %d is not 1, 2 or 3", p.Kind)
}

// SendConfirmation is one entry of the SendMessages reply: where the committed batch landed.
type SendConfirmation struct {
	StreamID    uint32
	TopicID     uint32
	PartitionID uint32
	BaseOffset  uint64
}

// sendConfirmationSize is [stream u32][topic u32][partition u32][base_offset u64].
const sendConfirmationSize = 20

// AppendSendMessagesReply encodes the SendMessages reply (§4.4.5, not result-framed): count 1 with the
// confirmation, or count 0 ("committed, offsets unknown") when c is nil.
func AppendSendMessagesReply(dst []byte, c *SendConfirmation) []byte {
	if c == nil {
		return binary.LittleEndian.AppendUint32(dst, 0)
	}
	dst = binary.LittleEndian.AppendUint32(dst, 1)
	dst = binary.LittleEndian.AppendUint32(dst, c.StreamID)
	dst = binary.LittleEndian.AppendUint32(dst, c.TopicID)
	dst = binary.LittleEndian.AppendUint32(dst, c.PartitionID)
	return binary.LittleEndian.AppendUint64(dst, c.BaseOffset)
}

// DecodeSendMessagesReply decodes a SendMessages reply the way both SDKs do: an empty body is no
// confirmations; otherwise count × 20 bytes must fill the body exactly.
func DecodeSendMessagesReply(b []byte) ([]SendConfirmation, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := newDecoder("SendMessagesReply", b)
	n := d.count("confirmations_count", sendConfirmationSize)
	if d.failed() {
		return nil, d.err()
	}
	if d.remaining() != n*sendConfirmationSize {
		d.fail("confirmations", "%d confirmations need %d bytes, %d present", n, n*sendConfirmationSize,
			d.remaining())
		return nil, d.err()
	}
	out := make([]SendConfirmation, n)
	for i := range out {
		out[i] = SendConfirmation{
			StreamID:    d.u32("stream_id"),
			TopicID:     d.u32("topic_id"),
			PartitionID: d.u32("partition_id"),
			BaseOffset:  d.u64("base_offset"),
		}
	}
	return out, d.err()
}
