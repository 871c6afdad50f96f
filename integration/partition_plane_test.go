package integration

import (
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestPartitionPlaneAnswers: until the messages issue lands, partition-plane
// commands still get every answer metadata decides (not found, denied) and
// FeatureUnavailable for the rest.
func TestPartitionPlaneAnswers(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	_, err = c.CreateConsumerGroup(ctx, id(0), id(0), "g")
	must(t, err)
	msgs := []wire.BatchMessageInput{{ID: [16]byte{1}, OriginTimestamp: 1, Payload: []byte("hello")}}
	part := func(p uint32) wire.Partitioning {
		return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: p}
	}

	_, err = c.SendMessages(ctx, id(0), id(0), part(7), msgs)
	expectCode(t, err, wire.ErrResourceNotFound)
	_, err = c.SendMessages(ctx, id(4), id(0), part(0), msgs)
	expectCode(t, err, wire.ErrResourceNotFound)
	_, err = c.SendMessages(ctx, id(0), id(0), part(1), msgs)
	expectCode(t, err, wire.ErrFeatureUnavailable)

	single := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)}
	group := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: id(9)}
	expectCode(t, c.StoreConsumerOffset(ctx, single, id(0), id(0), wire.SomePartition(0), 5), wire.ErrFeatureUnavailable)
	expectCode(t, c.StoreConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(0), 5), wire.ErrResourceNotFound)
	expectCode(t, c.DeleteConsumerOffset(ctx, single, id(0), id(0), wire.SomePartition(0)), wire.ErrConsumerOffsetNotFound)
	expectCode(t, c.DeleteConsumerOffset(ctx, single, id(3), id(3), wire.SomePartition(0)), wire.ErrResourceNotFound)
	off, err := c.GetConsumerOffset(ctx, single, id(0), id(0), wire.SomePartition(0))
	must(t, err)
	if off != nil {
		t.Fatalf("offset %+v, want none", off)
	}

	poll := func(stream, topic uint32, p wire.OptPartition) error {
		_, err := c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: single, Stream: id(stream), Topic: id(topic),
			Partition: p, Strategy: wire.PollingStrategy{Kind: wire.PollingKind(3)}, Count: 10})
		return err
	}
	expectCode(t, poll(5, 0, wire.SomePartition(0)), wire.ErrStreamIDNotFound)
	expectCode(t, poll(0, 5, wire.SomePartition(0)), wire.ErrTopicIDNotFound)
	expectCode(t, poll(0, 0, wire.SomePartition(9)), wire.ErrPartitionNotFound)
	expectCode(t, poll(0, 0, wire.SomePartition(1)), wire.ErrFeatureUnavailable)

	_, err = c.CreateUser(ctx, "reader", "reader1", wire.UserActive, nil)
	must(t, err)
	reader := loginAs(t, srv.addr, "reader", "reader1")
	_, err = reader.SendMessages(ctx, id(0), id(0), part(0), msgs)
	expectCode(t, err, wire.ErrUnauthorized)
}
