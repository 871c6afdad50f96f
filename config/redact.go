package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Redacted returns a deep copy with every secret replaced by a mask, safe to
// log or write out.
func (c *Config) Redacted() *Config {
	clone := *c
	clone.HTTP.CORS.AllowedMethods = slices.Clone(c.HTTP.CORS.AllowedMethods)
	clone.HTTP.CORS.AllowedOrigins = slices.Clone(c.HTTP.CORS.AllowedOrigins)
	clone.HTTP.CORS.AllowedHeaders = slices.Clone(c.HTTP.CORS.AllowedHeaders)
	clone.HTTP.CORS.ExposedHeaders = slices.Clone(c.HTTP.CORS.ExposedHeaders)
	clone.HTTP.JWT.ValidIssuers = slices.Clone(c.HTTP.JWT.ValidIssuers)
	clone.HTTP.JWT.ValidAudiences = slices.Clone(c.HTTP.JWT.ValidAudiences)
	clone.HTTP.JWT.TrustedIssuers = slices.Clone(c.HTTP.JWT.TrustedIssuers)
	clone.Cluster.Nodes = make([]NodeConfig, len(c.Cluster.Nodes))
	for i, node := range c.Cluster.Nodes {
		node.AdvertisedAddresses = slices.Clone(node.AdvertisedAddresses)
		node.Ports = Ports{
			TCP: clonePort(node.Ports.TCP), QUIC: clonePort(node.Ports.QUIC), HTTP: clonePort(node.Ports.HTTP),
			WebSocket: clonePort(node.Ports.WebSocket), TCPReplica: clonePort(node.Ports.TCPReplica),
		}
		clone.Cluster.Nodes[i] = node
	}
	clone.WebSocket.ReadBufferSize = cloneSize(c.WebSocket.ReadBufferSize)
	clone.WebSocket.WriteBufferSize = cloneSize(c.WebSocket.WriteBufferSize)
	clone.WebSocket.MaxWriteBufferSize = cloneSize(c.WebSocket.MaxWriteBufferSize)
	clone.WebSocket.MaxMessageSize = cloneSize(c.WebSocket.MaxMessageSize)
	clone.WebSocket.MaxFrameSize = cloneSize(c.WebSocket.MaxFrameSize)
	for _, secret := range []*Secret{
		&clone.System.Encryption.Key, &clone.HTTP.JWT.EncodingSecret, &clone.HTTP.JWT.DecodingSecret,
		&clone.Cluster.Auth.SharedSecret, &clone.Cluster.Auth.PreviousSharedSecret,
	} {
		*secret = Secret(secret.String())
	}
	return &clone
}

func clonePort(p *uint16) *uint16 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneSize(s *ByteSize) *ByteSize {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

// EncodeTOML renders cfg as TOML. Secrets are always masked (Secret's
// MarshalText), so the output is safe to log or persist.
func EncodeTOML(cfg *Config) (string, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return "", fmt.Errorf("encoding configuration: %w", err)
	}
	return buf.String(), nil
}

// logLevelTrace is below slog's Debug, for upstream's "trace" level.
const logLevelTrace = slog.LevelDebug - 4

// ParseLogLevel maps system.logging.level (trace, debug, info, warn, error;
// case-insensitive) to a slog level.
func ParseLogLevel(level string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "trace":
		return logLevelTrace, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("system.logging.level = %q: must be one of trace, debug, info, warn, error", level)
}
