package node

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// stageBlockingStore holds each Stage at its gate and counts those that
// succeeded.
type stageBlockingStore struct {
	partitionStore
	storageGate
	staged atomic.Int32
}

func (s *stageBlockingStore) Stage(batch []byte, tag uint64) (partitions.BatchLocation, error) {
	s.hold()
	loc, err := s.partitionStore.Stage(batch, tag)
	if err == nil {
		s.staged.Add(1)
	}
	return loc, err
}

// TestASingleNodesSegmentWritesLeaveTheShardLoop (issue 9 point 3): a
// single node's send is written to its segment by the group's durable
// write, off the shard loop (staged, then adopted by apply): while one
// partition's segment write hangs, a send to another partition of the
// same shard is answered, and the first is answered once its write
// returns, its batch adopted where it was staged. Before, apply wrote the
// batch on the loop and the second send waited for the first one's disk.
func TestASingleNodesSegmentWritesLeaveTheShardLoop(t *testing.T) {
	slow, fast := twoPartitionsOnOneShard(t, metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}})
	blocking := &stageBlockingStore{partitionStore: slow.log, storageGate: newStorageGate()}
	slow.shard.do(func() { slow.log = blocking })
	expectTheShardNotToWait(t, slow, fast, blocking.started, blocking.release, "segment write")
	var st partitions.Stats
	var staged bool
	slow.shard.do(func() { st = blocking.Stats(); _, _, staged = blocking.FirstStaged() })
	if blocking.staged.Load() != 1 || staged || st.MessagesCount != 1 {
		t.Fatalf("staged %d, still staged %v, %d messages: want the batch staged once and adopted", blocking.staged.Load(), staged, st.MessagesCount)
	}
}

// TestASingleNodesReplayInFlightLeavesNoStagedBytes: a retry of a send
// still in flight is staged like any send; apply answers it from the retry
// table and cuts its staged bytes, so the log holds one copy, the segment
// file holds one batch, and nothing of the replay comes back at the next
// open.
func TestASingleNodesReplayInFlightLeavesNoStagedBytes(t *testing.T) {
	dir := t.TempDir()
	p := singleNodeTestPlane(t, dir, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	e := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if e.log == nil {
		t.Fatalf("partition did not open: %v", e.quarantine)
	}
	blocking := &stageBlockingStore{partitionStore: e.log, storageGate: newStorageGate()}
	e.shard.do(func() { e.log = blocking })
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("once")}})
	if err != nil {
		t.Fatal(err)
	}
	copyOf := func() *partitionProposal {
		return &partitionProposal{entry: e, op: wire.OpSendMessages, body: append([]byte(nil), batch...),
			client: consensus.Uint128{Lo: 7}, request: dedupRequestFlag | 1, sum: 42, done: make(chan partitionOutcome, 1)}
	}
	first, replay := copyOf(), copyOf()
	if !e.shard.submit(first) {
		t.Fatal("the first copy was not queued")
	}
	select {
	case <-blocking.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first copy was never staged")
	}
	// The replay is admitted while the first copy's write is in flight (the
	// loop takes a proposal off the queue and admits it in one step, and the
	// write cannot report back before the release).
	if !e.shard.submit(replay) {
		t.Fatal("the replay was not queued")
	}
	for deadline := time.Now().Add(10 * time.Second); len(e.shard.proposals) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replay was never taken off the queue")
		}
	}
	close(blocking.release)
	var outs [2]partitionOutcome
	for i, ch := range []<-chan partitionOutcome{first.done, replay.done} {
		select {
		case outs[i] = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("copy %d was not answered", i)
		}
	}
	if outs[0].code != wire.OK || outs[1].code != wire.OK || outs[0].baseOffset != outs[1].baseOffset {
		t.Fatalf("answers %+v and %+v: want both OK at one offset", outs[0], outs[1])
	}
	var st partitions.Stats
	var staged bool
	e.shard.do(func() { st = blocking.Stats(); _, _, staged = blocking.FirstStaged() })
	if blocking.staged.Load() != 2 || staged || st.MessagesCount != 1 {
		t.Fatalf("staged %d, still staged %v, %d messages: want both copies staged, one adopted, the replay cut",
			blocking.staged.Load(), staged, st.MessagesCount)
	}
	info, err := os.Stat(filepath.Join(e.log.Dir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if uint64(info.Size()) != st.SizeBytes {
		t.Fatalf("the segment file holds %d bytes, the log %d: the replay's staged bytes stayed", info.Size(), st.SizeBytes)
	}
}
