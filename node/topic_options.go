package node

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Our create-only topic options (DESIGN.md "durability"), on top of the
// upstream catalog that wire.ApplyTopicOptions validates.
const (
	optDurability               = "durability"
	optConsumerOffsetDurability = "consumer_offset_durability"
)

// optionCode maps an option validation error to its status code.
func optionCode(err error) wire.ErrorCode {
	var oe *wire.OptionError
	if errors.As(err, &oe) {
		return oe.Code
	}
	return wire.ErrInvalidOptionValue
}

// splitDurability takes our durability keys out of an options block.
func splitDurability(opts wire.Options, defDurability, defOffsets metadata.Durability) (wire.Options, metadata.Durability, metadata.Durability, metadata.OptionKey, error) {
	rest := make(wire.Options, 0, len(opts))
	durability, offsets := defDurability, defOffsets
	var explicit metadata.OptionKey
	for _, o := range opts {
		switch o.Key {
		case optDurability, optConsumerOffsetDurability:
			d, ok := metadata.ParseDurability(string(o.Value))
			if o.Kind != wire.KindString || !ok {
				return nil, 0, 0, 0, &wire.OptionError{Code: wire.ErrInvalidOptionValue, Key: o.Key, Reason: `must be "replicated" or "persisted"`}
			}
			if o.Key == optDurability {
				durability, explicit = d, explicit|metadata.OptDurability
			} else {
				offsets, explicit = d, explicit|metadata.OptConsumerOffsetDurability
			}
		default:
			rest = append(rest, o)
		}
	}
	return rest, durability, offsets, explicit, nil
}

// explicitKeys records which catalog keys the client set. A zero
// message_expiry, max_topic_size, segment_size or
// size_of_messages_required_to_save means "server default": the key stays
// derived.
func explicitKeys(opts wire.Options) metadata.OptionKey {
	var k metadata.OptionKey
	for _, o := range opts {
		if meansServerDefault(o) {
			continue
		}
		switch o.Key {
		case wire.OptCompressionAlgorithm:
			k |= metadata.OptCompression
		case wire.OptMessageExpiry:
			k |= metadata.OptMessageExpiry
		case wire.OptMaxTopicSize:
			k |= metadata.OptMaxTopicSize
		case wire.OptSegmentSize:
			k |= metadata.OptSegmentSize
		case wire.OptEnforceFsync:
			k |= metadata.OptEnforceFsync
		case wire.OptMessagesRequiredToSave:
			k |= metadata.OptMessagesRequiredToSave
		case wire.OptSizeOfMessagesRequiredToSave:
			k |= metadata.OptSizeOfMessagesRequiredToSave
		case wire.OptPreallocateSegments:
			k |= metadata.OptPreallocateSegments
		}
	}
	return k
}

func meansServerDefault(o wire.Option) bool {
	switch o.Key {
	case wire.OptMessageExpiry, wire.OptMaxTopicSize, wire.OptSegmentSize, wire.OptSizeOfMessagesRequiredToSave:
	default:
		return false
	}
	switch o.Kind {
	case wire.KindUint64:
		return len(o.Value) == 8 && binary.LittleEndian.Uint64(o.Value) == 0
	case wire.KindString:
		v := strings.ToLower(strings.TrimSpace(string(o.Value)))
		return v == "0" || v == "server_default" || v == "default"
	}
	return false
}

// createTopicCommand resolves every option of a CreateTopic on this node
// (the primary) so the replicated command carries final values.
func (n *Node) createTopicCommand(req wire.CreateTopicRequest) (metadata.CreateTopic, wire.ErrorCode) {
	if req.PartitionsCount > metadata.PartitionsPerOpMax {
		return metadata.CreateTopic{}, wire.ErrTooManyPartitions
	}
	defDur, defOff := n.durabilityDefaults()
	opts, durability, offsets, explicitDur, err := splitDurability(req.Options, defDur, defOff)
	if err != nil {
		return metadata.CreateTopic{}, optionCode(err)
	}
	cfg, err := wire.ApplyTopicOptions(wire.DefaultTopicConfig(), opts, false, req.PartitionsCount)
	if err != nil {
		return metadata.CreateTopic{}, optionCode(err)
	}
	return metadata.CreateTopic{
		Stream: wireIdent(req.Stream), Name: req.Name, PartitionsCount: req.PartitionsCount,
		MessageExpiry: cfg.MessageExpiryMicros, Compression: metadata.Compression(cfg.Compression),
		MaxTopicSize: cfg.MaxTopicSizeBytes,
		Options: metadata.TopicOptions{
			SegmentSize: cfg.SegmentSizeBytes, EnforceFsync: cfg.EnforceFsync,
			MessagesRequiredToSave: cfg.MessagesRequiredToSave, SizeOfMessagesRequiredToSave: cfg.SizeOfMessagesRequiredToS,
			PreallocateSegments: cfg.PreallocateSegments, Durability: durability, ConsumerOffsetDurability: offsets,
		},
		ExplicitOptions: explicitKeys(opts) | explicitDur,
	}, wire.OK
}

// updateTopicCommand overlays the updatable options on the topic's current
// values. A missing topic is left for apply to reject with its code.
func (n *Node) updateTopicCommand(req wire.UpdateTopicRequest) (metadata.UpdateTopic, wire.ErrorCode) {
	stream, topic := wireIdent(req.Stream), wireIdent(req.Topic)
	base := wire.DefaultTopicConfig()
	var explicit metadata.OptionKey
	if t, code := n.state.GetTopic(stream, topic); code == metadata.CodeOK {
		base = topicConfig(t)
		explicit = t.ExplicitOptions
	}
	cfg, err := wire.ApplyTopicOptions(base, req.Options, true, 0)
	if err != nil {
		return metadata.UpdateTopic{}, optionCode(err)
	}
	updatable := metadata.OptCompression | metadata.OptMessageExpiry | metadata.OptMaxTopicSize
	return metadata.UpdateTopic{
		Stream: stream, Topic: topic, Name: req.Name,
		MessageExpiry: cfg.MessageExpiryMicros, Compression: metadata.Compression(cfg.Compression),
		MaxTopicSize:    cfg.MaxTopicSizeBytes,
		ExplicitOptions: explicit&^updatable | explicitKeys(req.Options),
	}, wire.OK
}

func topicConfig(t metadata.Topic) wire.TopicConfig {
	return wire.TopicConfig{
		Compression: uint8(t.Compression), MessageExpiryMicros: t.MessageExpiry, MaxTopicSizeBytes: t.MaxTopicSize,
		SegmentSizeBytes: t.Options.SegmentSize, EnforceFsync: t.Options.EnforceFsync,
		MessagesRequiredToSave: t.Options.MessagesRequiredToSave, SizeOfMessagesRequiredToS: t.Options.SizeOfMessagesRequiredToSave,
		PreallocateSegments: t.Options.PreallocateSegments,
	}
}

// topicOptionBlocks renders a topic's options for responses: the keys the
// client sent under options, the server-filled ones under derived_options.
func topicOptionBlocks(t metadata.Topic) (explicit, derived wire.Options) {
	compression := "none"
	if t.Compression == metadata.CompressionGzip {
		compression = "gzip"
	}
	all := []struct {
		bit metadata.OptionKey
		opt wire.Option
	}{
		{metadata.OptCompression, wire.OptionString(wire.OptCompressionAlgorithm, compression)},
		{metadata.OptMessageExpiry, wire.OptionUint64(wire.OptMessageExpiry, t.MessageExpiry)},
		{metadata.OptMaxTopicSize, wire.OptionUint64(wire.OptMaxTopicSize, t.MaxTopicSize)},
		{metadata.OptSegmentSize, wire.OptionUint64(wire.OptSegmentSize, t.Options.SegmentSize)},
		{metadata.OptEnforceFsync, wire.OptionBool(wire.OptEnforceFsync, t.Options.EnforceFsync)},
		{metadata.OptMessagesRequiredToSave, wire.OptionUint32(wire.OptMessagesRequiredToSave, t.Options.MessagesRequiredToSave)},
		{metadata.OptSizeOfMessagesRequiredToSave, wire.OptionUint64(wire.OptSizeOfMessagesRequiredToSave, t.Options.SizeOfMessagesRequiredToSave)},
		{metadata.OptPreallocateSegments, wire.OptionBool(wire.OptPreallocateSegments, t.Options.PreallocateSegments)},
		{metadata.OptDurability, wire.OptionString(optDurability, t.Options.Durability.String())},
		{metadata.OptConsumerOffsetDurability, wire.OptionString(optConsumerOffsetDurability, t.Options.ConsumerOffsetDurability.String())},
	}
	for _, o := range all {
		if t.ExplicitOptions&o.bit != 0 {
			explicit = append(explicit, o.opt)
		} else {
			derived = append(derived, o.opt)
		}
	}
	return explicit, derived
}

func (n *Node) durabilityDefaults() (metadata.Durability, metadata.Durability) {
	d, ok := metadata.ParseDurability(n.cfg.Partition.Durability)
	if !ok {
		d = metadata.DurabilityReplicated
	}
	o, ok := metadata.ParseDurability(n.cfg.Partition.ConsumerOffsetDurability)
	if !ok {
		o = metadata.DurabilityReplicated
	}
	return d, o
}
