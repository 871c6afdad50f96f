package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// TestCreateTopicReconcilesOnlyItsTopic (issue 15 point 9): creating a topic
// among 1 000 served partitions compares only the new topic's partitions
// with metadata (the full pass visited all of them on every change, which
// made CreateTopic ~9x slower at 12 000 partitions). CreatePartitions,
// DeletePartitions and a topic delete still bring the plane in line.
func TestCreateTopicReconcilesOnlyItsTopic(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 16})
	state := metadata.NewState()
	hash, err := metadata.RootPasswordHash("test", "iggy", "iggy")
	if err != nil {
		t.Fatal(err)
	}
	if err := state.SeedRoot("iggy", hash); err != nil {
		t.Fatal(err)
	}
	op := uint64(0)
	apply := func(cmd metadata.Command) {
		t.Helper()
		op++
		res := state.Apply(metadata.ApplyContext{Op: op, Timestamp: op * 1000, UserID: metadata.RootUserID}, cmd)
		if res.Code != 0 {
			t.Fatalf("%T: code %d", cmd, res.Code)
		}
		p.reconcileAfter(state, cmd, res)
	}
	topic := func(name string, n uint32) metadata.CreateTopic {
		return metadata.CreateTopic{Stream: metadata.ByName("s"), Name: name, PartitionsCount: n,
			MessageExpiry: metadata.Never, Compression: metadata.CompressionNone, MaxTopicSize: metadata.Never,
			Options: metadata.DefaultTopicOptions(metadata.DurabilityReplicated, metadata.DurabilityReplicated)}
	}
	apply(metadata.CreateStream{Name: "s"})
	for i := 0; i < 100; i++ {
		apply(topic(fmt.Sprintf("old-%d", i), 10))
	}
	opened := func(name string) int {
		t.Helper()
		tp, code := state.GetTopic(metadata.ByName("s"), metadata.ByName(name))
		if code != metadata.CodeOK {
			return -1
		}
		n := 0
		p.mu.RLock()
		for k := range p.opening {
			if k.stream == tp.StreamID && k.topic == tp.ID {
				n++
			}
		}
		for k := range p.entries {
			if k.stream == tp.StreamID && k.topic == tp.ID {
				n++
			}
		}
		p.mu.RUnlock()
		return n
	}

	before := p.reconcileVisits
	apply(topic("new", 10))
	if got := p.reconcileVisits - before; got != 10 {
		t.Fatalf("creating a 10-partition topic among 1000 partitions compared %d partitions, want 10", got)
	}
	if n := opened("new"); n != 10 {
		t.Fatalf("the new topic has %d partitions queued or served, want 10", n)
	}
	before = p.reconcileVisits
	apply(metadata.CreateUser{Username: "user1", PasswordHash: hash, Status: metadata.UserActive})
	if got := p.reconcileVisits - before; got != 0 {
		t.Fatalf("creating a user compared %d partitions, want 0", got)
	}
	apply(metadata.CreatePartitions{Stream: metadata.ByName("s"), Topic: metadata.ByName("new"), Count: 5})
	if n := opened("new"); n != 15 {
		t.Fatalf("after CreatePartitions: %d partitions, want 15", n)
	}
}

// TestSingleNodeQuietGroupsRest (issue 15 point 9): a single node's quiet
// partition groups stop ticking (every group ticked every 10 ms, so 12 000
// idle partitions kept a core busy and CreateTopic slowed ~9x); a send wakes
// the group and commits, and it rests again.
func TestSingleNodeQuietGroupsRest(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	p.restWhenQuiet(3)
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	var entries []*partitionEntry
	for i := uint32(0); i < 20; i++ {
		e := p.open(partitionKey{0, 0, i}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
		if e.log == nil {
			t.Fatalf("open: %v", e.quarantine)
		}
		entries = append(entries, e)
	}
	sh := p.shards[0]
	awake := func() int {
		n := 0
		sh.do(func() { n = len(sh.awake.list) })
		return n
	}
	waitRest := func(what string) {
		t.Helper()
		for i := 0; awake() > 0; i++ {
			if i > 1000 { // 1000 × 10 ms ticks: a generous bound, not a timing assertion
				t.Fatalf("%s: %d groups still awake", what, awake())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitRest("after opening")
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	out := sh.propose(context.Background(), &partitionProposal{entry: entries[3], op: wire.OpSendMessages, body: batch})
	if out.code != wire.OK || entries[3].log.NextOffset() != 1 {
		t.Fatalf("send to a resting group: %+v", out)
	}
	waitRest("after the send")
}
