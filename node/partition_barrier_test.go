package node

import (
	"context"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// syncBlockingStore holds each Sync until release is closed, and says when
// one started.
type syncBlockingStore struct {
	partitionStore
	started chan struct{}
	release chan struct{}
}

func (s *syncBlockingStore) Sync() error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-s.release
	return s.partitionStore.Sync()
}

// TestASingleNodesPersistedSyncLeavesTheShardLoop (issue 9 point 3): a
// single node's persisted send waits for its log's sync, which runs off the
// shard loop: while one partition's fsync hangs, a send to another
// partition of the same shard is answered, and the first send is answered
// only once its sync returns. Before, the sync ran on the loop and the
// second send waited for the first partition's disk.
func TestASingleNodesPersistedSyncLeavesTheShardLoop(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20, Durability: metadata.DurabilityPersisted}}
	slow := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	fast := p.open(partitionKey{0, 0, 1}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if slow.log == nil || fast.log == nil || slow.shard != fast.shard {
		t.Fatalf("want two open partitions on one shard: %v %v", slow.quarantine, fast.quarantine)
	}
	blocking := &syncBlockingStore{partitionStore: slow.log, started: make(chan struct{}, 1), release: make(chan struct{})}
	slow.shard.do(func() { slow.log = blocking })
	released := false
	defer func() {
		if !released {
			close(blocking.release)
		}
	}()
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(e *partitionEntry) <-chan partitionOutcome {
		ch := make(chan partitionOutcome, 1)
		go func() {
			ch <- e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
		}()
		return ch
	}
	slowDone := send(slow)
	select {
	case <-blocking.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow partition's sync never started")
	}
	select {
	case out := <-send(fast):
		if out.code != wire.OK {
			t.Fatalf("send to the other partition: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a send to another partition waited for the hanging fsync: the sync runs on the shard loop")
	}
	select {
	case out := <-slowDone:
		t.Fatalf("the send whose sync hangs was answered (%+v) before its sync returned", out)
	default:
	}
	close(blocking.release)
	released = true
	select {
	case out := <-slowDone:
		if out.code != wire.OK {
			t.Fatalf("the slow send after its sync: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the slow send was not answered after its sync returned")
	}
}
