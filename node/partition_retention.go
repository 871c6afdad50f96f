package node

import (
	"context"
	"runtime"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
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
	return partitionGroupConfig{prepareQueueDepth: depth, journalSlots: max(partitionJournalSlots, 2*depth)}
}

// retentionLoop applies message_expiry and max_topic_size every second.
func (n *Node) retentionLoop(ctx context.Context) {
	ticker := time.NewTicker(retentionInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			n.applyRetention(nowMicros())
		}
	}
}

// applyRetention deletes expired sealed segments and enforces topic sizes.
// Retention never changes a log's next offset, so it runs beside appends
// (partitions.Log serialises its writers).
func (n *Node) applyRetention(now uint64) {
	examined := 0
	for _, s := range n.state.Streams() {
		for _, t := range s.Topics {
			if examined >= retentionTopicsPerTurn {
				return
			}
			examined++
			expiryOn := t.MessageExpiry != 0 && t.MessageExpiry != metadata.Never
			sizeOn := t.MaxTopicSize != 0 && t.MaxTopicSize != metadata.Never
			if !expiryOn && !sizeOn {
				continue
			}
			logs := n.plane.topicLogs(topicKey{s.ID, t.ID})
			if expiryOn {
				for _, l := range logs {
					if res, err := l.ApplyRetention(now, t.MessageExpiry, 0); err != nil {
						n.log.Warn("message expiry", "dir", l.Dir(), "err", err)
					} else if res.SegmentsDeleted > 0 {
						n.log.Info("expired segments deleted", "dir", l.Dir(), "segments", res.SegmentsDeleted,
							"messages", res.MessagesDeleted)
					}
				}
			}
			if sizeOn {
				if res, err := partitions.EnforceTopicSize(logs, t.MaxTopicSize); err != nil {
					n.log.Warn("max topic size", "stream", s.ID, "topic", t.ID, "err", err)
				} else if res.SegmentsDeleted > 0 {
					n.log.Info("segments deleted for max topic size", "stream", s.ID, "topic", t.ID,
						"segments", res.SegmentsDeleted, "bytes", res.BytesDeleted)
				}
			}
		}
	}
}
