package integration

import (
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

func TestConsumerOffsetsSingleConsumer(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	sendOK(t, c, id(0), id(0), partitionID(1), makeMessages("o", 0, 10))

	consumer := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NamedID("worker")}
	p1 := wire.SomePartition(1)
	off, err := c.GetConsumerOffset(ctx, consumer, id(0), id(0), p1)
	must(t, err)
	if off != nil {
		t.Fatalf("offset before any store: %+v", off)
	}
	must(t, c.StoreConsumerOffset(ctx, consumer, id(0), id(0), p1, 4))
	off, err = c.GetConsumerOffset(ctx, consumer, id(0), id(0), p1)
	must(t, err)
	if off == nil || off.PartitionID != 1 || off.StoredOffset != 4 || off.CurrentOffset != 9 {
		t.Fatalf("offset after store: %+v", off)
	}
	// Next continues after the stored offset.
	expectPolled(t, "next after store", pollAt(t, c, consumer, id(0), id(0), p1, wire.PollingStrategy{Kind: wire.PollNext}, 3, false), "o", 5, 3)
	// Other partitions and consumers are independent.
	off, err = c.GetConsumerOffset(ctx, consumer, id(0), id(0), wire.SomePartition(0))
	must(t, err)
	if off != nil {
		t.Fatalf("partition 0 has an offset: %+v", off)
	}
	must(t, c.DeleteConsumerOffset(ctx, consumer, id(0), id(0), p1))
	expectCode(t, c.DeleteConsumerOffset(ctx, consumer, id(0), id(0), p1), wire.ErrConsumerOffsetNotFound)
	off, err = c.GetConsumerOffset(ctx, consumer, id(0), id(0), p1)
	must(t, err)
	if off != nil {
		t.Fatalf("offset after delete: %+v", off)
	}
	expectCode(t, c.StoreConsumerOffset(ctx, consumer, id(9), id(0), p1, 1), wire.ErrResourceNotFound)
	expectCode(t, c.StoreConsumerOffset(ctx, consumer, id(0), id(0), wire.SomePartition(5), 1), wire.ErrResourceNotFound)

	// Stored offsets survive a restart.
	must(t, c.StoreConsumerOffset(ctx, consumer, id(0), id(0), p1, 7))
	srv.restart(syscall.SIGTERM)
	c = rootClient(t, srv.addr)
	off, err = c.GetConsumerOffset(testCtx(t), consumer, id(0), id(0), p1)
	must(t, err)
	if off == nil || off.StoredOffset != 7 {
		t.Fatalf("offset after restart: %+v", off)
	}
}

func TestConsumerGroupAssignmentOffsetsAndRelease(t *testing.T) {
	srv := startServer(t, "")
	a := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := a.CreateStream(ctx, "s")
	must(t, err)
	_, err = a.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	_, err = a.CreateConsumerGroup(ctx, id(0), id(0), "g")
	must(t, err)
	for p := uint32(0); p < 2; p++ {
		sendOK(t, a, id(0), id(0), partitionID(p), makeMessages("g", 0, 5))
	}
	group := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: wire.NamedID("g")}
	next := wire.PollingStrategy{Kind: wire.PollNext}

	// Not a member: offsets are refused, polls answer the re-sync sentinel.
	expectCode(t, a.StoreConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(0), 1), wire.ErrConsumerGroupMemberNotFound)
	r := pollAt(t, a, group, id(0), id(0), wire.SomePartition(0), next, 5, false)
	if r.PartitionID != wire.PollResyncPartitionID || r.MessagesCount != 0 {
		t.Fatalf("poll by a non-member: %+v", r)
	}

	must(t, a.JoinConsumerGroup(ctx, id(0), id(0), named("g")))
	asg, err := a.SyncConsumerGroup(ctx, id(0), id(0), named("g"))
	must(t, err)
	if len(asg.Partitions) != 2 {
		t.Fatalf("sole member owns %v", asg.Partitions)
	}
	expectPolled(t, "group poll with auto-commit", pollAt(t, a, group, id(0), id(0), wire.SomePartition(1), next, 3, true), "g", 0, 3)
	deadline := time.Now().Add(5 * time.Second)
	for {
		off, err := a.GetConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(1))
		must(t, err)
		if off != nil && off.StoredOffset == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group auto-commit not stored: %+v", off)
		}
		sleepTick()
	}
	expectPolled(t, "group next continues", pollAt(t, a, group, id(0), id(0), wire.SomePartition(1), next, 10, false), "g", 3, 2)
	must(t, a.StoreConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(0), 1))

	// A second member takes one partition; the first one's stale partition answers the sentinel.
	b := rootClient(t, srv.addr)
	must(t, b.JoinConsumerGroup(ctx, id(0), id(0), named("g")))
	asgA, err := a.SyncConsumerGroup(ctx, id(0), id(0), named("g"))
	must(t, err)
	if len(asgA.Partitions) != 1 || asgA.Generation <= asg.Generation {
		t.Fatalf("after the second join: %+v (was %+v)", asgA, asg)
	}
	stale := 1 - asgA.Partitions[0]
	r = pollAt(t, a, group, id(0), id(0), wire.SomePartition(stale), next, 5, false)
	if r.PartitionID != wire.PollResyncPartitionID {
		t.Fatalf("poll of a partition owned by another member: %+v", r)
	}
	expectCode(t, a.StoreConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(stale), 1), wire.ErrConsumerGroupPartitionNotOwned)

	// The second member disconnects: its membership is released and the first owns both again.
	must(t, b.Close())
	deadline = time.Now().Add(5 * time.Second)
	for {
		g, err := a.GetConsumerGroup(ctx, id(0), id(0), named("g"))
		must(t, err)
		if g.MembersCount == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("membership not released on disconnect: %+v", g)
		}
		sleepTick()
	}
	r = pollAt(t, a, group, id(0), id(0), wire.SomePartition(stale), wire.PollingStrategy{Kind: wire.PollOffset}, 5, false)
	if r.PartitionID != stale || r.MessagesCount != 5 {
		t.Fatalf("poll after the release: partition %d, %d messages", r.PartitionID, r.MessagesCount)
	}
	// Any client may read a group's offsets; deleting needs ownership.
	off, err := a.GetConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(0))
	must(t, err)
	if off == nil || off.StoredOffset != 1 {
		t.Fatalf("group offset of partition 0: %+v", off)
	}
	must(t, a.DeleteConsumerOffset(ctx, group, id(0), id(0), wire.SomePartition(0)))
}

// TestHeartbeatLossReleasesPartitions: a member that stops pinging loses its
// partitions; the live member, which pings like an SDK, keeps its own and
// then polls the silent member's instead of the sentinel.
//
// No wall-clock margin is tight: the eviction window is 1.2 × 2 s and the
// live member pings every 100 ms (24 pings per window), so only a single
// request stalled for over two seconds could make it look silent.
func TestHeartbeatLossReleasesPartitions(t *testing.T) {
	const interval = 2 * time.Second
	srv := startServer(t, "", "IGGY_HEARTBEAT_INTERVAL="+interval.String())
	ctx := testCtx(t)
	live := rootClient(t, srv.addr)
	keepAlive(t, live, interval/20)
	_, err := live.CreateStream(ctx, "s")
	must(t, err)
	_, err = live.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	_, err = live.CreateConsumerGroup(ctx, id(0), id(0), "g")
	must(t, err)
	sendOK(t, live, id(0), id(0), partitionID(0), makeMessages("h", 0, 2))
	sendOK(t, live, id(0), id(0), partitionID(1), makeMessages("h", 0, 2))
	must(t, live.JoinConsumerGroup(ctx, id(0), id(0), named("g")))
	silent := rootClient(t, srv.addr)
	must(t, silent.JoinConsumerGroup(ctx, id(0), id(0), named("g"))) // its last request
	asg, err := live.SyncConsumerGroup(ctx, id(0), id(0), named("g"))
	must(t, err)
	if len(asg.Partitions) != 1 {
		t.Fatalf("live member owns %v with two members", asg.Partitions)
	}
	own, other := asg.Partitions[0], 1-asg.Partitions[0]
	group := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: wire.NamedID("g")}
	first := wire.PollingStrategy{Kind: wire.PollFirst}
	if r := pollAt(t, live, group, id(0), id(0), wire.SomePartition(other), first, 10, false); r.PartitionID != wire.PollResyncPartitionID {
		t.Fatalf("poll of the silent member's partition: %+v", r)
	}
	waitFor(t, "the silent member's partitions to move", 30*time.Second, func() bool {
		r := pollAt(t, live, group, id(0), id(0), wire.SomePartition(other), first, 10, false)
		return r.PartitionID == other && r.MessagesCount == 2
	})
	expectCode(t, silent.Ping(ctx), wire.ErrStaleClient)
	// The live member was never evicted and now owns both partitions.
	asg, err = live.SyncConsumerGroup(ctx, id(0), id(0), named("g"))
	must(t, err)
	if len(asg.Partitions) != 2 {
		t.Fatalf("live member owns %v after the silent one was evicted", asg.Partitions)
	}
	if r := pollAt(t, live, group, id(0), id(0), wire.SomePartition(own), first, 10, false); r.PartitionID != own || r.MessagesCount != 2 {
		t.Fatalf("poll of the live member's own partition: %+v", r)
	}
}
