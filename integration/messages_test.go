package integration

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

func partitionID(p uint32) wire.Partitioning {
	return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: p}
}

// makeMessages builds count messages whose payload starts with tag and the
// message's index.
func makeMessages(tag string, first, count int) []wire.BatchMessageInput {
	out := make([]wire.BatchMessageInput, count)
	for i := range out {
		payload := fmt.Appendf(nil, "%s-%06d", tag, first+i)
		out[i] = wire.BatchMessageInput{OriginTimestamp: 1_700_000_000_000_000 + uint64(first+i), Payload: payload}
		binary.LittleEndian.PutUint64(out[i].ID[:], uint64(first+i+1))
	}
	return out
}

func sendOK(t *testing.T, c *client.Client, stream, topic wire.Identifier, p wire.Partitioning, msgs []wire.BatchMessageInput) wire.SendConfirmation {
	t.Helper()
	conf, err := c.SendMessages(testCtx(t), stream, topic, p, msgs)
	must(t, err)
	if len(conf) != 1 {
		t.Fatalf("send confirmations %+v, want exactly one", conf)
	}
	return conf[0]
}

func pollAt(t *testing.T, c *client.Client, consumer wire.Consumer, stream, topic wire.Identifier, p wire.OptPartition, strategy wire.PollingStrategy, count uint32, autoCommit bool) *wire.PollMessagesReply {
	t.Helper()
	r, err := c.PollMessages(testCtx(t), wire.PollMessagesRequest{Consumer: consumer, Stream: stream, Topic: topic,
		Partition: p, Strategy: strategy, Count: count, AutoCommit: autoCommit})
	must(t, err)
	return r
}

// expectPolled checks offsets first..first+n-1 with payload tags.
func expectPolled(t *testing.T, what string, r *wire.PollMessagesReply, tag string, first uint64, n int) {
	t.Helper()
	if int(r.MessagesCount) != n || len(r.Messages) != n {
		t.Fatalf("%s: %d messages (prefix %d), want %d", what, len(r.Messages), r.MessagesCount, n)
	}
	for i, m := range r.Messages {
		want := fmt.Sprintf("%s-%06d", tag, first+uint64(i))
		if m.Offset != first+uint64(i) || string(m.Payload) != want {
			t.Fatalf("%s: message %d = offset %d %q, want offset %d %q", what, i, m.Offset, m.Payload, first+uint64(i), want)
		}
	}
}

var firstConsumer = wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)}

func TestSendAndPollEveryStrategy(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)

	// Ten batches of ten: offsets 0..99, base offsets 0, 10, ...
	for b := 0; b < 10; b++ {
		conf := sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("m", b*10, 10))
		if conf.BaseOffset != uint64(b*10) || conf.PartitionID != 0 || conf.StreamID != 0 || conf.TopicID != 0 {
			t.Fatalf("batch %d confirmation %+v", b, conf)
		}
	}
	p0 := wire.SomePartition(0)
	expectPolled(t, "offset 15 count 7 (sliced)", pollAt(t, c, firstConsumer, id(0), id(0), p0,
		wire.PollingStrategy{Kind: wire.PollOffset, Value: 15}, 7, false), "m", 15, 7)
	expectPolled(t, "first 25", pollAt(t, c, firstConsumer, id(0), id(0), p0,
		wire.PollingStrategy{Kind: wire.PollFirst}, 25, false), "m", 0, 25)
	expectPolled(t, "last 3", pollAt(t, c, firstConsumer, id(0), id(0), p0,
		wire.PollingStrategy{Kind: wire.PollLast}, 3, false), "m", 97, 3)
	expectPolled(t, "offset past the end", pollAt(t, c, firstConsumer, id(0), id(0), p0,
		wire.PollingStrategy{Kind: wire.PollOffset, Value: 100}, 5, false), "m", 100, 0)
	all := pollAt(t, c, firstConsumer, id(0), id(0), p0, wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	expectPolled(t, "everything", all, "m", 0, 100)
	if all.CurrentOffset != 99 {
		t.Fatalf("current offset %d, want 99", all.CurrentOffset)
	}
	// Timestamps are monotone per partition; polling from a message's timestamp returns it and what follows.
	ts := all.Messages[50].Timestamp
	for i := 1; i < len(all.Messages); i++ {
		if all.Messages[i].Timestamp < all.Messages[i-1].Timestamp {
			t.Fatalf("append timestamps go backwards at offset %d", i)
		}
	}
	byTime := pollAt(t, c, firstConsumer, id(0), id(0), p0, wire.PollingStrategy{Kind: wire.PollTimestamp, Value: ts}, 1000, false)
	if byTime.MessagesCount == 0 || byTime.Messages[0].Offset > 50 || byTime.Messages[len(byTime.Messages)-1].Offset != 99 {
		t.Fatalf("timestamp poll from %d: %d messages, first %d", ts, byTime.MessagesCount, byTime.Messages[0].Offset)
	}

	// Next with auto-commit walks the partition without repeats.
	next := wire.PollingStrategy{Kind: wire.PollNext}
	expectPolled(t, "next 1", pollAt(t, c, firstConsumer, id(0), id(0), p0, next, 30, true), "m", 0, 30)
	waitOffset(t, c, firstConsumer, 0, 29)
	expectPolled(t, "next 2", pollAt(t, c, firstConsumer, id(0), id(0), p0, next, 30, true), "m", 30, 30)
	waitOffset(t, c, firstConsumer, 0, 59)
	// Without auto-commit, Next does not advance.
	expectPolled(t, "next 3", pollAt(t, c, firstConsumer, id(0), id(0), p0, next, 5, false), "m", 60, 5)
	expectPolled(t, "next 3 again", pollAt(t, c, firstConsumer, id(0), id(0), p0, next, 5, false), "m", 60, 5)
	// Partition omitted = partition 0 for a single consumer; a named consumer has its own offset.
	named := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NamedID("reader-a")}
	expectPolled(t, "named next", pollAt(t, c, named, id(0), id(0), wire.OptPartition{}, next, 4, true), "m", 0, 4)
	waitOffset(t, c, named, 0, 3)
	// Count 0 answers an empty poll.
	expectPolled(t, "count 0", pollAt(t, c, firstConsumer, id(0), id(0), p0, wire.PollingStrategy{Kind: wire.PollFirst}, 0, false), "m", 0, 0)

	// Stats come from the log.
	td, err := c.GetTopic(ctx, id(0), id(0))
	must(t, err)
	if td.MessagesCount != 100 || td.SizeBytes == 0 || len(td.Partitions) != 1 ||
		td.Partitions[0].CurrentOffset != 99 || td.Partitions[0].SegmentsCount != 1 || td.Partitions[0].MessagesCount != 100 {
		t.Fatalf("topic stats %+v", td)
	}
	st, err := c.GetStats(ctx)
	must(t, err)
	if st.MessagesCount != 100 || st.SegmentsCount != 1 || st.MessagesSizeBytes != td.SizeBytes {
		t.Fatalf("server stats messages %d segments %d size %d", st.MessagesCount, st.SegmentsCount, st.MessagesSizeBytes)
	}
}

// waitOffset waits until the consumer's stored offset reaches want
// (auto-commit is proposed without being awaited).
func waitOffset(t *testing.T, c *client.Client, consumer wire.Consumer, partition uint32, want uint64) {
	t.Helper()
	var last *wire.ConsumerOffset
	for i := 0; i < 200; i++ {
		off, err := c.GetConsumerOffset(testCtx(t), consumer, id(0), id(0), wire.SomePartition(partition))
		must(t, err)
		if off != nil && off.StoredOffset == want {
			return
		}
		last = off
		sleepTick()
	}
	t.Fatalf("stored offset %+v, want %d", last, want)
}

func TestPartitioningKinds(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 3)
	must(t, err)

	// Balanced: round robin over the three partitions.
	seen := map[uint32]int{}
	for i := 0; i < 6; i++ {
		conf := sendOK(t, c, id(0), id(0), wire.Partitioning{Kind: wire.PartitioningBalanced}, makeMessages("b", i, 1))
		seen[conf.PartitionID]++
	}
	if seen[0] != 2 || seen[1] != 2 || seen[2] != 2 {
		t.Fatalf("balanced sends per partition %v, want 2 each", seen)
	}
	// Messages key: the same key always lands on XXH32(key) % 3.
	for _, key := range []string{"alpha", "beta", "gamma", "user-42"} {
		want := wire.XXH32([]byte(key), 0) % 3
		for i := 0; i < 3; i++ {
			conf := sendOK(t, c, id(0), id(0), wire.Partitioning{Kind: wire.PartitioningMessagesKey, Key: []byte(key)}, makeMessages("k", i, 2))
			if conf.PartitionID != want {
				t.Fatalf("key %q went to partition %d, want %d", key, conf.PartitionID, want)
			}
		}
	}
	// Partition id: explicit.
	conf := sendOK(t, c, id(0), id(0), partitionID(2), makeMessages("p", 0, 1))
	if conf.PartitionID != 2 {
		t.Fatalf("explicit partition answered %+v", conf)
	}
	r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(2), wire.PollingStrategy{Kind: wire.PollLast}, 1, false)
	if r.PartitionID != 2 || r.MessagesCount != 1 || string(r.Messages[0].Payload) != "p-000000" || r.Messages[0].PartitionID != 2 {
		t.Fatalf("poll of partition 2: %+v", r)
	}
}

func sleepTick() { time.Sleep(10 * time.Millisecond) }
