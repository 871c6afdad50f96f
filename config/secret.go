package config

import (
	"log/slog"
)

// secretMask replaces a non-empty secret wherever it would be printed.
const secretMask = "******"

// Secret is a configuration value that must never be printed or serialized:
// String, GoString, MarshalText and LogValue all mask it. Read the value
// with Reveal.
type Secret string

// Reveal returns the secret's value; call it only where the value is used.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a non-empty secret is configured.
func (s Secret) IsSet() bool { return s != "" }

// Len is the secret's length in bytes.
func (s Secret) Len() int { return len(s) }

// String masks the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return secretMask
}

// GoString masks the secret under %#v.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// MarshalText masks the secret so encoders never write it.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText stores the secret.
func (s *Secret) UnmarshalText(text []byte) error {
	*s = Secret(text)
	return nil
}

// LogValue masks the secret in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
