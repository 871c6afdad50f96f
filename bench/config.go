package bench

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/lodestream/lodestream/client"
)

// Workload names one benchmark shape (the upstream iggy-bench vocabulary, reduced).
type Workload string

const (
	PinnedProducer              Workload = "pinned-producer"
	PinnedConsumer              Workload = "pinned-consumer"
	PinnedProducerAndConsumer   Workload = "pinned-producer-and-consumer"
	BalancedProducer            Workload = "balanced-producer"
	BalancedConsumer            Workload = "balanced-consumer"
	BalancedProducerAndConsumer Workload = "balanced-producer-and-consumer"
	DefaultAddress                       = "127.0.0.1:8090"
	DefaultMessageSizeBytes              = 1000
	DefaultMessagesPerBatch              = 1000
	DefaultMessageBatches                = 1000
	DefaultActors                        = 8
	DefaultBalancedPartitions            = 24
	DefaultWarmup                        = 2 * time.Second
	DefaultDurationMax                   = 5 * time.Minute
	DurabilityReplicated                 = "replicated"
	DurabilityPersisted                  = "persisted"
	actorsMax                            = 1024
	streamsMax                           = 1024
	partitionsMax                        = 1024
	messagesPerBatchMax                  = 1_000_000
	messageBatchesMax                    = 100_000_000
	batchFrameBytesBudget                = 60 << 20 // stay below the 64 MiB frame limit with headers
	messageFrameOverheadBytes            = 48
	batchHeaderBytes                     = 256
	messageSizeBytesMax                  = 10_000_000
)

// Workloads lists every workload in help order.
var Workloads = []Workload{PinnedProducer, PinnedConsumer, PinnedProducerAndConsumer,
	BalancedProducer, BalancedConsumer, BalancedProducerAndConsumer}

// ParseWorkload accepts a workload name.
func ParseWorkload(s string) (Workload, error) {
	for _, w := range Workloads {
		if string(w) == s {
			return w, nil
		}
	}
	names := make([]string, len(Workloads))
	for i, w := range Workloads {
		names[i] = string(w)
	}
	return "", fmt.Errorf("unknown workload %q (one of: %s)", s, strings.Join(names, ", "))
}

// Pinned reports whether the workload uses one stream per producer.
func (w Workload) Pinned() bool {
	return w == PinnedProducer || w == PinnedConsumer || w == PinnedProducerAndConsumer
}

// Produces reports whether the workload runs producers.
func (w Workload) Produces() bool { return w != PinnedConsumer && w != BalancedConsumer }

// Consumes reports whether the workload runs consumers.
func (w Workload) Consumes() bool { return w != PinnedProducer && w != BalancedProducer }

// Config is one benchmark run. Zero Streams/Partitions/MessageBatches mean "derive from the workload"
// (see Normalize).
type Config struct {
	Workload Workload
	Address  string
	// Transport carries the run's connections (default TCP).
	Transport        client.Transport
	AllowRemote      bool
	Username         string
	Password         string
	Producers        int
	Consumers        int
	Streams          int
	Partitions       int
	MessageSizeBytes int
	MessagesPerBatch int
	MessageBatches   int    // per producer; 0 = from TotalDataBytes or DefaultMessageBatches
	TotalDataBytes   uint64 // payload bytes across all producers; 0 = use MessageBatches
	RateLimitMBps    float64
	Durability       string
	Warmup           time.Duration
	DurationMax      time.Duration
	Keep             bool
	Recreate         bool
	// Verify makes consumers check every polled batch checksum, offset and payload size.
	Verify bool
}

// DefaultConfig returns the upstream iggy-bench defaults for w.
func DefaultConfig(w Workload) Config {
	return Config{
		Workload:         w,
		Address:          DefaultAddress,
		Transport:        client.TransportTCP,
		Username:         "iggy",
		Password:         "iggy",
		Producers:        DefaultActors,
		Consumers:        DefaultActors,
		MessageSizeBytes: DefaultMessageSizeBytes,
		MessagesPerBatch: DefaultMessagesPerBatch,
		Durability:       DurabilityReplicated,
		Warmup:           DefaultWarmup,
		DurationMax:      DefaultDurationMax,
	}
}

// Normalize fills derived values and validates every field; the error names the flag at fault.
func (c *Config) Normalize() error {
	if _, err := ParseWorkload(string(c.Workload)); err != nil {
		return err
	}
	if err := CheckAddress(c.Address, c.AllowRemote); err != nil {
		return err
	}
	if c.Transport == "" {
		c.Transport = client.TransportTCP
	}
	if _, err := client.ParseTransport(string(c.Transport)); err != nil {
		return fmt.Errorf("--transport: %w", err)
	}
	if c.Username == "" {
		return errors.New("--username must not be empty")
	}
	if c.Workload.Produces() {
		if err := inRange("--producers", c.Producers, 1, actorsMax); err != nil {
			return err
		}
	} else {
		c.Producers = 0
	}
	if c.Workload.Consumes() {
		if err := inRange("--consumers", c.Consumers, 1, actorsMax); err != nil {
			return err
		}
	} else {
		c.Consumers = 0
	}
	if c.Streams == 0 {
		c.Streams = 1
		if c.Workload.Pinned() {
			c.Streams = max(c.Producers, c.Consumers)
		}
	}
	if c.Partitions == 0 {
		c.Partitions = 1
		if !c.Workload.Pinned() {
			c.Partitions = DefaultBalancedPartitions
		}
	}
	if err := inRange("--streams", c.Streams, 1, streamsMax); err != nil {
		return err
	}
	if err := inRange("--partitions", c.Partitions, 1, partitionsMax); err != nil {
		return err
	}
	if err := inRange("--message-size", c.MessageSizeBytes, 1, messageSizeBytesMax); err != nil {
		return err
	}
	if err := inRange("--messages-per-batch", c.MessagesPerBatch, 1, messagesPerBatchMax); err != nil {
		return err
	}
	if c.BatchWireBytes() > batchFrameBytesBudget {
		return fmt.Errorf("--message-size %d × --messages-per-batch %d makes a %d-byte batch; the limit is %d",
			c.MessageSizeBytes, c.MessagesPerBatch, c.BatchWireBytes(), batchFrameBytesBudget)
	}
	if c.MessageBatches != 0 && c.TotalDataBytes != 0 {
		return errors.New("--message-batches and --total-data are exclusive: give one")
	}
	if c.Workload.Produces() {
		if c.TotalDataBytes != 0 {
			perProducer := c.TotalDataBytes / uint64(c.Producers)
			batchBytes := uint64(c.MessageSizeBytes) * uint64(c.MessagesPerBatch)
			c.MessageBatches = int(max(1, (perProducer+batchBytes-1)/batchBytes))
			// Consumed: a second Normalize (Run normalises again) sees plain batches.
			c.TotalDataBytes = 0
		}
		if c.MessageBatches == 0 {
			c.MessageBatches = DefaultMessageBatches
		}
		if err := inRange("--message-batches", c.MessageBatches, 1, messageBatchesMax); err != nil {
			return err
		}
	}
	if c.RateLimitMBps < 0 {
		return fmt.Errorf("--rate-limit %v MB/s must not be negative (0 = unlimited)", c.RateLimitMBps)
	}
	if c.Durability != DurabilityReplicated && c.Durability != DurabilityPersisted {
		return fmt.Errorf("--durability %q must be %q or %q", c.Durability, DurabilityReplicated, DurabilityPersisted)
	}
	if c.Warmup < 0 {
		return fmt.Errorf("--warmup %s must not be negative", c.Warmup)
	}
	if c.DurationMax <= 0 {
		return fmt.Errorf("--duration-max %s must be positive", c.DurationMax)
	}
	return nil
}

// BatchPayloadBytes is the payload carried by one batch.
func (c *Config) BatchPayloadBytes() uint64 {
	return uint64(c.MessageSizeBytes) * uint64(c.MessagesPerBatch)
}

// BatchWireBytes is one encoded batch record: header plus frames.
func (c *Config) BatchWireBytes() uint64 {
	return batchHeaderBytes + uint64(c.MessagesPerBatch)*(messageFrameOverheadBytes+uint64(c.MessageSizeBytes))
}

func inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d is outside %d..%d", flag, v, lo, hi)
	}
	return nil
}

// CheckAddress accepts "host:port" whose host is a loopback IP or "localhost"; any other host is
// refused unless allowRemote, because this tool generates heavy load.
func CheckAddress(address string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("--address %q is not host:port: %w", address, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("--address %q: port %q is not 1..65535", address, port)
	}
	if allowRemote {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return fmt.Errorf("--address %q is not a loopback address (127.0.0.0/8, ::1, localhost); "+
			"pass --allow-remote to load another host on purpose", address)
	}
	return nil
}

// ParseByteSize reads "1GB", "500 MB", "1.5GiB", "4096" (bytes). Decimal units are powers of 1000,
// binary units (KiB, MiB, GiB, TiB) powers of 1024.
func ParseByteSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	number, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	multipliers := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
	m, ok := multipliers[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, unit)
	}
	v, err := strconv.ParseFloat(number, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: %q is not a positive number", s, number)
	}
	bytes := v * m
	if bytes >= 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return uint64(bytes), nil
}
