package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Topic option keys (§4.2.1).
const (
	OptCompressionAlgorithm          = "compression_algorithm"
	OptMessageExpiry                 = "message_expiry"
	OptMaxTopicSize                  = "max_topic_size"
	OptSegmentSize                   = "segment_size"
	OptEnforceFsync                  = "enforce_fsync"
	OptMessagesRequiredToSave        = "messages_required_to_save"
	OptSizeOfMessagesRequiredToSave  = "size_of_messages_required_to_save"
	OptPreallocateSegments           = "preallocate_segments"
	SegmentSizeMin                   = 1 << 20
	SegmentSizeMax                   = 1 << 30
	segmentSizeAlign                 = 512
	MessagesRequiredToSaveMax        = 16 << 20
	SizeOfMessagesRequiredToSaveMax  = 1 << 30
	PreallocatedTopicBytesMax        = 64 << 30
	Unlimited                        = math.MaxUint64 // message_expiry "never" and max_topic_size "unlimited"
	defaultSegmentSize               = 1 << 30
	defaultMessagesRequiredToSave    = 1024
	defaultSizeOfMessagesRequiredToS = 1 << 20
)

// TopicOptionDef is one entry of the topic option catalog.
type TopicOptionDef struct {
	Key         string
	Kind        ValueKind // canonical kind; the default is encoded in it
	Default     []byte
	Updatable   bool // UpdateTopic may carry it; the others are create-only
	Description string
}

func u64Bytes(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32Bytes(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// TopicOptionCatalog is the DescribeOptions scope-1 catalog, in catalog order. Stream and user scopes
// have no keys.
var TopicOptionCatalog = []TopicOptionDef{
	{OptCompressionAlgorithm, KindString, []byte("none"), true, "Payload compression of the topic: \"none\" or \"gzip\"."},
	{OptMessageExpiry, KindUint64, u64Bytes(Unlimited), true, "Message retention in microseconds (or a duration string such as \"7 days\"); u64::MAX = never expire."},
	{OptMaxTopicSize, KindUint64, u64Bytes(Unlimited), true, "Topic size cap in bytes (or a size string such as \"10 GiB\"); u64::MAX = unlimited; at least segment_size."},
	{OptSegmentSize, KindUint64, u64Bytes(defaultSegmentSize), false, "Segment file size in bytes: a multiple of 512 from 1 MiB to 1 GiB. Create-only."},
	{OptEnforceFsync, KindBool, []byte{0}, false, "Fsync segment files after every write. Create-only."},
	{OptMessagesRequiredToSave, KindUint32, u32Bytes(defaultMessagesRequiredToSave), false, "Buffered message count that triggers a save, 1..16777216. Create-only."},
	{OptSizeOfMessagesRequiredToSave, KindUint64, u64Bytes(defaultSizeOfMessagesRequiredToS), false, "Buffered byte count that triggers a save, at most 1 GiB. Create-only."},
	{OptPreallocateSegments, KindBool, []byte{0}, false, "Preallocate segment files; segment_size × partitions must stay within 64 GiB. Create-only."},
}

// OptionSpecsForScope returns the DescribeOptions payload entries for a scope.
func OptionSpecsForScope(scope DescribeScope) []OptionSpec {
	if scope != ScopeTopic {
		return nil
	}
	out := make([]OptionSpec, 0, len(TopicOptionCatalog))
	for _, def := range TopicOptionCatalog {
		out = append(out, OptionSpec{Key: def.Key, Kind: def.Kind, Default: def.Default, Description: def.Description})
	}
	return out
}

// TopicConfig is a topic's resolved option values.
type TopicConfig struct {
	Compression               uint8 // CompressionNone / CompressionGzip
	MessageExpiryMicros       uint64
	MaxTopicSizeBytes         uint64
	SegmentSizeBytes          uint64
	EnforceFsync              bool
	MessagesRequiredToSave    uint32
	SizeOfMessagesRequiredToS uint64
	PreallocateSegments       bool
}

// DefaultTopicConfig returns the catalog defaults.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		Compression:               CompressionNone,
		MessageExpiryMicros:       Unlimited,
		MaxTopicSizeBytes:         Unlimited,
		SegmentSizeBytes:          defaultSegmentSize,
		MessagesRequiredToSave:    defaultMessagesRequiredToSave,
		SizeOfMessagesRequiredToS: defaultSizeOfMessagesRequiredToS,
	}
}

// OptionError is a rejected option: Code is UnsupportedOptionKey (4041) or InvalidOptionValue (4042).
type OptionError struct {
	Code   ErrorCode
	Key    string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %q: %s (%s)", e.Key, e.Reason, e.Code)
}

// Is lets errors.Is(err, wire.ErrInvalidOptionValue) match.
func (e *OptionError) Is(target error) bool {
	code, ok := target.(ErrorCode)
	return ok && code == e.Code
}

func badValue(key, format string, args ...any) error {
	return &OptionError{Code: ErrInvalidOptionValue, Key: key, Reason: fmt.Sprintf(format, args...)}
}

// ApplyStreamOrUserOptions validates a stream or user options block: no keys exist today, so any key
// is UnsupportedOptionKey.
func ApplyStreamOrUserOptions(opts Options) error {
	if len(opts) > 0 {
		return &OptionError{Code: ErrUnsupportedOptionKey, Key: opts[0].Key, Reason: "no options are defined for this resource"}
	}
	return nil
}

// ApplyTopicOptions validates opts against the catalog and overlays them on base (DefaultTopicConfig
// for CreateTopic, the current config for UpdateTopic). update restricts the keys to the updatable
// ones. partitionsCount feeds the preallocation cap. Zero values of message_expiry, max_topic_size,
// segment_size and size_of_messages_required_to_save mean "server default" and leave base unchanged.
func ApplyTopicOptions(base TopicConfig, opts Options, update bool, partitionsCount uint32) (TopicConfig, error) {
	cfg := base
	for _, opt := range opts {
		def, ok := topicOptionDef(opt.Key)
		if !ok || (update && !def.Updatable) {
			reason := "unknown topic option"
			if ok {
				reason = "create-only option cannot be updated"
			}
			return base, &OptionError{Code: ErrUnsupportedOptionKey, Key: opt.Key, Reason: reason}
		}
		if err := applyTopicOption(&cfg, opt); err != nil {
			return base, err
		}
	}
	if cfg.MaxTopicSizeBytes != Unlimited && cfg.MaxTopicSizeBytes < cfg.SegmentSizeBytes {
		return base, badValue(OptMaxTopicSize, "%d bytes is below segment_size %d", cfg.MaxTopicSizeBytes, cfg.SegmentSizeBytes)
	}
	if cfg.PreallocateSegments {
		reserved := cfg.SegmentSizeBytes * uint64(partitionsCount)
		if partitionsCount != 0 && (reserved/uint64(partitionsCount) != cfg.SegmentSizeBytes || reserved > PreallocatedTopicBytesMax) {
			return base, badValue(OptPreallocateSegments, "segment_size × %d partitions exceeds %d bytes", partitionsCount, uint64(PreallocatedTopicBytesMax))
		}
	}
	return cfg, nil
}

func topicOptionDef(key string) (TopicOptionDef, bool) {
	for _, def := range TopicOptionCatalog {
		if def.Key == key {
			return def, true
		}
	}
	return TopicOptionDef{}, false
}

func applyTopicOption(cfg *TopicConfig, opt Option) error {
	key := opt.Key
	switch key {
	case OptCompressionAlgorithm:
		switch {
		case opt.Kind == KindUint8 && len(opt.Value) == 1 && (opt.Value[0] == CompressionNone || opt.Value[0] == CompressionGzip):
			cfg.Compression = opt.Value[0]
		case opt.Kind == KindString && strings.EqualFold(string(opt.Value), "none"):
			cfg.Compression = CompressionNone
		case opt.Kind == KindString && strings.EqualFold(string(opt.Value), "gzip"):
			cfg.Compression = CompressionGzip
		default:
			return badValue(key, "must be \"none\" or \"gzip\"")
		}
	case OptMessageExpiry:
		v, err := optionU64(opt, parseDurationMicros)
		if err != nil {
			return err
		}
		if v != 0 {
			cfg.MessageExpiryMicros = v
		}
	case OptMaxTopicSize:
		v, err := optionU64(opt, parseByteSize)
		if err != nil {
			return err
		}
		if v != 0 {
			cfg.MaxTopicSizeBytes = v
		}
	case OptSegmentSize:
		v, err := optionU64(opt, parseByteSize)
		if err != nil {
			return err
		}
		if v != 0 {
			if v < SegmentSizeMin || v > SegmentSizeMax || v%segmentSizeAlign != 0 {
				return badValue(key, "%d bytes is not a multiple of 512 within 1 MiB..1 GiB", v)
			}
			cfg.SegmentSizeBytes = v
		}
	case OptEnforceFsync, OptPreallocateSegments:
		v, err := optionBool(opt)
		if err != nil {
			return err
		}
		if key == OptEnforceFsync {
			cfg.EnforceFsync = v
		} else {
			cfg.PreallocateSegments = v
		}
	case OptMessagesRequiredToSave:
		var v uint64
		switch opt.Kind {
		case KindUint32:
			if len(opt.Value) != 4 {
				return badValue(key, "uint32 value of %d bytes", len(opt.Value))
			}
			v = uint64(binary.LittleEndian.Uint32(opt.Value))
		case KindString:
			n, err := strconv.ParseUint(strings.TrimSpace(string(opt.Value)), 10, 32)
			if err != nil {
				return badValue(key, "not a u32: %q", opt.Value)
			}
			v = n
		default:
			return badValue(key, "kind %s, want uint32 or string", opt.Kind)
		}
		if v == 0 || v > MessagesRequiredToSaveMax {
			return badValue(key, "%d is outside 1..%d", v, MessagesRequiredToSaveMax)
		}
		cfg.MessagesRequiredToSave = uint32(v)
	case OptSizeOfMessagesRequiredToSave:
		v, err := optionU64(opt, parseByteSize)
		if err != nil {
			return err
		}
		if v > SizeOfMessagesRequiredToSaveMax {
			return badValue(key, "%d bytes exceeds 1 GiB", v)
		}
		if v != 0 {
			cfg.SizeOfMessagesRequiredToS = v
		}
	}
	return nil
}

// optionU64 reads a Uint64 value verbatim or a String through parse.
func optionU64(opt Option, parse func(string) (uint64, error)) (uint64, error) {
	switch opt.Kind {
	case KindUint64:
		if len(opt.Value) != 8 {
			return 0, badValue(opt.Key, "uint64 value of %d bytes", len(opt.Value))
		}
		return binary.LittleEndian.Uint64(opt.Value), nil
	case KindString:
		v, err := parse(string(opt.Value))
		if err != nil {
			return 0, badValue(opt.Key, "%v", err)
		}
		return v, nil
	}
	return 0, badValue(opt.Key, "kind %s, want uint64 or string", opt.Kind)
}

func optionBool(opt Option) (bool, error) {
	switch {
	case opt.Kind == KindBool && len(opt.Value) == 1 && opt.Value[0] <= 1:
		return opt.Value[0] == 1, nil
	case opt.Kind == KindString:
		v, err := strconv.ParseBool(strings.TrimSpace(string(opt.Value)))
		if err == nil {
			return v, nil
		}
	}
	return false, badValue(opt.Key, "not a boolean")
}

// splitNumberUnit splits "128 MiB" / "7days" / "1h30m"-style tokens into (number, unit) pairs.
func splitNumberUnit(s string) ([][2]string, error) {
	var out [][2]string
	s = strings.TrimSpace(s)
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9') {
			i++
		}
		if i == 0 {
			return nil, fmt.Errorf("expected a number at %q", s)
		}
		num := s[:i]
		s = strings.TrimLeft(s[i:], " ")
		j := 0
		for j < len(s) && unicode.IsLetter(rune(s[j])) {
			j++
		}
		out = append(out, [2]string{num, strings.ToLower(s[:j])})
		s = strings.TrimLeft(s[j:], " ")
		if len(out) > 16 {
			return nil, fmt.Errorf("too many components")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty value")
	}
	return out, nil
}

var durationUnitsMicros = map[string]uint64{
	"us": 1, "µs": 1, "ms": 1_000, "s": 1_000_000, "sec": 1_000_000, "secs": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
	"m": 60_000_000, "min": 60_000_000, "mins": 60_000_000, "minute": 60_000_000, "minutes": 60_000_000,
	"h": 3_600_000_000, "hr": 3_600_000_000, "hrs": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
	"d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
	"w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
}

// parseDurationMicros parses "never"/"none"/"unlimited" (u64::MAX), "server_default" (0), or a
// humantime-like duration ("7 days", "1h 30m", "500ms").
func parseDurationMicros(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "never", "none", "unlimited", "never_expire":
		return Unlimited, nil
	case "server_default", "default":
		return 0, nil
	}
	parts, err := splitNumberUnit(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	var total uint64
	for _, p := range parts {
		n, err := strconv.ParseUint(p[0], 10, 64)
		mult, ok := durationUnitsMicros[p[1]]
		if err != nil || !ok || (n != 0 && mult > math.MaxUint64/n) || total+n*mult < total {
			return 0, fmt.Errorf("duration %q: bad component %s%s", s, p[0], p[1])
		}
		total += n * mult
	}
	return total, nil
}

var byteUnits = map[string]uint64{
	"": 1, "b": 1, "kb": 1_000, "mb": 1_000_000, "gb": 1_000_000_000, "tb": 1_000_000_000_000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseByteSize parses "unlimited" (u64::MAX), "server_default" (0) or "<n> <unit>" with decimal
// (KB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB) units.
func parseByteSize(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "unlimited", "none":
		return Unlimited, nil
	case "server_default", "default":
		return 0, nil
	}
	parts, err := splitNumberUnit(s)
	if err != nil || len(parts) != 1 {
		return 0, fmt.Errorf("size %q is not <number><unit>", s)
	}
	n, err := strconv.ParseUint(parts[0][0], 10, 64)
	mult, ok := byteUnits[parts[0][1]]
	if err != nil || !ok || (n != 0 && mult > math.MaxUint64/n) {
		return 0, fmt.Errorf("size %q has a bad number or unit", s)
	}
	return n * mult, nil
}

// Typed option constructors for clients.

// OptionString returns a String-valued option.
func OptionString(key, value string) Option {
	return Option{Key: key, Kind: KindString, Value: []byte(value)}
}

// OptionUint64 returns a Uint64-valued option.
func OptionUint64(key string, value uint64) Option {
	return Option{Key: key, Kind: KindUint64, Value: u64Bytes(value)}
}

// OptionUint32 returns a Uint32-valued option.
func OptionUint32(key string, value uint32) Option {
	return Option{Key: key, Kind: KindUint32, Value: u32Bytes(value)}
}

// OptionBool returns a Bool-valued option.
func OptionBool(key string, value bool) Option {
	v := byte(0)
	if value {
		v = 1
	}
	return Option{Key: key, Kind: KindBool, Value: []byte{v}}
}
