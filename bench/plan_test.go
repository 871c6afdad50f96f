package bench

import (
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func refs(streams, partitions int, stored uint64) []streamRef {
	out := make([]streamRef, streams)
	for s := range out {
		out[s] = streamRef{Name: StreamName(s), StreamID: uint32(s)}
		for p := range partitions {
			out[s].Partitions = append(out[s].Partitions, uint32(p))
			out[s].StoredMessages = append(out[s].StoredMessages, stored)
		}
	}
	return out
}

func TestPlanPinnedOneStreamPerProducer(t *testing.T) {
	cfg := DefaultConfig(PinnedProducerAndConsumer)
	cfg.MessageBatches = 10
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	streams := refs(cfg.Streams, 1, 0)
	producers := planProducers(&cfg, streams)
	for i, p := range producers {
		if p.Stream != i || p.Partitioning.Kind != wire.PartitioningPartitionID || p.Batches != 10 {
			t.Errorf("producer %d: %+v, want stream %d by partition id, 10 batches", i, p, i)
		}
	}
	perStream := producedPerStream(&cfg, producers, len(streams))
	consumers := planConsumers(&cfg, streams, perStream)
	for j, c := range consumers {
		if len(c.Targets) != 1 || c.Targets[0].Stream != j || c.ExpectedMessages != 10_000 || c.Group != nil {
			t.Errorf("consumer %d: %+v, want stream %d alone expecting 10000", j, c, j)
		}
	}
}

func TestPlanBalancedSplitsPartitions(t *testing.T) {
	cfg := DefaultConfig(BalancedProducerAndConsumer)
	cfg.MessageBatches = 3
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	streams := refs(1, cfg.Partitions, 0)
	producers := planProducers(&cfg, streams)
	for _, p := range producers {
		if p.Partitioning.Kind != wire.PartitioningBalanced {
			t.Fatalf("balanced producer uses partitioning kind %d", p.Partitioning.Kind)
		}
	}
	consumers := planConsumers(&cfg, streams, producedPerStream(&cfg, producers, 1))
	owned := map[uint32]int{}
	for _, c := range consumers {
		if len(c.Targets) != cfg.Partitions/cfg.Consumers || c.Group == nil || c.Group != consumers[0].Group {
			t.Errorf("consumer %d owns %d partitions (group %p), want %d sharing one group", c.Index, len(c.Targets),
				c.Group, cfg.Partitions/cfg.Consumers)
		}
		for _, t := range c.Targets {
			owned[t.Partition]++
		}
	}
	if len(owned) != cfg.Partitions {
		t.Errorf("%d partitions owned, want all %d", len(owned), cfg.Partitions)
	}
	if consumers[0].Group.total != uint64(cfg.Producers*3*cfg.MessagesPerBatch) {
		t.Errorf("group goal %d, want every produced message", consumers[0].Group.total)
	}

	// Consumer-only: each consumer expects what its own partitions store.
	only := DefaultConfig(BalancedConsumer)
	only.Consumers = 5
	if err := only.Normalize(); err != nil {
		t.Fatal(err)
	}
	stored := planConsumers(&only, refs(1, 12, 7), nil)
	var sum uint64
	for _, c := range stored {
		if c.Group != nil || c.ExpectedMessages != uint64(7*len(c.Targets)) {
			t.Errorf("consumer %d expects %d over %d partitions, want 7 each", c.Index, c.ExpectedMessages, len(c.Targets))
		}
		sum += c.ExpectedMessages
	}
	if sum != 84 {
		t.Errorf("consumers expect %d messages in all, 84 stored", sum)
	}
}

func TestCountPolledMessages(t *testing.T) {
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{Payload: []byte("a")}, {Payload: []byte("bc")}})
	if err != nil {
		t.Fatal(err)
	}
	reply := wire.AppendPollMessagesReply(nil, 0, 1, 4, append(append([]byte{}, batch...), batch...))
	if n, err := countPolledMessages(reply); err != nil || n != 4 {
		t.Errorf("two records of 2: %d, %v; want 4", n, err)
	}
	if n, err := countPolledMessages(wire.AppendPollMessagesReply(nil, 0, 0, 0, nil)); err != nil || n != 0 {
		t.Errorf("empty reply: %d, %v; want 0", n, err)
	}
	bad := wire.AppendPollMessagesReply(nil, 0, 1, 3, batch)
	if _, err := countPolledMessages(bad); err == nil {
		t.Error("a prefix count that disagrees with the records was accepted")
	}
	if _, err := countPolledMessages(reply[:len(reply)-1]); err == nil {
		t.Error("a truncated record was accepted")
	}
	if _, err := countPolledMessages(reply[:10]); err == nil {
		t.Error("a reply shorter than its prefix was accepted")
	}
}

func TestCheckPollReplyVerify(t *testing.T) {
	cfg := DefaultConfig(PinnedConsumer)
	cfg.MessageSizeBytes, cfg.Verify = 3, true
	messages := []wire.BatchMessageInput{{Payload: []byte("abc")}, {Payload: []byte("def")}}
	batch, err := wire.AppendBatch(nil, messages)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.StampBatch(batch, 0, 10, 1); err != nil {
		t.Fatal(err)
	}
	reply := wire.AppendPollMessagesReply(nil, 0, 12, 2, batch)
	if n, err := checkPollReply(&cfg, reply, 10); err != nil || n != 2 {
		t.Fatalf("valid reply from offset 10: %d, %v", n, err)
	}
	if _, err := checkPollReply(&cfg, reply, 9); err == nil || !strings.Contains(err.Error(), "offset 10, want 9") {
		t.Errorf("reply starting past the polled offset: %v", err)
	}
	cfg.MessageSizeBytes = 4
	if _, err := checkPollReply(&cfg, reply, 10); err == nil || !strings.Contains(err.Error(), "3-byte payload") {
		t.Errorf("payload of the wrong size: %v", err)
	}
	cfg.MessageSizeBytes = 3
	corrupt := append([]byte(nil), reply...)
	corrupt[wire.PollMessagesReplyPrefixSize+wire.BatchHeaderSize] ^= 0xFF // first frame's checksum
	if _, err := checkPollReply(&cfg, corrupt, 10); err == nil {
		t.Error("a reply whose batch checksum no longer matches was accepted")
	}
	cfg.Verify = false
	if n, err := checkPollReply(&cfg, corrupt, 10); err != nil || n != 2 {
		t.Errorf("without --verify only headers are checked: %d, %v", n, err)
	}
}
