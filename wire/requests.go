package wire

import "fmt"

// Request is a request body of §3.2/§4.2. AppendBody encodes it; the Decode<Name> functions decode it
// strictly field by field (bad lengths, bad UTF-8 and bad kinds are errors naming the field) and, as
// upstream's server does, ignore bytes after the last field, except where the last field runs to the
// end of the body (options tails): there the extra bytes are decoded as options. See docs/wire.md.
type Request interface {
	Code() CommandCode
	AppendBody(b []byte) []byte
}

// EncodeRequestBody encodes r and checks the result with the strict decoder for its code, so a client
// never sends a body this codec would refuse (e.g. an empty or over-long name).
func EncodeRequestBody(r Request) ([]byte, error) {
	body := r.AppendBody(nil)
	if _, err := DecodeRequestBody(r.Code(), body); err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.Code(), err)
	}
	return body, nil
}

// EmptyRequest is the body of commands that carry none (Ping, GetStats, GetMe, GetClients, GetUsers,
// GetStreams, GetClusterMetadata, GetPersonalAccessTokens, LogoutUser).
type EmptyRequest struct{ Command CommandCode }

func (r EmptyRequest) Code() CommandCode          { return r.Command }
func (r EmptyRequest) AppendBody(b []byte) []byte { return b }

func decodeEmpty(code CommandCode, b []byte) (EmptyRequest, error) {
	d := newDecoder(code.String(), b)
	d.skipTrailing()
	return EmptyRequest{Command: code}, d.err()
}

// IdentRequest is a body of one identifier: GetStream, DeleteStream, PurgeStream (stream),
// GetUser, DeleteUser (user), GetTopics (stream).
type IdentRequest struct {
	Command CommandCode
	ID      Identifier
}

func (r IdentRequest) Code() CommandCode          { return r.Command }
func (r IdentRequest) AppendBody(b []byte) []byte { return r.ID.Append(b) }

func decodeIdent(code CommandCode, b []byte) (IdentRequest, error) {
	d := newDecoder(code.String(), b)
	r := IdentRequest{Command: code, ID: d.ident(identFieldFor(code))}
	d.skipTrailing()
	return r, d.err()
}

func identFieldFor(code CommandCode) string {
	switch code {
	case CodeGetUser, CodeDeleteUser:
		return "user_id"
	}
	return "stream_id"
}

// TopicRequest addresses one topic: GetTopic, DeleteTopic, PurgeTopic, GetConsumerGroups.
type TopicRequest struct {
	Command CommandCode
	Stream  Identifier
	Topic   Identifier
}

func (r TopicRequest) Code() CommandCode { return r.Command }
func (r TopicRequest) AppendBody(b []byte) []byte {
	return r.Topic.Append(r.Stream.Append(b))
}

func decodeTopicRequest(code CommandCode, b []byte) (TopicRequest, error) {
	d := newDecoder(code.String(), b)
	r := TopicRequest{Command: code, Stream: d.ident("stream_id"), Topic: d.ident("topic_id")}
	d.skipTrailing()
	return r, d.err()
}

// GroupRequest addresses one consumer group: GetConsumerGroup, DeleteConsumerGroup, JoinConsumerGroup,
// LeaveConsumerGroup, SyncConsumerGroup.
type GroupRequest struct {
	Command CommandCode
	Stream  Identifier
	Topic   Identifier
	Group   Identifier
}

func (r GroupRequest) Code() CommandCode { return r.Command }
func (r GroupRequest) AppendBody(b []byte) []byte {
	return r.Group.Append(r.Topic.Append(r.Stream.Append(b)))
}

func decodeGroupRequest(code CommandCode, b []byte) (GroupRequest, error) {
	d := newDecoder(code.String(), b)
	r := GroupRequest{Command: code, Stream: d.ident("stream_id"), Topic: d.ident("topic_id"), Group: d.ident("group_id")}
	d.skipTrailing()
	return r, d.err()
}

// CreateStreamRequest (202): Name8 name + options tail.
type CreateStreamRequest struct {
	Name    string
	Options Options
}

func (r CreateStreamRequest) Code() CommandCode { return CodeCreateStream }
func (r CreateStreamRequest) AppendBody(b []byte) []byte {
	return r.Options.Append(appendName8(b, r.Name))
}

// DecodeCreateStream decodes a CreateStream body.
func DecodeCreateStream(b []byte) (CreateStreamRequest, error) {
	d := newDecoder("CreateStream", b)
	r := CreateStreamRequest{Name: d.name8("name")}
	r.Options = d.optionsTail("options")
	return r, d.err()
}

// UpdateStreamRequest (204): Ident stream, Name8 name + options tail.
type UpdateStreamRequest struct {
	Stream  Identifier
	Name    string
	Options Options
}

func (r UpdateStreamRequest) Code() CommandCode { return CodeUpdateStream }
func (r UpdateStreamRequest) AppendBody(b []byte) []byte {
	return r.Options.Append(appendName8(r.Stream.Append(b), r.Name))
}

// DecodeUpdateStream decodes an UpdateStream body.
func DecodeUpdateStream(b []byte) (UpdateStreamRequest, error) {
	d := newDecoder("UpdateStream", b)
	r := UpdateStreamRequest{Stream: d.ident("stream_id"), Name: d.name8("name")}
	r.Options = d.optionsTail("options")
	return r, d.err()
}

// CreateTopicRequest (302): Ident stream, partitions_count u32, Name8 name + options tail. The
// partitions-count range (0..1000) is a business rule checked by the server, not by the codec.
type CreateTopicRequest struct {
	Stream          Identifier
	PartitionsCount uint32
	Name            string
	Options         Options
}

func (r CreateTopicRequest) Code() CommandCode { return CodeCreateTopic }
func (r CreateTopicRequest) AppendBody(b []byte) []byte {
	b = appendU32(r.Stream.Append(b), r.PartitionsCount)
	return r.Options.Append(appendName8(b, r.Name))
}

// DecodeCreateTopic decodes a CreateTopic body.
func DecodeCreateTopic(b []byte) (CreateTopicRequest, error) {
	d := newDecoder("CreateTopic", b)
	r := CreateTopicRequest{Stream: d.ident("stream_id"), PartitionsCount: d.u32("partitions_count"), Name: d.name8("name")}
	r.Options = d.optionsTail("options")
	return r, d.err()
}

// UpdateTopicRequest (304): Ident stream, Ident topic, Name8 name + options tail.
type UpdateTopicRequest struct {
	Stream  Identifier
	Topic   Identifier
	Name    string
	Options Options
}

func (r UpdateTopicRequest) Code() CommandCode { return CodeUpdateTopic }
func (r UpdateTopicRequest) AppendBody(b []byte) []byte {
	b = r.Topic.Append(r.Stream.Append(b))
	return r.Options.Append(appendName8(b, r.Name))
}

// DecodeUpdateTopic decodes an UpdateTopic body.
func DecodeUpdateTopic(b []byte) (UpdateTopicRequest, error) {
	d := newDecoder("UpdateTopic", b)
	r := UpdateTopicRequest{Stream: d.ident("stream_id"), Topic: d.ident("topic_id"), Name: d.name8("name")}
	r.Options = d.optionsTail("options")
	return r, d.err()
}

// PartitionsRequest is CreatePartitions (402) or DeletePartitions (403): Ident, Ident, count u32.
type PartitionsRequest struct {
	Command CommandCode
	Stream  Identifier
	Topic   Identifier
	Count   uint32
}

func (r PartitionsRequest) Code() CommandCode { return r.Command }
func (r PartitionsRequest) AppendBody(b []byte) []byte {
	return appendU32(r.Topic.Append(r.Stream.Append(b)), r.Count)
}

func decodePartitions(code CommandCode, b []byte) (PartitionsRequest, error) {
	d := newDecoder(code.String(), b)
	r := PartitionsRequest{Command: code, Stream: d.ident("stream_id"), Topic: d.ident("topic_id"), Count: d.u32("partitions_count")}
	d.skipTrailing()
	return r, d.err()
}

// DeleteSegmentsRequest (503): Ident stream, Ident topic, partition_id u32, segments_count u32.
type DeleteSegmentsRequest struct {
	Stream        Identifier
	Topic         Identifier
	PartitionID   uint32
	SegmentsCount uint32
}

func (r DeleteSegmentsRequest) Code() CommandCode { return CodeDeleteSegments }
func (r DeleteSegmentsRequest) AppendBody(b []byte) []byte {
	b = r.Topic.Append(r.Stream.Append(b))
	return appendU32(appendU32(b, r.PartitionID), r.SegmentsCount)
}

// DecodeDeleteSegments decodes a DeleteSegments body.
func DecodeDeleteSegments(b []byte) (DeleteSegmentsRequest, error) {
	d := newDecoder("DeleteSegments", b)
	r := DeleteSegmentsRequest{Stream: d.ident("stream_id"), Topic: d.ident("topic_id"),
		PartitionID: d.u32("partition_id"), SegmentsCount: d.u32("segments_count")}
	d.skipTrailing()
	return r, d.err()
}

// CreateConsumerGroupRequest (602): Ident stream, Ident topic, Name8 name.
type CreateConsumerGroupRequest struct {
	Stream Identifier
	Topic  Identifier
	Name   string
}

func (r CreateConsumerGroupRequest) Code() CommandCode { return CodeCreateConsumerGroup }
func (r CreateConsumerGroupRequest) AppendBody(b []byte) []byte {
	return appendName8(r.Topic.Append(r.Stream.Append(b)), r.Name)
}

// DecodeCreateConsumerGroup decodes a CreateConsumerGroup body.
func DecodeCreateConsumerGroup(b []byte) (CreateConsumerGroupRequest, error) {
	d := newDecoder("CreateConsumerGroup", b)
	r := CreateConsumerGroupRequest{Stream: d.ident("stream_id"), Topic: d.ident("topic_id"), Name: d.name8("name")}
	d.skipTrailing()
	return r, d.err()
}

// FlushUnsavedBufferRequest (102): Ident stream, Ident topic, partition u32, fsync u8.
type FlushUnsavedBufferRequest struct {
	Stream      Identifier
	Topic       Identifier
	PartitionID uint32
	Fsync       bool
}

func (r FlushUnsavedBufferRequest) Code() CommandCode { return CodeFlushUnsavedBuffer }
func (r FlushUnsavedBufferRequest) AppendBody(b []byte) []byte {
	b = appendU32(r.Topic.Append(r.Stream.Append(b)), r.PartitionID)
	return appendBool(b, r.Fsync)
}

// DecodeFlushUnsavedBuffer decodes a FlushUnsavedBuffer body.
func DecodeFlushUnsavedBuffer(b []byte) (FlushUnsavedBufferRequest, error) {
	d := newDecoder("FlushUnsavedBuffer", b)
	r := FlushUnsavedBufferRequest{Stream: d.ident("stream_id"), Topic: d.ident("topic_id"),
		PartitionID: d.u32("partition_id"), Fsync: d.bool("fsync")}
	d.skipTrailing()
	return r, d.err()
}
