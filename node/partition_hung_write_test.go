package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// TestAWriteThatNeverReturnsStopsTheProcessAtTheWedgedTimeout (issue 9
// point 6): a persisted partition's fdatasync that hangs fails nothing
// and fences nothing; once it has been out for
// superblock_wedged_fatal_timeout the plane reports a wedged error with
// the exit status ExitStorageWedged, as for a fence that old. Before, the
// group waited for ever.
func TestAWriteThatNeverReturnsStopsTheProcessAtTheWedgedTimeout(t *testing.T) {
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20, Durability: metadata.DurabilityPersisted}}
	slow, _ := twoPartitionsOnOneShard(t, topic)
	slow.shard.do(func() { slow.shard.wedgedTimeout = 300 * time.Millisecond })
	blocking := &syncBlockingStore{partitionStore: slow.log, storageGate: newStorageGate()}
	slow.shard.do(func() { slow.log = blocking })
	defer close(blocking.release)
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	go slow.shard.propose(context.Background(), &partitionProposal{entry: slow, op: wire.OpSendMessages, body: batch})
	select {
	case <-blocking.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the persisted send's sync never started")
	}
	select {
	case err := <-slow.shard.fatal:
		var coded interface{ ExitCode() int }
		if !errors.As(err, &coded) || coded.ExitCode() != ExitStorageWedged || !errors.Is(err, errWriteNeverReturned) {
			t.Fatalf("fatal error %v: want a hung write with exit status %d", err, ExitStorageWedged)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write out for longer than the wedged timeout did not stop the plane")
	}
}
