package wire

import "sync/atomic"

// BalancedCursor is the round-robin state behind Balanced partitioning. The caller owns one per topic
// (the Go SDK keeps one per (stream, topic) on the client; a server accepting kind 1 keeps one per
// topic). Safe for concurrent use.
type BalancedCursor struct {
	next atomic.Uint32
}

// Next returns the partition for the next balanced send: cursor % partitionsCount, then advances.
// partitionsCount must be > 0.
func (c *BalancedCursor) Next(partitionsCount uint32) uint32 {
	return (c.next.Add(1) - 1) % partitionsCount
}

// PartitionForKey maps a messages key to a partition exactly as the Go and Rust SDKs do:
// XXH32(key, seed 0) % partitionsCount over the raw key bytes. partitionsCount must be > 0.
func PartitionForKey(key []byte, partitionsCount uint32) uint32 {
	return XXH32(key, 0) % partitionsCount
}

// ResolvePartition turns any Partitioning into a 0-based partition id of a topic with partitionsCount
// partitions. cursor is used only for Balanced. Errors: NoPartitions (3008) for a topic without
// partitions, PartitionNotFound (3007) for an explicit id out of range, InvalidKeyValueLength (4028)
// for a key outside 1..255 bytes.
func ResolvePartition(p Partitioning, partitionsCount uint32, cursor *BalancedCursor) (uint32, error) {
	if partitionsCount == 0 {
		return 0, batchErrorf(ErrNoPartitions, "the topic has no partitions")
	}
	switch p.Kind {
	case PartitioningBalanced:
		if cursor == nil {
			return 0, batchErrorf(ErrInvalidCommand, "balanced partitioning needs a cursor")
		}
		return cursor.Next(partitionsCount), nil
	case PartitioningPartitionID:
		if p.PartitionID >= partitionsCount {
			return 0, batchErrorf(ErrPartitionNotFound, "partition %d does not exist (the topic has %d)",
				p.PartitionID, partitionsCount)
		}
		return p.PartitionID, nil
	case PartitioningMessagesKey:
		if len(p.Key) == 0 || len(p.Key) > 255 {
			return 0, batchErrorf(ErrInvalidKeyValueLength, "messages key is %d bytes, must be 1..255", len(p.Key))
		}
		return PartitionForKey(p.Key, partitionsCount), nil
	}
	return 0, batchErrorf(ErrInvalidCommand, "partitioning kind %d is not 1, 2 or 3", p.Kind)
}
