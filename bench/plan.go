package bench

import (
	"fmt"
	"sync/atomic"

	"github.com/lodestream/lodestream/wire"
)

// TopicName is the one topic every bench stream holds.
const TopicName = "bench"

// StreamName is the name of the n-th bench stream (0-based index → "bench-<n+1>").
func StreamName(index int) string { return fmt.Sprintf("bench-%d", index+1) }

// streamRef is a created or found bench stream: numeric ids to address it cheaply and the
// partition ids of its topic.
type streamRef struct {
	Name       string
	StreamID   uint32
	TopicID    uint32
	Partitions []uint32
	// StoredMessages is what each partition held when the run started (consumer-only workloads read it).
	StoredMessages []uint64
}

// producerPlan is what one producer sends.
type producerPlan struct {
	Index        int
	Stream       int // index into the stream list
	Partitioning wire.Partitioning
	Batches      int
}

// pollTarget is one partition a consumer reads from offset 0.
type pollTarget struct {
	Stream    int
	Partition uint32
}

// consumerPlan is what one consumer reads: its partitions and when it is done. A consumer with
// ExpectedMessages > 0 stops after reading that many; otherwise it stops when its group has read
// group.total (balanced producer-and-consumer, where the server spreads batches over partitions).
type consumerPlan struct {
	Index            int
	Targets          []pollTarget
	ExpectedMessages uint64
	Group            *groupProgress
}

// groupProgress is the shared read count of consumers that split partitions between them.
type groupProgress struct {
	consumed atomic.Uint64
	total    uint64
}

func (g *groupProgress) done() bool { return g.consumed.Load() >= g.total }

// planProducers assigns producers to streams: producer i writes stream i mod streams. A single-partition
// stream is addressed by partition id; otherwise the server balances batches over partitions.
func planProducers(cfg *Config, streams []streamRef) []producerPlan {
	plans := make([]producerPlan, cfg.Producers)
	for i := range plans {
		s := i % len(streams)
		p := wire.Partitioning{Kind: wire.PartitioningBalanced}
		if len(streams[s].Partitions) == 1 {
			p = wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: streams[s].Partitions[0]}
		}
		plans[i] = producerPlan{Index: i, Stream: s, Partitioning: p, Batches: cfg.MessageBatches}
	}
	return plans
}

// producedPerStream is the number of messages the producers will leave in each stream.
func producedPerStream(cfg *Config, producers []producerPlan, streamsCount int) []uint64 {
	out := make([]uint64, streamsCount)
	for _, p := range producers {
		out[p.Stream] += uint64(p.Batches) * uint64(cfg.MessagesPerBatch)
	}
	return out
}

// planConsumers assigns partitions to consumers.
//
// Pinned: consumer j reads every partition of stream j mod streams, expecting the whole stream.
// Balanced: all (stream, partition) pairs are dealt round-robin; with producers running the consumers
// share one goal (everything produced), otherwise each expects what its partitions stored.
func planConsumers(cfg *Config, streams []streamRef, producedPerStream []uint64) []consumerPlan {
	plans := make([]consumerPlan, cfg.Consumers)
	if cfg.Workload.Pinned() {
		for j := range plans {
			s := j % len(streams)
			plan := consumerPlan{Index: j}
			for k, id := range streams[s].Partitions {
				plan.Targets = append(plan.Targets, pollTarget{Stream: s, Partition: id})
				if producedPerStream == nil {
					plan.ExpectedMessages += streams[s].StoredMessages[k]
				}
			}
			if producedPerStream != nil {
				plan.ExpectedMessages = producedPerStream[s]
			}
			plans[j] = plan
		}
		return plans
	}
	var group *groupProgress
	if producedPerStream != nil {
		group = &groupProgress{}
		for _, n := range producedPerStream {
			group.total += n
		}
	}
	next := 0
	for s := range streams {
		for k, id := range streams[s].Partitions {
			j := next % len(plans)
			next++
			plans[j].Targets = append(plans[j].Targets, pollTarget{Stream: s, Partition: id})
			if group == nil {
				plans[j].ExpectedMessages += streams[s].StoredMessages[k]
			}
		}
	}
	for j := range plans {
		plans[j].Index = j
		plans[j].Group = group
	}
	return plans
}
