package wire

import (
	"errors"
	"fmt"
)

// IdentKind is the kind byte of an Identifier.
type IdentKind uint8

const (
	IdentNumeric IdentKind = 1 // value is a u32 (length 4)
	IdentString  IdentKind = 2 // value is 1..255 bytes of UTF-8
)

// Identifier names a stream, topic, user or consumer group by numeric id or by name (§4.1):
// [kind u8][len u8][value].
type Identifier struct {
	Kind    IdentKind
	Numeric uint32 // when Kind == IdentNumeric
	Name    string // when Kind == IdentString
}

// NumericID returns a numeric identifier.
func NumericID(id uint32) Identifier { return Identifier{Kind: IdentNumeric, Numeric: id} }

// NamedID returns a string identifier.
func NamedID(name string) Identifier { return Identifier{Kind: IdentString, Name: name} }

func (id Identifier) String() string {
	if id.Kind == IdentNumeric {
		return fmt.Sprintf("#%d", id.Numeric)
	}
	return fmt.Sprintf("%q", id.Name)
}

// Validate reports whether the identifier can be encoded.
func (id Identifier) Validate() error {
	switch id.Kind {
	case IdentNumeric:
		return nil
	case IdentString:
		return checkName8("identifier", id.Name)
	}
	return fmt.Errorf("identifier: kind %d is not 1 (numeric) or 2 (string)", id.Kind)
}

// Append encodes the identifier. An invalid identifier (see Validate) is encoded as-is; the server
// rejects it.
func (id Identifier) Append(b []byte) []byte {
	if id.Kind == IdentNumeric {
		b = append(b, byte(IdentNumeric), 4)
		return appendU32(b, id.Numeric)
	}
	b = append(b, byte(id.Kind))
	return appendName8(b, id.Name)
}

func (d *decoder) ident(field string) Identifier {
	kind := IdentKind(d.u8(field))
	n := d.u8(field)
	if d.failed() {
		return Identifier{}
	}
	switch kind {
	case IdentNumeric:
		if n != 4 {
			d.fail(field, "numeric identifier length %d, must be 4", n)
			return Identifier{}
		}
		return NumericID(d.u32(field))
	case IdentString:
		if n == 0 {
			d.fail(field, "string identifier length 0, must be 1..255")
			return Identifier{}
		}
		return NamedID(d.utf8(field, d.take(field, int(n))))
	}
	d.fail(field, "identifier kind %d is not 1 (numeric) or 2 (string)", kind)
	return Identifier{}
}

// DecodeIdentifier decodes a body that is exactly one identifier.
func DecodeIdentifier(b []byte) (Identifier, error) {
	d := newDecoder("Identifier", b)
	id := d.ident("identifier")
	d.end()
	return id, d.err()
}

// ConsumerKind is the kind byte of a Consumer.
type ConsumerKind uint8

const (
	ConsumerKindSingle ConsumerKind = 1
	ConsumerKindGroup  ConsumerKind = 2
)

// Consumer is [kind u8][Identifier]: a single consumer or a consumer group.
type Consumer struct {
	Kind ConsumerKind
	ID   Identifier
}

// Append encodes the consumer.
func (c Consumer) Append(b []byte) []byte {
	b = append(b, byte(c.Kind))
	return c.ID.Append(b)
}

func (d *decoder) consumer(field string) Consumer {
	kind := ConsumerKind(d.u8(field))
	if !d.failed() && kind != ConsumerKindSingle && kind != ConsumerKindGroup {
		d.fail(field+".kind", "consumer kind %d is not 1 (consumer) or 2 (group)", kind)
	}
	return Consumer{Kind: kind, ID: d.ident(field)}
}

// PartitioningKind is the kind byte of a Partitioning.
type PartitioningKind uint8

const (
	PartitioningBalanced    PartitioningKind = 1 // length 0
	PartitioningPartitionID PartitioningKind = 2 // length 4, u32
	PartitioningMessagesKey PartitioningKind = 3 // length 1..255, raw bytes
)

// Partitioning is [kind u8][len u8][value]: how SendMessages picks a partition.
type Partitioning struct {
	Kind        PartitioningKind
	PartitionID uint32 // for PartitioningPartitionID
	Key         []byte // for PartitioningMessagesKey
}

// Append encodes the partitioning.
func (p Partitioning) Append(b []byte) []byte {
	switch p.Kind {
	case PartitioningPartitionID:
		b = append(b, byte(p.Kind), 4)
		return appendU32(b, p.PartitionID)
	case PartitioningMessagesKey:
		b = append(b, byte(p.Kind))
		return appendBytes8(b, p.Key)
	}
	return append(b, byte(p.Kind), 0)
}

// Size is the encoded length in bytes.
func (p Partitioning) Size() int {
	switch p.Kind {
	case PartitioningPartitionID:
		return 6
	case PartitioningMessagesKey:
		return 2 + len(p.Key)
	}
	return 2
}

func (d *decoder) partitioning(field string) Partitioning {
	kind := PartitioningKind(d.u8(field))
	n := d.u8(field)
	if d.failed() {
		return Partitioning{}
	}
	switch kind {
	case PartitioningBalanced:
		if n != 0 {
			d.fail(field, "balanced partitioning length %d, must be 0", n)
		}
		return Partitioning{Kind: kind}
	case PartitioningPartitionID:
		if n != 4 {
			d.fail(field, "partition-id partitioning length %d, must be 4", n)
			return Partitioning{}
		}
		return Partitioning{Kind: kind, PartitionID: d.u32(field)}
	case PartitioningMessagesKey:
		if n == 0 {
			d.fail(field, "messages-key partitioning length 0, must be 1..255")
			return Partitioning{}
		}
		return Partitioning{Kind: kind, Key: d.take(field+".key", int(n))}
	}
	d.fail(field+".kind", "partitioning kind %d is not 1, 2 or 3", kind)
	return Partitioning{}
}

// PollingKind is the kind byte of a PollingStrategy.
type PollingKind uint8

const (
	PollOffset    PollingKind = 1
	PollTimestamp PollingKind = 2
	PollFirst     PollingKind = 3
	PollLast      PollingKind = 4
	PollNext      PollingKind = 5
)

// PollingStrategy is [kind u8][value u64] (value ignored for First, Last, Next).
type PollingStrategy struct {
	Kind  PollingKind
	Value uint64
}

// Append encodes the strategy.
func (p PollingStrategy) Append(b []byte) []byte {
	b = append(b, byte(p.Kind))
	return appendU64(b, p.Value)
}

func (d *decoder) pollingStrategy(field string) PollingStrategy {
	kind := PollingKind(d.u8(field))
	if !d.failed() && (kind < PollOffset || kind > PollNext) {
		d.fail(field+".kind", "polling kind %d is not 1..5", kind)
	}
	return PollingStrategy{Kind: kind, Value: d.u64(field)}
}

// OptPartition is [flag u8][partition u32], always 5 bytes; flag 1 = present.
type OptPartition struct {
	Present bool
	ID      uint32
}

// SomePartition returns a present partition id.
func SomePartition(id uint32) OptPartition { return OptPartition{Present: true, ID: id} }

// Append encodes the optional partition (absent writes flag 0 and id 0).
func (p OptPartition) Append(b []byte) []byte {
	if !p.Present {
		return append(b, 0, 0, 0, 0, 0)
	}
	b = append(b, 1)
	return appendU32(b, p.ID)
}

func (d *decoder) optPartition(field string) OptPartition {
	present := d.bool(field)
	id := d.u32(field)
	if !present {
		id = 0
	}
	return OptPartition{Present: present, ID: id}
}

// AckLevel is the acknowledgement byte of partition-plane writes.
type AckLevel uint8

const (
	AckNone   AckLevel = 0
	AckQuorum AckLevel = 1 // what the SDKs send
)

func (d *decoder) ackLevel(field string) AckLevel {
	v := AckLevel(d.u8(field))
	if !d.failed() && v > AckQuorum {
		d.fail(field, "ack level %d is not 0 or 1", v)
	}
	return v
}

// Exported primitive decoders for other wire files (message batches) and callers that decode a prefix.

// ReadIdentifier decodes one identifier at the start of b and returns it with the bytes consumed.
func ReadIdentifier(b []byte) (Identifier, int, error) {
	d := newDecoder("Identifier", b)
	id := d.ident("identifier")
	return id, d.off, d.err()
}

// ReadConsumer decodes one Consumer at the start of b and returns it with the bytes consumed.
func ReadConsumer(b []byte) (Consumer, int, error) {
	d := newDecoder("Consumer", b)
	c := d.consumer("consumer")
	return c, d.off, d.err()
}

// ReadPartitioning decodes one Partitioning at the start of b and returns it with the bytes consumed.
func ReadPartitioning(b []byte) (Partitioning, int, error) {
	d := newDecoder("Partitioning", b)
	p := d.partitioning("partitioning")
	return p, d.off, d.err()
}

// ReadPollingStrategy decodes one PollingStrategy at the start of b.
func ReadPollingStrategy(b []byte) (PollingStrategy, int, error) {
	d := newDecoder("PollingStrategy", b)
	p := d.pollingStrategy("strategy")
	return p, d.off, d.err()
}

// ReadOptPartition decodes one optional partition at the start of b.
func ReadOptPartition(b []byte) (OptPartition, int, error) {
	d := newDecoder("OptPartition", b)
	p := d.optPartition("partition")
	return p, d.off, d.err()
}

// ErrorCodeOf extracts the wire error code carried by err: a BodyError's Code, an ErrorCode, or
// InvalidCommand for any other non-nil error.
func ErrorCodeOf(err error) ErrorCode {
	if err == nil {
		return OK
	}
	var be *BodyError
	if errors.As(err, &be) {
		return be.Code
	}
	var code ErrorCode
	if errors.As(err, &code) {
		return code
	}
	return ErrInvalidCommand
}
