package bench

import (
	"context"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// BenchmarkProducerRoundTripToSink measures what one producer costs on this side of the socket: a
// pre-encoded 1 MB batch sent through client.Raw to a server that answers without looking at it.
// Both ends share the process, so this is an upper bound on the client's CPU per batch.
func BenchmarkProducerRoundTripToSink(b *testing.B) {
	srv := newFakeServer(b)
	srv.sink = true
	cfg := DefaultConfig(PinnedProducer)
	cfg.Address = srv.addr()
	if err := cfg.Normalize(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connect(ctx, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	stream := streamRef{Name: "sink", StreamID: 1, TopicID: 1, Partitions: []uint32{0}}
	plan := producerPlan{Partitioning: wire.Partitioning{Kind: wire.PartitioningPartitionID}}
	frame, err := buildBatchFrame(&cfg, stream, plan)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(cfg.BatchPayloadBytes()))
	b.ReportAllocs()
	var replyBuf []byte
	for b.Loop() {
		if _, err := exchange(ctx, c, wire.CodeSendMessages, frame, &replyBuf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCountPolledMessages is the consumer's per-reply check on a 1000 × 1000-byte reply.
func BenchmarkCountPolledMessages(b *testing.B) {
	payload := make([]byte, 1000)
	messages := make([]wire.BatchMessageInput, 1000)
	for i := range messages {
		messages[i].Payload = payload
	}
	batch, err := wire.AppendBatch(nil, messages)
	if err != nil {
		b.Fatal(err)
	}
	reply := wire.AppendPollMessagesReply(nil, 0, 1000, 1000, batch)
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		if n, err := countPolledMessages(reply); err != nil || n != 1000 {
			b.Fatal(n, err)
		}
	}
}
