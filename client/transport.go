package client

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Transport selects how a Client carries frames (wire-protocol §7).
type Transport string

// Client transports. TLS is an option of TCP (WithTLS) and WebSocket
// (WSS); QUIC is always TLS. TransportHTTP (link_http.go) speaks the REST
// API instead of frames (https with WithTLS or an https:// address).
const (
	TransportTCP       Transport = "tcp"
	TransportQUIC      Transport = "quic"
	TransportWebSocket Transport = "websocket"
)

// ParseTransport reads a transport name: tcp, quic, websocket (or ws), http.
func ParseTransport(s string) (Transport, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "tcp", "":
		return TransportTCP, nil
	case "quic":
		return TransportQUIC, nil
	case "websocket", "ws":
		return TransportWebSocket, nil
	case "http":
		return TransportHTTP, nil
	}
	return "", fmt.Errorf("unknown transport %q: want tcp, quic, websocket or http", s)
}

// Port is n's advertised port for transport t (0 when disabled there).
func (t Transport) Port(n wire.ClusterNode) uint16 {
	switch t {
	case TransportQUIC:
		return n.QUIC
	case TransportWebSocket:
		return n.WebSocket
	case TransportHTTP:
		return n.HTTP
	}
	return n.TCP
}

// Client QUIC defaults (the Rust SDK's): keep-alive 5 s, idle timeout 10 s.
const (
	quicClientKeepAlive   = 5 * time.Second
	quicClientIdleTimeout = 10 * time.Second
	// quicClientWindowBytes: the client's initial flow-control windows
	// (grown up to 4× as quic-go auto-tunes them).
	quicClientWindowBytes = 16 << 20
	// wsClientBufferBytes: the client's WebSocket write buffer; a request
	// larger than it is sent as several fragments.
	wsClientBufferBytes = 256 << 10
)

// WithTransport selects the transport (default TCP).
func WithTransport(t Transport) Option { return func(c *config) { c.transport = t } }

// WithTLS sets the TLS client configuration: TLS over TCP, WSS over
// WebSocket, and the QUIC handshake's configuration. Without it QUIC
// skips certificate verification with SNI "localhost", as the Rust SDK
// does by default; a nil ServerName is taken from the address's host.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// link carries one request frame per Write and the reply bytes by Read,
// whatever the transport: a TCP (or TLS) connection, one QUIC stream per
// request, or one WebSocket message per frame.
type link interface {
	io.ReadWriteCloser
	SetDeadline(t time.Time) error
	RemoteAddr() net.Addr
}

// clientTLS is cfg's TLS for addr with the server name filled in.
func clientTLS(cfg *tls.Config, addr string) *tls.Config {
	out := cfg.Clone()
	if out.ServerName == "" && !out.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			out.ServerName = host
		}
	}
	return out
}
