// Package transport carries client frames between sockets and the node.
//
// The listeners (TCP with optional TLS, QUIC, WebSocket) own sockets only:
// each connection reads whole frames (bounded by the frame size limits),
// hands each one to a Handler on the connection's reader goroutine, and
// writes replies from a bounded per-connection queue on a writer goroutine.
// What a frame means, and what closing a connection means for its session,
// is decided by the Handler (the node), the same way on every transport.
package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Handler is implemented by the node.
//
// HandleFrame is called on the connection's reader goroutine, one frame at a
// time, in arrival order; the next frame is not read until it returns, which
// gives the protocol's lockstep ordering and natural backpressure. Closed is
// called exactly once per connection that was Opened, after its reader has
// stopped.
type Handler interface {
	Opened(c *Conn)
	HandleFrame(c *Conn, frame []byte)
	Closed(c *Conn)
}

// TCPConfig bounds one client listener. Its connection limits, deadlines
// and budgets apply to every transport (QUICConfig and WebSocketConfig
// embed it); TLS is [tcp.tls] on TCP and [websocket.tls] on WebSocket.
type TCPConfig struct {
	Address string // host:port; port 0 binds an ephemeral port
	// ConnectionsMax bounds open connections: when it is reached, a new
	// connection closes the oldest one that has not logged in, or is itself
	// closed on accept if every connection has logged in.
	ConnectionsMax int
	// ConnectionsPerAddressMax bounds the open connections of one source
	// IP address; further ones are closed on accept.
	ConnectionsPerAddressMax int
	FrameBytesMin            uint32 // smaller declared sizes close the connection
	FrameBytesMax            uint32 // larger declared sizes close the connection
	// PreLoginFrameBytesMax bounds the declared size of every frame a
	// connection sends before the Handler calls SetAuthenticated(true)
	// (the node passes the largest pre-login request, wire.PreLoginFrameBytesMax);
	// a larger one closes the connection before its body is read. Zero
	// means FrameBytesMax (no pre-login bound).
	PreLoginFrameBytesMax uint32
	// LoginTimeout closes a connection that is not authenticated this long
	// after it was accepted (or after SetAuthenticated(false)). Zero means
	// DefaultLoginTimeout.
	LoginTimeout time.Duration
	// FrameReadTimeout bounds a partially read frame: once its first byte
	// has arrived, the header and body must arrive within it (bodies above
	// 64 KiB get one second more per MiB). Zero means DefaultFrameReadTimeout.
	FrameReadTimeout time.Duration
	// SendQueueFramesMax is the capacity of a connection's reply queue; the
	// reader stops reading while it is nearly full, so a handler that sends
	// one reply per frame never overflows it (an overflow closes the connection).
	SendQueueFramesMax int
	// SendQueueBytesMax: while a connection's queued reply bytes exceed it,
	// its reader reads no new request (backpressure; replies are never dropped).
	SendQueueBytesMax int64
	// OutboundBytesMax bounds the queued reply bytes of all connections:
	// while the total exceeds it, every connection that has replies queued
	// stops reading until its own queue is empty or the total drops;
	// connections with nothing queued (lockstep clients) are not held back.
	OutboundBytesMax int64
	WriteTimeout     time.Duration // per frame write deadline
	RuntimeDir       string        // if set, the bound address is written to RuntimeDir/tcp.addr
	// TLS, when set, switches the listener to TLS from the first byte
	// (upstream [tcp.tls]); the handshake runs on the connection's reader
	// goroutine, bounded by HandshakeTimeout.
	TLS              *tls.Config
	HandshakeTimeout time.Duration
	// InflightFrameBytesMax bounds the bytes of frames above 64 KiB being
	// read or handled at once across all connections (each counted at its
	// pooled buffer capacity); zero means 4 × FrameBytesMax.
	InflightFrameBytesMax int64
	Logger                *slog.Logger
}

// Defaults for zero TCPConfig fields.
const (
	DefaultConnectionsMax           = 4096
	DefaultConnectionsPerAddressMax = 1024
	DefaultFrameBytesMin            = 256
	DefaultFrameBytesMax            = 64 << 20
	DefaultSendQueueFramesMax       = 64
	DefaultSendQueueBytesMax        = 8 << 20
	DefaultOutboundBytesMax         = 256 << 20
	DefaultWriteTimeout             = 30 * time.Second
	DefaultHandshakeTimeout         = 10 * time.Second
	DefaultLoginTimeout             = 60 * time.Second
	DefaultFrameReadTimeout         = 10 * time.Second
	// AddrFileName is the file under the runtime directory that receives the
	// bound TCP address, for tests and tools that start the server on port 0.
	AddrFileName = "tcp.addr"
)

func (c *TCPConfig) withDefaults() TCPConfig {
	out := *c
	if out.ConnectionsMax <= 0 {
		out.ConnectionsMax = DefaultConnectionsMax
	}
	if out.ConnectionsPerAddressMax <= 0 {
		out.ConnectionsPerAddressMax = min(DefaultConnectionsPerAddressMax, out.ConnectionsMax)
	}
	if out.FrameBytesMin == 0 {
		out.FrameBytesMin = DefaultFrameBytesMin
	}
	if out.FrameBytesMax == 0 {
		out.FrameBytesMax = DefaultFrameBytesMax
	}
	if out.PreLoginFrameBytesMax == 0 || out.PreLoginFrameBytesMax > out.FrameBytesMax {
		out.PreLoginFrameBytesMax = out.FrameBytesMax
	}
	if out.LoginTimeout <= 0 {
		out.LoginTimeout = DefaultLoginTimeout
	}
	if out.FrameReadTimeout <= 0 {
		out.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if out.SendQueueFramesMax < sendQueueFramesMin {
		out.SendQueueFramesMax = max(DefaultSendQueueFramesMax, sendQueueFramesMin)
	}
	if out.SendQueueBytesMax <= 0 {
		out.SendQueueBytesMax = DefaultSendQueueBytesMax
	}
	if out.OutboundBytesMax <= 0 {
		out.OutboundBytesMax = DefaultOutboundBytesMax
	}
	if out.WriteTimeout <= 0 {
		out.WriteTimeout = DefaultWriteTimeout
	}
	if out.HandshakeTimeout <= 0 {
		out.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if out.InflightFrameBytesMax <= 0 {
		out.InflightFrameBytesMax = 4 * int64(out.FrameBytesMax)
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return out
}

// TCPServer accepts client connections on one address, in clear or TLS.
type TCPServer struct {
	*hub
	listener net.Listener
}

// ListenTCP binds the address and, if cfg.RuntimeDir is set, records the
// bound address in RuntimeDir/tcp.addr (written atomically).
func ListenTCP(cfg TCPConfig) (*TCPServer, error) {
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("tcp listen on %q: %w", cfg.Address, err)
	}
	if cfg.RuntimeDir != "" {
		if err := writeAddrFile(cfg.RuntimeDir, AddrFileName, ln.Addr().String()); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	return &TCPServer{hub: newHub(cfg, KindTCP), listener: ln}, nil
}

// writeAddrFile publishes a listener's bound address as dir/name (written
// to a temporary file and renamed, so readers never see half of it).
func writeAddrFile(dir, name, addr string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create runtime directory %q: %w", dir, err)
	}
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("publish address file %s: %w", name, err)
	}
	return nil
}

// Addr is the bound address.
func (s *TCPServer) Addr() *net.TCPAddr { return s.listener.Addr().(*net.TCPAddr) }

// Serve accepts connections until ctx is cancelled or Close is called, then
// closes every connection and waits for their goroutines. It returns nil on
// an orderly stop.
func (s *TCPServer) Serve(ctx context.Context, h Handler) error {
	stop := context.AfterFunc(ctx, func() { _ = s.listener.Close() })
	defer stop()
	var acceptErr error
	for {
		nc, err := s.listener.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				acceptErr = fmt.Errorf("tcp accept: %w", err)
			}
			break
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
			_ = tc.SetKeepAlive(true)
		}
		if s.cfg.TLS != nil {
			nc = tls.Server(nc, s.cfg.TLS)
		}
		s.admit(&tcpCarrier{nc: nc}, nc.RemoteAddr().String(), h)
	}
	s.closeAll()
	s.wait()
	return acceptErr
}

// Close stops accepting; Serve then closes the connections and returns.
func (s *TCPServer) Close() { _ = s.listener.Close() }

// sourceAddress is the IP part of a remote "ip:port" (the key of the
// per-address limits).
func sourceAddress(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
