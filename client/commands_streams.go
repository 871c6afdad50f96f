package client

import (
	"context"

	"github.com/lodestream/lodestream/wire"
)

// GetStream returns a stream with its topics; an unknown stream is StreamIdNotFound (1009).
func (c *Client) GetStream(ctx context.Context, stream wire.Identifier) (*wire.StreamDetails, error) {
	payload, err := c.sendLookup(ctx, wire.IdentRequest{Command: wire.CodeGetStream, ID: stream})
	if err != nil {
		return nil, err
	}
	s, err := wire.DecodeStreamDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetStream, err)
	}
	return &s, nil
}

// GetStreams lists streams.
func (c *Client) GetStreams(ctx context.Context) ([]wire.Stream, error) {
	payload, err := c.send(ctx, wire.EmptyRequest{Command: wire.CodeGetStreams})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeStreams(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetStreams, err)
	}
	return out, nil
}

// CreateStream creates a stream.
func (c *Client) CreateStream(ctx context.Context, name string, options ...wire.Option) (*wire.StreamDetails, error) {
	payload, err := c.send(ctx, wire.CreateStreamRequest{Name: name, Options: options})
	if err != nil {
		return nil, err
	}
	s, err := wire.DecodeStreamDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeCreateStream, err)
	}
	return &s, nil
}

// UpdateStream renames a stream.
func (c *Client) UpdateStream(ctx context.Context, stream wire.Identifier, name string, options ...wire.Option) error {
	return c.sendExpectEmpty(ctx, wire.UpdateStreamRequest{Stream: stream, Name: name, Options: options})
}

// DeleteStream deletes a stream.
func (c *Client) DeleteStream(ctx context.Context, stream wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.IdentRequest{Command: wire.CodeDeleteStream, ID: stream})
}

// PurgeStream deletes every message of a stream.
func (c *Client) PurgeStream(ctx context.Context, stream wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.IdentRequest{Command: wire.CodePurgeStream, ID: stream})
}

// GetTopic returns a topic with its partitions; an unknown topic is TopicIdNotFound (2010).
func (c *Client) GetTopic(ctx context.Context, stream, topic wire.Identifier) (*wire.TopicDetails, error) {
	payload, err := c.sendLookup(ctx, wire.TopicRequest{Command: wire.CodeGetTopic, Stream: stream, Topic: topic})
	if err != nil {
		return nil, err
	}
	t, err := wire.DecodeTopicDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetTopic, err)
	}
	return &t, nil
}

// GetTopics lists a stream's topics.
func (c *Client) GetTopics(ctx context.Context, stream wire.Identifier) ([]wire.TopicHeader, error) {
	payload, err := c.send(ctx, wire.IdentRequest{Command: wire.CodeGetTopics, ID: stream})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeTopics(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetTopics, err)
	}
	return out, nil
}

// CreateTopic creates a topic with partitionsCount partitions and optional topic options (§4.2.1).
func (c *Client) CreateTopic(ctx context.Context, stream wire.Identifier, name string, partitionsCount uint32, options ...wire.Option) (*wire.TopicDetails, error) {
	payload, err := c.send(ctx, wire.CreateTopicRequest{Stream: stream, PartitionsCount: partitionsCount, Name: name, Options: options})
	if err != nil {
		return nil, err
	}
	t, err := wire.DecodeTopicDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeCreateTopic, err)
	}
	return &t, nil
}

// UpdateTopic renames a topic and/or patches its updatable options.
func (c *Client) UpdateTopic(ctx context.Context, stream, topic wire.Identifier, name string, options ...wire.Option) error {
	return c.sendExpectEmpty(ctx, wire.UpdateTopicRequest{Stream: stream, Topic: topic, Name: name, Options: options})
}

// DeleteTopic deletes a topic.
func (c *Client) DeleteTopic(ctx context.Context, stream, topic wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.TopicRequest{Command: wire.CodeDeleteTopic, Stream: stream, Topic: topic})
}

// PurgeTopic deletes every message of a topic.
func (c *Client) PurgeTopic(ctx context.Context, stream, topic wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.TopicRequest{Command: wire.CodePurgeTopic, Stream: stream, Topic: topic})
}

// CreatePartitions adds count partitions to a topic.
func (c *Client) CreatePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	return c.sendExpectEmpty(ctx, wire.PartitionsRequest{Command: wire.CodeCreatePartitions, Stream: stream, Topic: topic, Count: count})
}

// DeletePartitions removes the last count partitions of a topic.
func (c *Client) DeletePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	return c.sendExpectEmpty(ctx, wire.PartitionsRequest{Command: wire.CodeDeletePartitions, Stream: stream, Topic: topic, Count: count})
}

// DeleteSegments deletes the oldest segmentsCount segments of a partition (answered as op 68).
func (c *Client) DeleteSegments(ctx context.Context, stream, topic wire.Identifier, partitionID, segmentsCount uint32) error {
	return c.sendExpectEmpty(ctx, wire.DeleteSegmentsRequest{Stream: stream, Topic: topic, PartitionID: partitionID, SegmentsCount: segmentsCount})
}

// GetConsumerGroup returns a group with its members; an unknown group is ConsumerGroupIdNotFound (5000).
func (c *Client) GetConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (*wire.GroupDetails, error) {
	payload, err := c.sendLookup(ctx, wire.GroupRequest{Command: wire.CodeGetConsumerGroup, Stream: stream, Topic: topic, Group: group})
	if err != nil {
		return nil, err
	}
	g, err := wire.DecodeGroupDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetConsumerGroup, err)
	}
	return &g, nil
}

// GetConsumerGroups lists a topic's consumer groups.
func (c *Client) GetConsumerGroups(ctx context.Context, stream, topic wire.Identifier) ([]wire.ConsumerGroup, error) {
	payload, err := c.send(ctx, wire.TopicRequest{Command: wire.CodeGetConsumerGroups, Stream: stream, Topic: topic})
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeConsumerGroups(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetConsumerGroups, err)
	}
	return out, nil
}

// CreateConsumerGroup creates a consumer group.
func (c *Client) CreateConsumerGroup(ctx context.Context, stream, topic wire.Identifier, name string) (*wire.GroupDetails, error) {
	payload, err := c.send(ctx, wire.CreateConsumerGroupRequest{Stream: stream, Topic: topic, Name: name})
	if err != nil {
		return nil, err
	}
	g, err := wire.DecodeGroupDetails(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeCreateConsumerGroup, err)
	}
	return &g, nil
}

func (c *Client) groupCommand(ctx context.Context, code wire.CommandCode, stream, topic, group wire.Identifier) error {
	return c.sendExpectEmpty(ctx, wire.GroupRequest{Command: code, Stream: stream, Topic: topic, Group: group})
}

// DeleteConsumerGroup deletes a consumer group.
func (c *Client) DeleteConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	return c.groupCommand(ctx, wire.CodeDeleteConsumerGroup, stream, topic, group)
}

// JoinConsumerGroup makes this connection a member of a group.
func (c *Client) JoinConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	return c.groupCommand(ctx, wire.CodeJoinConsumerGroup, stream, topic, group)
}

// LeaveConsumerGroup removes this connection from a group.
func (c *Client) LeaveConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	return c.groupCommand(ctx, wire.CodeLeaveConsumerGroup, stream, topic, group)
}

// SyncConsumerGroup returns this member's partition assignment; a non-member is
// ConsumerGroupMemberNotFound (5006).
func (c *Client) SyncConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (*wire.Assignment, error) {
	payload, err := c.sendLookup(ctx, wire.GroupRequest{Command: wire.CodeSyncConsumerGroup, Stream: stream, Topic: topic, Group: group})
	if err != nil {
		return nil, err
	}
	a, err := wire.DecodeAssignment(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeSyncConsumerGroup, err)
	}
	return &a, nil
}

// GetConsumerOffset returns the stored offset of a consumer, or nil when none is stored.
func (c *Client) GetConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptPartition) (*wire.ConsumerOffset, error) {
	payload, err := c.send(ctx, wire.ConsumerOffsetRequest{Command: wire.CodeGetConsumerOffset, Consumer: consumer, Stream: stream, Topic: topic, Partition: partition})
	if err != nil || len(payload) == 0 {
		return nil, err
	}
	o, err := wire.DecodeConsumerOffset(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeGetConsumerOffset, err)
	}
	return &o, nil
}

// StoreConsumerOffset stores a consumer's offset (acknowledged by quorum).
func (c *Client) StoreConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptPartition, offset uint64) error {
	return c.sendExpectEmpty(ctx, wire.ConsumerOffsetRequest{Command: wire.CodeStoreConsumerOffset, Consumer: consumer,
		Stream: stream, Topic: topic, Partition: partition, Offset: offset, Ack: wire.AckQuorum})
}

// DeleteConsumerOffset deletes a consumer's stored offset.
func (c *Client) DeleteConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptPartition) error {
	return c.sendExpectEmpty(ctx, wire.ConsumerOffsetRequest{Command: wire.CodeDeleteConsumerOffset, Consumer: consumer,
		Stream: stream, Topic: topic, Partition: partition, Ack: wire.AckQuorum})
}
