package wire

// Response bodies of §4.3 for streams, topics, partitions and consumer groups. Each type has Append
// (server side) and a strict Decode function (client side): lengths are checked before slicing, element
// counts are checked against the bytes left before any slice is sized from them, and trailing bytes are
// an error.

// Stream is §4.3.1: [id u32][created_at u64][topics_count u32][size_bytes u64][messages_count u64]
// [Name8 name][options len u32 + TLV].
type Stream struct {
	ID            uint32
	CreatedAt     uint64 // µs since epoch
	TopicsCount   uint32
	SizeBytes     uint64
	MessagesCount uint64
	Name          string
	Options       Options
}

const streamFixedSize = 33 // up to and including the name length byte

func (s *Stream) Append(b []byte) []byte {
	b = appendU32(b, s.ID)
	b = appendU64(b, s.CreatedAt)
	b = appendU32(b, s.TopicsCount)
	b = appendU64(b, s.SizeBytes)
	b = appendU64(b, s.MessagesCount)
	b = appendName8(b, s.Name)
	return s.Options.AppendPrefixed(b)
}

func (d *decoder) stream() Stream {
	return Stream{
		ID:            d.u32("stream.id"),
		CreatedAt:     d.u64("stream.created_at"),
		TopicsCount:   d.u32("stream.topics_count"),
		SizeBytes:     d.u64("stream.size_bytes"),
		MessagesCount: d.u64("stream.messages_count"),
		Name:          d.name8("stream.name"),
		Options:       d.optionsPrefixed("stream.options"),
	}
}

// StreamDetails is Stream followed by topics_count × TopicHeader.
type StreamDetails struct {
	Stream
	Topics []TopicHeader
}

func (s *StreamDetails) Append(b []byte) []byte {
	st := s.Stream
	st.TopicsCount = uint32(len(s.Topics))
	b = st.Append(b)
	for i := range s.Topics {
		b = s.Topics[i].Append(b)
	}
	return b
}

// DecodeStreamDetails decodes a GetStream / CreateStream payload.
func DecodeStreamDetails(b []byte) (StreamDetails, error) {
	d := newDecoder("StreamDetails", b)
	s := StreamDetails{Stream: d.stream()}
	if !d.failed() && uint64(s.TopicsCount)*topicHeaderMinSize > uint64(d.remaining()) {
		d.fail("stream.topics_count", "count %d cannot fit in %d bytes", s.TopicsCount, d.remaining())
	}
	for i := 0; i < int(s.TopicsCount) && !d.failed(); i++ {
		s.Topics = append(s.Topics, d.topicHeader())
	}
	d.end()
	return s, d.err()
}

// DecodeStreams decodes a GetStreams payload: streams concatenated until the end of the body.
func DecodeStreams(b []byte) ([]Stream, error) {
	d := newDecoder("Streams", b)
	var out []Stream
	for d.remaining() > 0 && !d.failed() {
		out = append(out, d.stream())
	}
	return out, d.err()
}

// Compression algorithm byte of TopicHeader.
const (
	CompressionNone uint8 = 1
	CompressionGzip uint8 = 2
)

// TopicHeader is §4.3.2 (offsets: 0 id, 4 created_at, 12 partitions_count, 16 message_expiry, 24
// compression, 25 max_topic_size, 33 size_bytes, 41 messages_count, 49 name) + options + derived_options.
type TopicHeader struct {
	ID              uint32
	CreatedAt       uint64
	PartitionsCount uint32
	MessageExpiry   uint64 // µs; u64::MAX = never
	Compression     uint8  // CompressionNone / CompressionGzip
	MaxTopicSize    uint64 // bytes; u64::MAX = unlimited
	SizeBytes       uint64
	MessagesCount   uint64
	Name            string
	Options         Options // keys the client sent
	DerivedOptions  Options // keys the server filled in
}

const topicHeaderMinSize = 50 + 1 + 4 + 4 // fixed part + 1-byte name + two empty option blocks

func (t *TopicHeader) Append(b []byte) []byte {
	b = appendU32(b, t.ID)
	b = appendU64(b, t.CreatedAt)
	b = appendU32(b, t.PartitionsCount)
	b = appendU64(b, t.MessageExpiry)
	b = appendU8(b, t.Compression)
	b = appendU64(b, t.MaxTopicSize)
	b = appendU64(b, t.SizeBytes)
	b = appendU64(b, t.MessagesCount)
	b = appendName8(b, t.Name)
	b = t.Options.AppendPrefixed(b)
	return t.DerivedOptions.AppendPrefixed(b)
}

func (d *decoder) topicHeader() TopicHeader {
	return TopicHeader{
		ID:              d.u32("topic.id"),
		CreatedAt:       d.u64("topic.created_at"),
		PartitionsCount: d.u32("topic.partitions_count"),
		MessageExpiry:   d.u64("topic.message_expiry"),
		Compression:     d.u8("topic.compression"),
		MaxTopicSize:    d.u64("topic.max_topic_size"),
		SizeBytes:       d.u64("topic.size_bytes"),
		MessagesCount:   d.u64("topic.messages_count"),
		Name:            d.name8("topic.name"),
		Options:         d.optionsPrefixed("topic.options"),
		DerivedOptions:  d.optionsPrefixed("topic.derived_options"),
	}
}

// DecodeTopics decodes a GetTopics payload: [count u32] + count × TopicHeader.
func DecodeTopics(b []byte) ([]TopicHeader, error) {
	d := newDecoder("Topics", b)
	n := d.count("count", topicHeaderMinSize)
	out := make([]TopicHeader, 0, n)
	for i := 0; i < n && !d.failed(); i++ {
		out = append(out, d.topicHeader())
	}
	d.end()
	return out, d.err()
}

// AppendTopics encodes a GetTopics payload.
func AppendTopics(b []byte, topics []TopicHeader) []byte {
	b = appendU32(b, uint32(len(topics)))
	for i := range topics {
		b = topics[i].Append(b)
	}
	return b
}

// Partition is §4.3.3 (40 bytes).
type Partition struct {
	ID            uint32
	CreatedAt     uint64
	SegmentsCount uint32
	CurrentOffset uint64
	SizeBytes     uint64
	MessagesCount uint64
}

const partitionSize = 40

func (p *Partition) Append(b []byte) []byte {
	b = appendU32(b, p.ID)
	b = appendU64(b, p.CreatedAt)
	b = appendU32(b, p.SegmentsCount)
	b = appendU64(b, p.CurrentOffset)
	b = appendU64(b, p.SizeBytes)
	return appendU64(b, p.MessagesCount)
}

func (d *decoder) partition() Partition {
	return Partition{
		ID:            d.u32("partition.id"),
		CreatedAt:     d.u64("partition.created_at"),
		SegmentsCount: d.u32("partition.segments_count"),
		CurrentOffset: d.u64("partition.current_offset"),
		SizeBytes:     d.u64("partition.size_bytes"),
		MessagesCount: d.u64("partition.messages_count"),
	}
}

// TopicDetails is TopicHeader followed by partitions_count × Partition.
type TopicDetails struct {
	TopicHeader
	Partitions []Partition
}

func (t *TopicDetails) Append(b []byte) []byte {
	h := t.TopicHeader
	h.PartitionsCount = uint32(len(t.Partitions))
	b = h.Append(b)
	for i := range t.Partitions {
		b = t.Partitions[i].Append(b)
	}
	return b
}

// DecodeTopicDetails decodes a GetTopic / CreateTopic payload (partition count must match the body).
func DecodeTopicDetails(b []byte) (TopicDetails, error) {
	d := newDecoder("TopicDetails", b)
	t := TopicDetails{TopicHeader: d.topicHeader()}
	if !d.failed() && uint64(t.PartitionsCount)*partitionSize != uint64(d.remaining()) {
		d.fail("topic.partitions_count", "count %d needs %d bytes, %d left", t.PartitionsCount,
			uint64(t.PartitionsCount)*partitionSize, d.remaining())
	}
	if !d.failed() {
		t.Partitions = make([]Partition, 0, t.PartitionsCount)
		for i := 0; i < int(t.PartitionsCount); i++ {
			t.Partitions = append(t.Partitions, d.partition())
		}
	}
	d.end()
	return t, d.err()
}

// ConsumerGroup is §4.3.4: [id u32][partitions_count u32][members_count u32][Name8 name].
type ConsumerGroup struct {
	ID              uint32
	PartitionsCount uint32
	MembersCount    uint32
	Name            string
}

func (g *ConsumerGroup) Append(b []byte) []byte {
	b = appendU32(b, g.ID)
	b = appendU32(b, g.PartitionsCount)
	b = appendU32(b, g.MembersCount)
	return appendName8(b, g.Name)
}

func (d *decoder) consumerGroup() ConsumerGroup {
	return ConsumerGroup{
		ID:              d.u32("group.id"),
		PartitionsCount: d.u32("group.partitions_count"),
		MembersCount:    d.u32("group.members_count"),
		Name:            d.name8("group.name"),
	}
}

// DecodeConsumerGroups decodes a GetConsumerGroups payload (groups concatenated; may be empty).
func DecodeConsumerGroups(b []byte) ([]ConsumerGroup, error) {
	d := newDecoder("ConsumerGroups", b)
	var out []ConsumerGroup
	for d.remaining() > 0 && !d.failed() {
		out = append(out, d.consumerGroup())
	}
	return out, d.err()
}

// GroupMember is one member of GroupDetails: [member_id u32][n u32][partition_id u32 × n].
type GroupMember struct {
	ID         uint32
	Partitions []uint32
}

// GroupDetails is ConsumerGroup followed by members_count × GroupMember.
type GroupDetails struct {
	ConsumerGroup
	Members []GroupMember
}

func (g *GroupDetails) Append(b []byte) []byte {
	h := g.ConsumerGroup
	h.MembersCount = uint32(len(g.Members))
	b = h.Append(b)
	for _, m := range g.Members {
		b = appendU32(b, m.ID)
		b = appendU32(b, uint32(len(m.Partitions)))
		for _, p := range m.Partitions {
			b = appendU32(b, p)
		}
	}
	return b
}

// DecodeGroupDetails decodes a GetConsumerGroup / CreateConsumerGroup payload.
func DecodeGroupDetails(b []byte) (GroupDetails, error) {
	d := newDecoder("GroupDetails", b)
	g := GroupDetails{ConsumerGroup: d.consumerGroup()}
	if !d.failed() && uint64(g.MembersCount)*8 > uint64(d.remaining()) {
		d.fail("group.members_count", "count %d cannot fit in %d bytes", g.MembersCount, d.remaining())
	}
	for i := 0; i < int(g.MembersCount) && !d.failed(); i++ {
		m := GroupMember{ID: d.u32("member.id")}
		n := d.count("member.partitions_count", 4)
		m.Partitions = make([]uint32, 0, n)
		for j := 0; j < n; j++ {
			m.Partitions = append(m.Partitions, d.u32("member.partition_id"))
		}
		g.Members = append(g.Members, m)
	}
	d.end()
	return g, d.err()
}
