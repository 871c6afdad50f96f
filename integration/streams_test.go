package integration

import (
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestStreamsCRUD(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)

	created, err := c.CreateStream(ctx, "orders")
	must(t, err)
	if created.ID != 0 || created.Name != "orders" || created.TopicsCount != 0 || created.CreatedAt == 0 {
		t.Fatalf("created stream %+v", created.Stream)
	}
	_, err = c.CreateStream(ctx, "orders")
	expectCode(t, err, wire.ErrStreamNameAlreadyExists)
	_, err = c.CreateStream(ctx, "   ")
	expectCode(t, err, wire.ErrInvalidStreamName)
	second, err := c.CreateStream(ctx, "payments")
	must(t, err)
	if second.ID != 1 {
		t.Fatalf("second stream id %d, want 1", second.ID)
	}

	for _, ident := range []wire.Identifier{id(0), named("orders")} {
		got, err := c.GetStream(ctx, ident)
		must(t, err)
		if got.ID != 0 || got.Name != "orders" {
			t.Fatalf("get %v: %+v", ident, got.Stream)
		}
	}
	_, err = c.GetStream(ctx, id(99))
	expectCode(t, err, wire.ErrStreamIDNotFound)
	all, err := c.GetStreams(ctx)
	must(t, err)
	if len(all) != 2 || all[0].Name != "orders" || all[1].Name != "payments" {
		t.Fatalf("streams %+v", all)
	}

	must(t, c.UpdateStream(ctx, id(0), "orders-v2"))
	got, err := c.GetStream(ctx, named("orders-v2"))
	must(t, err)
	if got.ID != 0 {
		t.Fatalf("renamed stream id %d", got.ID)
	}
	expectCode(t, c.UpdateStream(ctx, id(42), "x"), wire.ErrStreamIDNotFound)
	expectCode(t, c.UpdateStream(ctx, id(0), "payments"), wire.ErrStreamNameAlreadyExists)
	expectCode(t, c.UpdateStream(ctx, id(0), "y", wire.OptionString("retention", "1d")), wire.ErrUnsupportedOptionKey)

	must(t, c.PurgeStream(ctx, id(0)))
	expectCode(t, c.PurgeStream(ctx, id(7)), wire.ErrStreamIDNotFound)
	must(t, c.DeleteStream(ctx, id(0)))
	expectCode(t, c.DeleteStream(ctx, id(0)), wire.ErrStreamIDNotFound)
	// The freed id is reused (lowest free slot).
	again, err := c.CreateStream(ctx, "again")
	must(t, err)
	if again.ID != 0 {
		t.Fatalf("recreated stream id %d, want 0", again.ID)
	}
	// 255 bytes is the longest name; longer names cannot be encoded and are refused by the client.
	_, err = c.CreateStream(ctx, strings.Repeat("n", 255))
	must(t, err)
	_, err = c.CreateStream(ctx, strings.Repeat("n", 256))
	if err == nil {
		t.Fatal("256-byte stream name accepted")
	}
}

func TestTopicsAndPartitions(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)

	topic, err := c.CreateTopic(ctx, id(0), "events", 3, wire.OptionString(wire.OptCompressionAlgorithm, "gzip"))
	must(t, err)
	if topic.ID != 0 || topic.PartitionsCount != 3 || len(topic.Partitions) != 3 || topic.Compression != wire.CompressionGzip {
		t.Fatalf("created topic %+v", topic)
	}
	if _, ok := topic.Options.Get(wire.OptCompressionAlgorithm); !ok {
		t.Fatalf("explicit option missing from options: %+v", topic.Options)
	}
	if _, ok := topic.DerivedOptions.Get(wire.OptSegmentSize); !ok {
		t.Fatalf("derived option missing: %+v", topic.DerivedOptions)
	}
	_, err = c.CreateTopic(ctx, id(0), "events", 1)
	expectCode(t, err, wire.ErrTopicNameAlreadyExists)
	_, err = c.CreateTopic(ctx, id(9), "events", 1)
	expectCode(t, err, wire.ErrStreamIDNotFound)
	_, err = c.CreateTopic(ctx, id(0), "big", 1001)
	expectCode(t, err, wire.ErrTooManyPartitions)
	_, err = c.CreateTopic(ctx, id(0), "opt", 1, wire.OptionString("no_such_option", "1"))
	expectCode(t, err, wire.ErrUnsupportedOptionKey)
	_, err = c.CreateTopic(ctx, id(0), "opt", 1, wire.OptionUint64(wire.OptSegmentSize, 1000))
	expectCode(t, err, wire.ErrInvalidOptionValue)
	_, err = c.CreateTopic(ctx, id(0), " ", 1)
	expectCode(t, err, wire.ErrInvalidTopicName)

	got, err := c.GetTopic(ctx, named("s"), named("events"))
	must(t, err)
	if got.Name != "events" || len(got.Partitions) != 3 {
		t.Fatalf("get topic %+v", got)
	}
	_, err = c.GetTopic(ctx, id(0), id(5))
	expectCode(t, err, wire.ErrTopicIDNotFound)
	_, err = c.GetTopic(ctx, id(5), id(0))
	expectCode(t, err, wire.ErrTopicIDNotFound)
	list, err := c.GetTopics(ctx, id(0))
	must(t, err)
	if len(list) != 1 || list[0].Name != "events" {
		t.Fatalf("topics %+v", list)
	}

	must(t, c.UpdateTopic(ctx, id(0), id(0), "events2", wire.OptionUint64(wire.OptMessageExpiry, 60_000_000)))
	got, err = c.GetTopic(ctx, id(0), id(0))
	must(t, err)
	if got.Name != "events2" || got.MessageExpiry != 60_000_000 || got.Compression != wire.CompressionGzip {
		t.Fatalf("updated topic %+v", got.TopicHeader)
	}
	expectCode(t, c.UpdateTopic(ctx, id(0), id(0), "x", wire.OptionUint64(wire.OptSegmentSize, 1<<20)), wire.ErrUnsupportedOptionKey)
	expectCode(t, c.UpdateTopic(ctx, id(0), id(3), "x"), wire.ErrTopicIDNotFound)

	must(t, c.CreatePartitions(ctx, id(0), id(0), 2))
	must(t, c.DeletePartitions(ctx, id(0), id(0), 1))
	got, err = c.GetTopic(ctx, id(0), id(0))
	must(t, err)
	if len(got.Partitions) != 4 {
		t.Fatalf("partitions after +2 -1: %d", len(got.Partitions))
	}
	expectCode(t, c.CreatePartitions(ctx, id(0), id(8), 1), wire.ErrTopicIDNotFound)
	expectCode(t, c.CreatePartitions(ctx, id(0), id(0), 1001), wire.ErrTooManyPartitions)

	must(t, c.DeleteSegments(ctx, id(0), id(0), 0, 1))
	expectCode(t, c.DeleteSegments(ctx, id(0), id(0), 77, 1), wire.ErrPartitionNotFound)
	expectCode(t, c.DeleteSegments(ctx, id(3), id(0), 0, 1), wire.ErrStreamIDNotFound)

	must(t, c.PurgeTopic(ctx, id(0), id(0)))
	must(t, c.DeleteTopic(ctx, id(0), id(0)))
	expectCode(t, c.DeleteTopic(ctx, id(0), id(0)), wire.ErrTopicIDNotFound)
	stream, err := c.GetStream(ctx, id(0))
	must(t, err)
	if stream.TopicsCount != 0 {
		t.Fatalf("stream still lists %d topics", stream.TopicsCount)
	}
}

func TestConsumerGroupsMetadata(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 4)
	must(t, err)
	g, err := c.CreateConsumerGroup(ctx, id(0), id(0), "workers")
	must(t, err)
	if g.ID != 0 || g.Name != "workers" || g.PartitionsCount != 4 || len(g.Members) != 0 {
		t.Fatalf("created group %+v", g)
	}
	_, err = c.CreateConsumerGroup(ctx, id(0), id(0), "workers")
	expectCode(t, err, wire.ErrConsumerGroupNameAlreadyExists)
	must(t, c.JoinConsumerGroup(ctx, id(0), id(0), named("workers")))
	a, err := c.SyncConsumerGroup(ctx, id(0), id(0), id(0))
	must(t, err)
	if len(a.Partitions) != 4 {
		t.Fatalf("sole member assignment %+v", a)
	}
	me, err := c.GetMe(ctx)
	must(t, err)
	if me.ConsumerGroupsCount != 1 || len(me.ConsumerGroups) != 1 {
		t.Fatalf("me after join %+v", me)
	}
	groups, err := c.GetConsumerGroups(ctx, id(0), id(0))
	must(t, err)
	if len(groups) != 1 || groups[0].MembersCount != 1 {
		t.Fatalf("groups %+v", groups)
	}
	must(t, c.LeaveConsumerGroup(ctx, id(0), id(0), id(0)))
	_, err = c.SyncConsumerGroup(ctx, id(0), id(0), id(0))
	expectCode(t, err, wire.ErrConsumerGroupMemberNotFound)
	_, err = c.GetConsumerGroup(ctx, id(0), id(0), id(4))
	expectCode(t, err, wire.ErrConsumerGroupIDNotFound)
	_, err = c.GetConsumerGroup(ctx, id(6), id(0), id(0))
	expectCode(t, err, wire.ErrStreamIDNotFound)
	must(t, c.DeleteConsumerGroup(ctx, id(0), id(0), id(0)))
	expectCode(t, c.DeleteConsumerGroup(ctx, id(0), id(0), id(0)), wire.ErrConsumerGroupIDNotFound)
}
