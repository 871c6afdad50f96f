package node

import (
	"context"
	"github.com/lodestream/lodestream/config"
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// benchPlane opens one partition (1 GiB segments) behind a running shard.
func benchPlane(b *testing.B, durability metadata.Durability) (*partitionEntry, func()) {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, b.TempDir(), 1, partitionGroupConfig{prepareQueueDepth: partitionPrepareDepth, journalSlots: partitionJournalSlots}, topology{count: 1}, config.ClusterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.shards[0].run(ctx); close(done) }()
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 30, Durability: durability,
		ConsumerOffsetDurability: metadata.DurabilityReplicated}}
	e := p.open(partitionKey{1, 1, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if e.log == nil {
		b.Fatalf("open partition: %v", e.quarantine)
	}
	return e, func() { cancel(); <-done }
}

// benchBatch is 1000 messages of 1000 bytes, as a producer sends it.
func benchBatch(b *testing.B) []byte {
	b.Helper()
	msgs := make([]wire.BatchMessageInput, 1000)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{OriginTimestamp: 1, Payload: make([]byte, 1000)}
		msgs[i].ID[0], msgs[i].ID[1] = byte(i), byte(i>>8)
	}
	batch, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkSendPath: admitted batches through the partition group to the
// segment file (propose → commit → stamp → append → reply), 4 producers.
func BenchmarkSendPath(b *testing.B) {
	for _, d := range []metadata.Durability{metadata.DurabilityReplicated, metadata.DurabilityPersisted} {
		b.Run(d.String(), func(b *testing.B) {
			e, stop := benchPlane(b, d)
			defer stop()
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// Consensus copies the body at prepare, so producers may share it.
					out := e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
					if out.code != wire.OK {
						b.Errorf("send: %s", out.code)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPollPath: polls of 1000 messages (one stored batch each) into a
// reply buffer, as handlePoll does.
func BenchmarkPollPath(b *testing.B) {
	e, stop := benchPlane(b, metadata.DurabilityReplicated)
	defer stop()
	batch := benchBatch(b)
	const stored = 64
	for i := 0; i < stored; i++ {
		if out := e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch}); out.code != wire.OK {
			b.Fatalf("fill: %s", out.code)
		}
	}
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			buf := make([]byte, pollReplyReserve, len(batch)+pollReplyReserve)
			res, err := e.log.PollInto(buf, partitions.PollQuery{
				Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: uint64(i%stored) * 1000}, Count: 1000})
			if err != nil || res.MessagesCount != 1000 {
				b.Errorf("poll: %d messages, %v", res.MessagesCount, err)
				return
			}
			i++
		}
	})
}

// BenchmarkSendPathBodyOwnership compares the two ways a request's batch
// reaches consensus, each with the read of the frame that carries it:
// lent (the frame is a reused buffer; Propose copies the batch out of it)
// and owned (each frame is fresh memory; consensus keeps the batch,
// Request.BodyOwned, as partition_send.go does for sends).
func BenchmarkSendPathBodyOwnership(b *testing.B) {
	for _, owned := range []bool{false, true} {
		name := "lent"
		if owned {
			name = "owned"
		}
		b.Run(name, func(b *testing.B) {
			e, stop := benchPlane(b, metadata.DurabilityReplicated)
			defer stop()
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				frame := make([]byte, len(batch))
				for pb.Next() {
					if owned {
						frame = make([]byte, len(batch))
					}
					copy(frame, batch) // the frame's read
					out := e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: frame, bodyOwned: owned})
					if out.code != wire.OK {
						b.Errorf("send: %s", out.code)
						return
					}
				}
			})
		})
	}
}
