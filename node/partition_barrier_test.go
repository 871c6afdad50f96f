package node

import (
	"context"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// storageGate holds a storage call until release is closed, and says when
// one started.
type storageGate struct {
	started chan struct{}
	release chan struct{}
}

func newStorageGate() storageGate {
	return storageGate{started: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g storageGate) hold() {
	select {
	case g.started <- struct{}{}:
	default:
	}
	<-g.release
}

// syncBlockingStore holds each Sync at its gate.
type syncBlockingStore struct {
	partitionStore
	storageGate
}

func (s *syncBlockingStore) Sync() error {
	s.hold()
	return s.partitionStore.Sync()
}

// TestASingleNodesPersistedSyncLeavesTheShardLoop (issue 9 point 3): a
// single node's persisted send waits for its log's sync, which runs off the
// shard loop: while one partition's fsync hangs, a send to another
// partition of the same shard is answered, and the first send is answered
// only once its sync returns. Before, the sync ran on the loop and the
// second send waited for the first partition's disk.
func TestASingleNodesPersistedSyncLeavesTheShardLoop(t *testing.T) {
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20, Durability: metadata.DurabilityPersisted}}
	slow, fast := twoPartitionsOnOneShard(t, topic)
	blocking := &syncBlockingStore{partitionStore: slow.log, storageGate: newStorageGate()}
	slow.shard.do(func() { slow.log = blocking })
	expectTheShardNotToWait(t, slow, fast, blocking.started, blocking.release, "fsync")
}

// twoPartitionsOnOneShard opens two partitions of topic on a one-shard
// single-node plane.
func twoPartitionsOnOneShard(t *testing.T, topic metadata.Topic) (*partitionEntry, *partitionEntry) {
	t.Helper()
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	slow := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	fast := p.open(partitionKey{0, 0, 1}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if slow.log == nil || fast.log == nil || slow.shard != fast.shard {
		t.Fatalf("want two open partitions on one shard: %v %v", slow.quarantine, fast.quarantine)
	}
	return slow, fast
}

// expectTheShardNotToWait sends to slow, whose storage call (what) hangs
// once started until release is closed, and to fast: fast is answered
// meanwhile, slow only after the release, both OK.
func expectTheShardNotToWait(t *testing.T, slow, fast *partitionEntry, started <-chan struct{}, release chan struct{}, what string) {
	t.Helper()
	released := false
	defer func() {
		if !released {
			close(release)
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
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the slow partition's %s never started (not the durable write's)", what)
	}
	select {
	case out := <-send(fast):
		if out.code != wire.OK {
			t.Fatalf("send to the other partition: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a send to another partition waited for the hanging %s: it runs on the shard loop", what)
	}
	select {
	case out := <-slowDone:
		t.Fatalf("the send whose %s hangs was answered (%+v) before it returned", what, out)
	default:
	}
	close(release)
	released = true
	select {
	case out := <-slowDone:
		if out.code != wire.OK {
			t.Fatalf("the slow send after its %s: %+v", what, out)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the slow send was not answered after its %s returned", what)
	}
}
