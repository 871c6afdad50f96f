package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Consumer defaults and bounds.
const (
	DefaultConsumerBatch        = 100
	ConsumerBatchMax            = 100_000
	DefaultConsumerPollInterval = 100 * time.Millisecond
	ConsumerPollIntervalMin     = time.Millisecond
	ConsumerPollIntervalMax     = time.Minute
	consumerPartitionsMax       = 100_000 // an assignment larger than this is refused as corrupt
)

// CommitMode says who stores a consumer's offsets.
type CommitMode uint8

const (
	// CommitAfterConsume stores, before each poll and on Close, the offset of the last message
	// Next returned from each partition: at-least-once, a crash re-delivers at most one batch.
	CommitAfterConsume CommitMode = iota
	// CommitOnPoll asks the server to store the offset as it answers the poll (auto_commit): the
	// cheapest, but a crash loses the messages of the batch being processed. Best effort on a
	// cluster follower.
	CommitOnPoll
	// CommitManual stores nothing: the caller calls StoreOffset or Commit after processing.
	CommitManual
)

// ConsumerConfig configures NewGroupConsumer and NewConsumer. Zero fields take the defaults.
type ConsumerConfig struct {
	Stream, Topic wire.Identifier
	BatchSize     uint32        // messages per poll
	PollInterval  time.Duration // wait after a round of polls that returned nothing
	Commit        CommitMode
}

// ReceivedMessage is one message returned by Consumer.Next.
type ReceivedMessage struct {
	Partition uint32
	wire.PolledMessage
}

// Consumer polls a topic message by message, for a consumer group (the server assigns the
// partitions) or for a single consumer over the partitions it names. It is not safe for
// concurrent use; use one per goroutine, each with its own Client for a group (membership is per
// connection).
type Consumer struct {
	c        *Client
	cfg      ConsumerConfig
	consumer wire.Consumer
	group    bool

	partitions []uint32          // the assignment (group) or the named partitions
	next       map[uint32]uint64 // local position per partition; absent: continue from the stored offset
	consumed   map[uint32]uint64 // last offset Next returned, not yet stored
	turn       int               // round-robin cursor over partitions
	buffered   []ReceivedMessage
	synced     bool // the group assignment is current
	closed     bool
}

// NewGroupConsumer joins the consumer group (which must exist) on c's connection and returns a
// consumer of the partitions the server assigns to it. Close leaves the group.
func NewGroupConsumer(ctx context.Context, c *Client, group wire.Identifier, cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if err := c.JoinConsumerGroup(ctx, cfg.Stream, cfg.Topic, group); err != nil {
		return nil, fmt.Errorf("consumer: join group %s: %w", group, err)
	}
	return newConsumer(c, cfg, wire.Consumer{Kind: wire.ConsumerKindGroup, ID: group}, nil), nil
}

// NewConsumer returns a single (non-group) consumer with the given id over the named partitions.
func NewConsumer(c *Client, id wire.Identifier, partitions []uint32, cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if len(partitions) == 0 || len(partitions) > consumerPartitionsMax {
		return nil, fmt.Errorf("consumer: %d partitions named, want 1..%d", len(partitions), consumerPartitionsMax)
	}
	return newConsumer(c, cfg, wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id}, append([]uint32(nil), partitions...)), nil
}

func newConsumer(c *Client, cfg ConsumerConfig, consumer wire.Consumer, partitions []uint32) *Consumer {
	return &Consumer{c: c, cfg: cfg, consumer: consumer, group: consumer.Kind == wire.ConsumerKindGroup,
		partitions: partitions, next: make(map[uint32]uint64), consumed: make(map[uint32]uint64), synced: partitions != nil}
}

func (cfg *ConsumerConfig) normalize() error {
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultConsumerBatch
	}
	if cfg.BatchSize > ConsumerBatchMax {
		return fmt.Errorf("consumer: BatchSize %d exceeds %d", cfg.BatchSize, ConsumerBatchMax)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultConsumerPollInterval
	}
	if cfg.PollInterval < ConsumerPollIntervalMin || cfg.PollInterval > ConsumerPollIntervalMax {
		return fmt.Errorf("consumer: PollInterval %s is outside %s..%s", cfg.PollInterval, ConsumerPollIntervalMin, ConsumerPollIntervalMax)
	}
	if cfg.Commit > CommitManual {
		return fmt.Errorf("consumer: unknown CommitMode %d", cfg.Commit)
	}
	return nil
}

// ErrConsumerClosed is returned by Next after Close.
var ErrConsumerClosed = errors.New("consumer closed")

// Next returns the next message, polling the partitions round-robin and waiting PollInterval
// after a round that found nothing. It returns when a message arrives, a request fails, or ctx
// ends (noticed between requests, so the connection stays usable).
func (k *Consumer) Next(ctx context.Context) (ReceivedMessage, error) {
	for {
		if k.closed {
			return ReceivedMessage{}, ErrConsumerClosed
		}
		if err := ctx.Err(); err != nil {
			return ReceivedMessage{}, err // before any I/O: a call cut short breaks the connection
		}
		if len(k.buffered) > 0 {
			m := k.buffered[0]
			k.buffered = k.buffered[1:]
			k.consumed[m.Partition] = m.Offset
			k.next[m.Partition] = m.Offset + 1
			return m, nil
		}
		// ctx cancels the wait between polls, not a request in flight: an exchange cut short would
		// break the connection (and a group membership with it). The Client's response budget
		// bounds each request.
		io := context.WithoutCancel(ctx)
		if k.cfg.Commit == CommitAfterConsume {
			if err := k.Commit(io); err != nil {
				return ReceivedMessage{}, err
			}
		}
		found, err := k.pollRound(io)
		if err != nil {
			return ReceivedMessage{}, err
		}
		if !found {
			if err := sleepCtx(ctx, k.cfg.PollInterval); err != nil {
				return ReceivedMessage{}, err
			}
		}
	}
}

// pollRound polls partitions in turn until one returns messages or each was tried once.
func (k *Consumer) pollRound(ctx context.Context) (bool, error) {
	if !k.synced {
		if err := k.sync(ctx); err != nil {
			return false, err
		}
	}
	if k.group && len(k.partitions) == 0 {
		k.synced = false // nothing assigned (more members than partitions): ask again next round
		return false, nil
	}
	for range len(k.partitions) {
		p := k.partitions[k.turn%len(k.partitions)]
		k.turn = (k.turn + 1) % len(k.partitions)
		reply, err := k.c.PollMessages(ctx, k.pollRequest(p))
		if err != nil {
			return false, fmt.Errorf("consumer: poll partition %d: %w", p, err)
		}
		if reply.PartitionID == wire.PollResyncPartitionID {
			k.synced = false // the group rebalanced: fetch the new assignment next round
			return false, nil
		}
		for _, m := range reply.Messages {
			k.buffered = append(k.buffered, ReceivedMessage{Partition: p, PolledMessage: m})
		}
		if len(reply.Messages) > 0 {
			return true, nil
		}
	}
	return false, nil
}

func (k *Consumer) pollRequest(p uint32) wire.PollMessagesRequest {
	strategy := wire.PollingStrategy{Kind: wire.PollNext}
	if off, ok := k.next[p]; ok {
		strategy = wire.PollingStrategy{Kind: wire.PollOffset, Value: off}
	}
	return wire.PollMessagesRequest{Consumer: k.consumer, Stream: k.cfg.Stream, Topic: k.cfg.Topic,
		Partition: wire.SomePartition(p), Strategy: strategy, Count: k.cfg.BatchSize, AutoCommit: k.cfg.Commit == CommitOnPoll}
}

// sync fetches the group assignment. Positions of partitions that stay assigned are kept; the
// others restart from the group's stored offset.
func (k *Consumer) sync(ctx context.Context) error {
	a, err := k.c.SyncConsumerGroup(ctx, k.cfg.Stream, k.cfg.Topic, k.consumer.ID)
	if err != nil {
		return fmt.Errorf("consumer: sync group %s: %w", k.consumer.ID, err)
	}
	if len(a.Partitions) > consumerPartitionsMax {
		return fmt.Errorf("consumer: assignment of %d partitions exceeds %d", len(a.Partitions), consumerPartitionsMax)
	}
	keep := make(map[uint32]bool, len(a.Partitions))
	for _, p := range a.Partitions {
		keep[p] = true
	}
	for p := range k.next {
		if !keep[p] {
			delete(k.next, p)
			delete(k.consumed, p) // no longer ours: its offset is the new owner's to store
		}
	}
	k.partitions, k.turn, k.synced = a.Partitions, 0, true
	return nil
}

// Partitions returns the partitions the consumer polls (for a group: the last assignment).
func (k *Consumer) Partitions() []uint32 { return append([]uint32(nil), k.partitions...) }

// StoreOffset stores offset for partition under this consumer (or group), acknowledged by quorum.
func (k *Consumer) StoreOffset(ctx context.Context, partition uint32, offset uint64) error {
	if err := k.c.StoreConsumerOffset(ctx, k.consumer, k.cfg.Stream, k.cfg.Topic, wire.SomePartition(partition), offset); err != nil {
		return fmt.Errorf("consumer: store offset %d of partition %d: %w", offset, partition, err)
	}
	if k.consumed[partition] == offset {
		delete(k.consumed, partition)
	}
	return nil
}

// Commit stores the offset of the last message Next returned from each partition, if not yet
// stored.
func (k *Consumer) Commit(ctx context.Context) error {
	for p, off := range k.consumed {
		if err := k.StoreOffset(ctx, p, off); err != nil {
			return err
		}
	}
	return nil
}

// Close commits (CommitAfterConsume), leaves the group and makes Next fail. The Client stays
// open. Messages polled but not returned by Next are not committed and will be delivered again.
func (k *Consumer) Close(ctx context.Context) error {
	if k.closed {
		return nil
	}
	k.closed = true
	var errs []error
	if k.cfg.Commit == CommitAfterConsume {
		errs = append(errs, k.Commit(ctx))
	}
	if k.group {
		if err := k.c.LeaveConsumerGroup(ctx, k.cfg.Stream, k.cfg.Topic, k.consumer.ID); err != nil {
			errs = append(errs, fmt.Errorf("consumer: leave group %s: %w", k.consumer.ID, err))
		}
	}
	return errors.Join(errs...)
}
