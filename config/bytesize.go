package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte size units used across the configuration.
const (
	KiB uint64 = 1 << 10
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
	TiB uint64 = 1 << 40
)

// ByteSize is a configuration size: a TOML integer (bytes) or a string such
// as "64 MiB", "1 GB", "1200 B", "1.5GiB". "unlimited", "none" and "0" mean 0.
type ByteSize uint64

// Bytes returns the size in bytes.
func (b ByteSize) Bytes() uint64 { return uint64(b) }

var byteUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1000, "kb": 1000, "kib": KiB,
	"m": 1000 * 1000, "mb": 1000 * 1000, "mib": MiB,
	"g": 1000 * 1000 * 1000, "gb": 1000 * 1000 * 1000, "gib": GiB,
	"t": 1000 * 1000 * 1000 * 1000, "tb": 1000 * 1000 * 1000 * 1000, "tib": TiB,
	"pb": 1000 * 1000 * 1000 * 1000 * 1000, "pib": 1 << 50,
}

// ParseByteSize parses "64 MiB", "1 GB", "4096", "1.5 GiB".
func ParseByteSize(text string) (ByteSize, error) {
	trimmed := strings.TrimSpace(text)
	switch strings.ToLower(trimmed) {
	case "unlimited", "none", "0":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty size: write e.g. \"64 MiB\" or a number of bytes")
	}
	numberLen := 0
	for numberLen < len(trimmed) && (trimmed[numberLen] >= '0' && trimmed[numberLen] <= '9' || trimmed[numberLen] == '.') {
		numberLen++
	}
	if numberLen == 0 {
		return 0, fmt.Errorf("invalid size %q: expected a number first", text)
	}
	unitName := strings.ToLower(strings.TrimSpace(trimmed[numberLen:]))
	unit, ok := byteUnits[unitName]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)", text, unitName)
	}
	numberText := trimmed[:numberLen]
	if !strings.Contains(numberText, ".") {
		count, err := strconv.ParseUint(numberText, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid size %q: %w", text, err)
		}
		if count > math.MaxUint64/unit {
			return 0, fmt.Errorf("invalid size %q: too large", text)
		}
		return ByteSize(count * unit), nil
	}
	value, err := strconv.ParseFloat(numberText, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %w", text, err)
	}
	bytes := value * float64(unit)
	if bytes >= math.MaxUint64 {
		return 0, fmt.Errorf("invalid size %q: too large", text)
	}
	return ByteSize(uint64(bytes)), nil
}

// UnmarshalText parses a size string.
func (b *ByteSize) UnmarshalText(text []byte) error {
	parsed, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = parsed
	return nil
}

// UnmarshalTOML accepts a size string or an integer number of bytes.
func (b *ByteSize) UnmarshalTOML(value any) error {
	switch v := value.(type) {
	case string:
		return b.UnmarshalText([]byte(v))
	case int64:
		if v < 0 {
			return fmt.Errorf("size %d must not be negative", v)
		}
		*b = ByteSize(v)
		return nil
	default:
		return fmt.Errorf("size must be a string such as \"64 MiB\" or an integer, got %T", value)
	}
}

// MarshalText renders the size in its largest exact binary unit.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// String renders e.g. "64 MiB", "1200 B".
func (b ByteSize) String() string {
	value := uint64(b)
	for _, unit := range []struct {
		size uint64
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if value >= unit.size && value%unit.size == 0 {
			return strconv.FormatUint(value/unit.size, 10) + " " + unit.name
		}
	}
	return strconv.FormatUint(value, 10) + " B"
}
