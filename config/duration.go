package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TickDuration is the fixed consensus tick: every consensus timing knob is
// converted to whole ticks of this length.
const TickDuration = 10 * time.Millisecond

// Duration is a configuration duration written in humantime form ("5s",
// "500ms", "1h 30m", "7 days"). "0", "disabled", "unlimited" and "none" all
// mean zero, as upstream's parser treats them.
type Duration struct {
	time.Duration
}

// Dur builds a Duration from a time.Duration.
func Dur(d time.Duration) Duration { return Duration{Duration: d} }

// Ticks converts the duration to consensus ticks: rounded down to whole 10 ms
// ticks, never less than one tick (a timer shorter than a tick still fires on
// the next tick rather than never).
func (d Duration) Ticks() uint64 {
	ticks := uint64(d.Duration / TickDuration)
	if d.Duration < 0 || ticks < 1 {
		return 1
	}
	return ticks
}

// IsZero reports whether the duration is zero (disabled).
func (d Duration) IsZero() bool { return d.Duration == 0 }

// UnmarshalText parses a humantime duration.
func (d *Duration) UnmarshalText(text []byte) error {
	parsed, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	d.Duration = parsed
	return nil
}

// UnmarshalTOML accepts a humantime string or the integer 0.
func (d *Duration) UnmarshalTOML(value any) error {
	switch v := value.(type) {
	case string:
		return d.UnmarshalText([]byte(v))
	case int64:
		if v != 0 {
			return fmt.Errorf("duration %d has no unit: write it as a string such as \"%ds\"", v, v)
		}
		d.Duration = 0
		return nil
	default:
		return fmt.Errorf("duration must be a string such as \"5s\", got %T", value)
	}
}

// MarshalText renders the duration in the same humantime form it accepts.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String renders e.g. "1h 30m", "500ms", "0s".
func (d Duration) String() string {
	if d.Duration == 0 {
		return "0s"
	}
	remaining := d.Duration
	var parts []string
	if remaining < 0 {
		return d.Duration.String()
	}
	units := []struct {
		size time.Duration
		name string
	}{
		{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
	}
	for _, unit := range units {
		if count := remaining / unit.size; count > 0 {
			parts = append(parts, strconv.FormatInt(int64(count), 10)+unit.name)
			remaining -= count * unit.size
		}
	}
	return strings.Join(parts, " ")
}

// durationUnits maps humantime unit spellings to their length.
var durationUnits = map[string]time.Duration{
	"nsec": time.Nanosecond, "ns": time.Nanosecond,
	"usec": time.Microsecond, "us": time.Microsecond, "µs": time.Microsecond,
	"msec": time.Millisecond, "ms": time.Millisecond,
	"seconds": time.Second, "second": time.Second, "sec": time.Second, "secs": time.Second, "s": time.Second,
	"minutes": time.Minute, "minute": time.Minute, "min": time.Minute, "mins": time.Minute, "m": time.Minute,
	"hours": time.Hour, "hour": time.Hour, "hr": time.Hour, "hrs": time.Hour, "h": time.Hour,
	"days": 24 * time.Hour, "day": 24 * time.Hour, "d": 24 * time.Hour,
	"weeks": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "w": 7 * 24 * time.Hour,
}

// durationTermsMax bounds how many "<number><unit>" terms one value may hold.
const durationTermsMax = 16

// ParseDuration parses a humantime duration: one or more "<integer><unit>"
// terms, optionally separated by spaces ("1h 30m", "30 s", "2m").
func ParseDuration(text string) (time.Duration, error) {
	trimmed := strings.TrimSpace(text)
	switch strings.ToLower(trimmed) {
	case "0", "disabled", "unlimited", "none":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty duration: write e.g. \"5s\", \"500ms\" or \"0\"")
	}
	var total time.Duration
	rest := trimmed
	for terms := 0; rest != ""; terms++ {
		if terms == durationTermsMax {
			return 0, fmt.Errorf("duration %q has more than %d terms", text, durationTermsMax)
		}
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			digits++
		}
		if digits == 0 {
			return 0, fmt.Errorf("invalid duration %q: expected a number at %q", text, rest)
		}
		count, err := strconv.ParseInt(rest[:digits], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %w", text, err)
		}
		rest = strings.TrimLeft(rest[digits:], " ")
		unitLen := 0
		for unitLen < len(rest) && rest[unitLen] != ' ' && (rest[unitLen] < '0' || rest[unitLen] > '9') {
			unitLen++
		}
		unitName := rest[:unitLen]
		unit, ok := durationUnits[unitName]
		if !ok {
			if unitName == "" {
				return 0, fmt.Errorf("invalid duration %q: number %d has no unit (use ms, s, m, h, d)", text, count)
			}
			return 0, fmt.Errorf("invalid duration %q: unknown unit %q (use ms, s, m, h, d)", text, unitName)
		}
		if count > int64(1<<62)/int64(unit) {
			return 0, fmt.Errorf("invalid duration %q: too large", text)
		}
		total += time.Duration(count) * unit
		rest = strings.TrimLeft(rest[unitLen:], " ")
	}
	return total, nil
}
