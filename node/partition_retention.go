package node

import (
	"runtime"
	"time"

	"github.com/lodestream/lodestream/metadata"
)

// Partition plane sizing and retention cadence.
const (
	partitionShardsMax     = 4
	retentionInterval      = time.Second
	retentionTopicsPerTurn = 1024 // topics examined per turn (bounded work)
	partitionPrepareDepth  = 16
	partitionJournalSlots  = 32 // in-memory prepares kept per partition (bodies included)
)

// partitionShardCount: one shard loop per core, at most partitionShardsMax.
func partitionShardCount() int {
	return min(max(runtime.GOMAXPROCS(0), 1), partitionShardsMax)
}

func (n *Node) partitionGroupConfig() partitionGroupConfig {
	depth := uint32(n.cfg.Partition.PrepareQueueDepth)
	if depth == 0 || depth > partitionPrepareDepth {
		depth = partitionPrepareDepth
	}
	return partitionGroupConfig{prepareQueueDepth: depth, journalSlots: max(partitionJournalSlots, 2*depth),
		walBytesMax: n.cfg.Partition.WALBytesMax.Bytes()}
}

// applyRetention (the retention job, every second) deletes expired sealed
// segments and enforces max_topic_size on at most retentionTopicsPerTurn
// topics with a retention rule, continuing where the previous turn stopped
// (a turn that always restarted from the first topic would never reach the
// topics past the bound).
// The primary of each partition decides the cut and replicates it
// (partition_destructive.go): every replica deletes the same segments.
func (n *Node) applyRetention(now uint64) {
	var topics []metadata.Topic
	for _, s := range n.state.Streams() {
		for _, t := range s.Topics {
			expiryOn := t.MessageExpiry != 0 && t.MessageExpiry != metadata.Never
			sizeOn := t.MaxTopicSize != 0 && t.MaxTopicSize != metadata.Never
			if expiryOn || sizeOn {
				topics = append(topics, t)
			}
		}
	}
	turn, next := retentionTurn(len(topics), n.retentionCursor, retentionTopicsPerTurn)
	n.retentionCursor = next
	for _, i := range turn {
		t := topics[i]
		// message_expiry and max_topic_size are per partition (max_topic_size bounds each
		// partition's sealed segment bytes; see partitions.Log.RetentionCut).
		for _, e := range n.plane.topicEntries(topicKey{t.StreamID, t.ID}) {
			e.proposeRetention(now, t)
		}
	}
}

// retentionTurn picks the indexes (of count topics) one retention turn
// examines: at most limit of them, starting at cursor and wrapping, and the
// cursor for the next turn. Every topic is examined within
// ceil(count/limit) turns, however the list is ordered.
func retentionTurn(count, cursor, limit int) (turn []int, next int) {
	if count == 0 {
		return nil, 0
	}
	if cursor >= count {
		cursor = 0 // topics were deleted since the last turn
	}
	n := min(count, limit)
	turn = make([]int, n)
	for i := range turn {
		turn[i] = (cursor + i) % count
	}
	return turn, (cursor + n) % count
}
