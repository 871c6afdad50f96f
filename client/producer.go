package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Producer defaults and bounds. A batch never exceeds the server's own batch limits, and the buffer
// bound keeps a stalled server from growing the producer's memory without limit.
const (
	DefaultBatchMessages  = 1000
	DefaultBatchBytes     = 1 << 20
	DefaultLinger         = 5 * time.Millisecond
	DefaultBufferMessages = 10_000
	BatchMessagesMax      = 100_000
	BatchBytesMax         = 8 << 20
	LingerMax             = time.Minute
	BufferMessagesMax     = 1_000_000
	producerErrorsKept    = 16 // errors remembered between two Flush calls (the rest are counted)
)

// ErrProducerClosed is returned by Send and Flush after Close.
var ErrProducerClosed = errors.New("producer closed")

// Message is one message handed to a Producer. The producer keeps the slices until the batch is
// sent: do not modify them after Send.
type Message struct {
	ID          [16]byte // zero: the producer picks a random id (the server never mints ids)
	Payload     []byte   // must not be empty
	UserHeaders []byte   // TLV block (wire.TLVPair.Append), optional
	Key         []byte   // the messages key when the producer partitions by key (1..255 bytes)
}

// PartitionStrategy chooses where a producer's batches go.
type PartitionStrategy struct {
	kind      wire.PartitioningKind
	partition uint32
}

// PartitionBalanced lets the server spread batches round-robin over the partitions.
func PartitionBalanced() PartitionStrategy {
	return PartitionStrategy{kind: wire.PartitioningBalanced}
}

// PartitionByID sends every batch to one partition.
func PartitionByID(id uint32) PartitionStrategy {
	return PartitionStrategy{kind: wire.PartitioningPartitionID, partition: id}
}

// PartitionByKey sends each message to the partition the server derives from Message.Key, so
// messages with the same key keep their order. Messages are batched per key.
func PartitionByKey() PartitionStrategy {
	return PartitionStrategy{kind: wire.PartitioningMessagesKey}
}

// ProducerConfig configures NewProducer. Zero fields take the defaults above.
type ProducerConfig struct {
	Stream, Topic  wire.Identifier
	Partitioning   PartitionStrategy // zero value: balanced
	BatchMessages  int               // send a batch once it holds this many messages
	BatchBytes     int               // ... or this many payload and header bytes
	Linger         time.Duration     // ... or once its oldest message waited this long; negative: no wait
	BufferMessages int               // messages buffered before Send blocks
	// OnError, when set, is called from the producer's goroutine for every failed batch, in
	// addition to the error being reported by the next Flush or Close.
	OnError func(*ProduceError)
}

// ProduceError is one batch the server did not accept (or whose outcome is unknown: see
// IsTimeout). Messages holds the batch so the caller may retry or log it.
type ProduceError struct {
	Partitioning wire.Partitioning
	Messages     []wire.BatchMessageInput
	Err          error
}

func (e *ProduceError) Error() string {
	return fmt.Sprintf("send batch of %d message(s) (%s partitioning): %v", len(e.Messages), partitioningName(e.Partitioning), e.Err)
}

func (e *ProduceError) Unwrap() error { return e.Err }

func partitioningName(p wire.Partitioning) string {
	switch p.Kind {
	case wire.PartitioningPartitionID:
		return fmt.Sprintf("partition %d", p.PartitionID)
	case wire.PartitioningMessagesKey:
		return fmt.Sprintf("key %q", p.Key)
	}
	return "balanced"
}

// Producer batches messages by size and linger time and sends them with one Client. Send only
// enqueues; Flush waits for everything enqueued before it and reports failed batches.
type Producer struct {
	c   *Client
	cfg ProducerConfig

	in    chan producerItem
	stop  chan struct{} // closed by Close
	final chan error    // the last report, sent once when the goroutine ends

	mu     sync.RWMutex // read: an enqueue in progress; write: Close
	closed bool
}

// producerItem is a message, or (msg == nil) a flush barrier answered on ack.
type producerItem struct {
	msg *Message
	ack chan error
}

// NewProducer validates cfg and starts the producer's sending goroutine; Close stops it.
func NewProducer(c *Client, cfg ProducerConfig) (*Producer, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	p := &Producer{c: c, cfg: cfg, in: make(chan producerItem, cfg.BufferMessages),
		stop: make(chan struct{}), final: make(chan error, 1)}
	go p.run()
	return p, nil
}

func (cfg *ProducerConfig) normalize() error {
	if cfg.Partitioning.kind == 0 {
		cfg.Partitioning = PartitionBalanced()
	}
	defaults := []struct {
		v        *int
		def, max int
		name     string
	}{
		{&cfg.BatchMessages, DefaultBatchMessages, BatchMessagesMax, "BatchMessages"},
		{&cfg.BatchBytes, DefaultBatchBytes, BatchBytesMax, "BatchBytes"},
		{&cfg.BufferMessages, DefaultBufferMessages, BufferMessagesMax, "BufferMessages"},
	}
	for _, d := range defaults {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 || *d.v > d.max {
			return fmt.Errorf("producer: %s %d is outside 1..%d", d.name, *d.v, d.max)
		}
	}
	switch {
	case cfg.Linger == 0:
		cfg.Linger = DefaultLinger
	case cfg.Linger < 0:
		cfg.Linger = 0
	case cfg.Linger > LingerMax:
		return fmt.Errorf("producer: Linger %s exceeds %s", cfg.Linger, LingerMax)
	}
	return nil
}

// Send enqueues messages. It blocks while the buffer is full, until ctx ends (then the messages
// not yet enqueued are dropped and the context error is returned with their count).
func (p *Producer) Send(ctx context.Context, msgs ...Message) error {
	for i := range msgs {
		if err := p.validate(&msgs[i]); err != nil {
			return fmt.Errorf("producer: message %d: %w", i, err)
		}
	}
	for i := range msgs {
		m := msgs[i]
		if err := p.enqueue(ctx, producerItem{msg: &m}); err != nil {
			return fmt.Errorf("producer: %d of %d message(s) not enqueued: %w", len(msgs)-i, len(msgs), err)
		}
	}
	return nil
}

func (p *Producer) validate(m *Message) error {
	switch {
	case len(m.Payload) == 0:
		return &Error{Code: wire.ErrEmptyMessagePayload, Command: wire.CodeSendMessages, Err: errors.New("empty payload")}
	case len(m.Payload) > wire.BatchPayloadBytesMax:
		return &Error{Code: wire.ErrTooBigMessagePayload, Command: wire.CodeSendMessages,
			Err: fmt.Errorf("payload is %d bytes, the limit is %d", len(m.Payload), wire.BatchPayloadBytesMax)}
	case len(m.UserHeaders) > wire.BatchUserHeadersBytesMax:
		return &Error{Code: wire.ErrTooBigUserHeaders, Command: wire.CodeSendMessages,
			Err: fmt.Errorf("user headers are %d bytes, the limit is %d", len(m.UserHeaders), wire.BatchUserHeadersBytesMax)}
	case p.cfg.Partitioning.kind == wire.PartitioningMessagesKey && (len(m.Key) == 0 || len(m.Key) > 255):
		return &Error{Code: wire.ErrInvalidKeyValueLength, Command: wire.CodeSendMessages,
			Err: fmt.Errorf("partitioning by key needs a Key of 1..255 bytes, got %d", len(m.Key))}
	}
	return nil
}

// enqueue hands one item to the sending goroutine. The read lock keeps Close from stopping the
// goroutine while an item is on its way in, so nothing enqueued is ever silently dropped.
func (p *Producer) enqueue(ctx context.Context, it producerItem) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrProducerClosed
	}
	select {
	case p.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush sends everything enqueued before it and returns the batches that failed since the last
// Flush (nil when all were accepted).
func (p *Producer) Flush(ctx context.Context) error {
	ack := make(chan error, 1)
	if err := p.enqueue(ctx, producerItem{ack: ack}); err != nil {
		return fmt.Errorf("producer flush: %w", err)
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return fmt.Errorf("producer flush: %w", ctx.Err())
	}
}

// Close sends everything enqueued, stops the sending goroutine and returns the failed batches as
// Flush would. The Client stays open. If ctx ends first, Close returns its error and the goroutine
// still finishes the buffered batches in the background.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrProducerClosed
	}
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	select {
	case err := <-p.final:
		return err
	case <-ctx.Done():
		return fmt.Errorf("producer close: %w", ctx.Err())
	}
}
