package node

import (
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// partitionStore is what the partition plane needs from one partition's
// durable log: *partitions.Log on disk in production; a whole-node
// simulator can supply one on an in-memory file system.
type partitionStore interface {
	Append(batch []byte) (partitions.BatchLocation, error)
	// Staged batches (segment references, partition_stage.go).
	Stage(batch []byte, tag uint64) (partitions.BatchLocation, error)
	CutStaged() error
	CutStagedFrom(tag uint64) error
	FirstStaged() (tag uint64, at partitions.BatchLocation, ok bool)
	ReadBatch(loc partitions.BatchLocation) ([]byte, error)
	Sync() error
	// SyncAhead syncs what the log holds without holding its lock
	// (a checkpoint's log sync ahead of it, partition_presync.go).
	SyncAhead() (uint64, error)
	FailedSyncPending() bool
	// A full segment's deferred roll (partition_roll.go).
	RollDue() bool
	Roll() error
	SegmentRoom() uint64
	NextOffset() uint64
	Stats() partitions.Stats
	Poll(q partitions.PollQuery) (partitions.PollResult, error)
	PollInto(dst []byte, q partitions.PollQuery) (partitions.PollResult, error)
	StoreConsumerOffset(kind wire.ConsumerKind, id uint32, offset uint64) error
	ConsumerOffset(kind wire.ConsumerKind, id uint32) (uint64, bool)
	DeleteConsumerOffset(kind wire.ConsumerKind, id uint32) error
	ConsumerOffsets() []partitions.ConsumerOffsetEntry
	ReadRecords(dst []byte, from, end, bytesMax uint64) ([]byte, uint64, error)
	ResetTo(start uint64) (partitions.RetentionResult, error)
	SkipTo(offset uint64) error
	CutTail(offset uint64) error
	DamagedBatchOffset(file string, pos uint64) (uint64, error)
	RepairBatch(file string, pos uint64, record []byte) error
	ApplyRetention(nowMicros, messageExpiryMicros, maxSizeBytes uint64) (partitions.RetentionResult, error)
	RetentionCut(nowMicros, messageExpiryMicros, maxSizeBytes uint64) (uint64, bool)
	Purge() (partitions.RetentionResult, error)
	SegmentEndOffset(n int) uint64
	DeleteSegmentsBefore(offset uint64) (partitions.RetentionResult, error)
	Scrub(cursor partitions.ScrubCursor, bytesMax uint64) (partitions.ScrubResult, error)
	Delete() error
	Close() error
	Dir() string // for logs
}

var _ partitionStore = (*partitions.Log)(nil)
