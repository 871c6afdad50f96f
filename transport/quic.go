package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"
)

// QUICConfig bounds the QUIC listener ([quic]). The embedded TCPConfig's
// connection limits, deadlines and budgets apply as on TCP; its TLS holds
// the certificate (required: QUIC is always TLS 1.3, without ALPN).
type QUICConfig struct {
	TCPConfig
	// MaxConcurrentBidiStreams: requests a client may have open at once
	// (upstream 1: strictly one request in flight per connection).
	MaxConcurrentBidiStreams int64
	KeepAlivePeriod          time.Duration // 0 = none
	MaxIdleTimeout           time.Duration
	InitialPacketBytes       uint16 // initial_mtu
	StreamReceiveWindowBytes uint64
	ReceiveWindowBytes       uint64
}

// Upstream [quic] defaults (server-design §6, wire-protocol §7).
const (
	DefaultQUICBidiStreams        = 1
	DefaultQUICKeepAlive          = 10 * time.Second
	DefaultQUICIdleTimeout        = 30 * time.Second
	DefaultQUICInitialPacketBytes = 1200
	DefaultQUICWindowBytes        = 64 << 20
	// QUICAddrFileName receives the bound QUIC address under the runtime directory.
	QUICAddrFileName = "quic.addr"
)

// QUIC application error codes a connection is closed with.
const (
	quicCloseShutdown quic.ApplicationErrorCode = 0x1003 // orderly close, as upstream
	quicStreamRefused quic.StreamErrorCode      = 0x1004 // a malformed request stream
)

// QUICServer accepts QUIC connections; each request is one bidirectional
// stream (wire-protocol §7).
type QUICServer struct {
	*hub
	listener *quic.Listener
}

func (cfg *QUICConfig) withDefaults() QUICConfig {
	out := *cfg
	out.TCPConfig = cfg.TCPConfig.withDefaults()
	if out.MaxConcurrentBidiStreams <= 0 {
		out.MaxConcurrentBidiStreams = DefaultQUICBidiStreams
	}
	if out.MaxIdleTimeout <= 0 {
		out.MaxIdleTimeout = DefaultQUICIdleTimeout
	}
	if out.InitialPacketBytes == 0 {
		out.InitialPacketBytes = DefaultQUICInitialPacketBytes
	}
	if out.StreamReceiveWindowBytes == 0 {
		out.StreamReceiveWindowBytes = DefaultQUICWindowBytes
	}
	if out.ReceiveWindowBytes == 0 {
		out.ReceiveWindowBytes = DefaultQUICWindowBytes
	}
	return out
}

// quicServerTLS is the listener's TLS: TLS 1.3 only (QUIC requires it),
// no ALPN (upstream's clients offer none, and a server that lists
// protocols must refuse a client that offers none), no session tickets
// so no 0-RTT.
func quicServerTLS(base *tls.Config) (*tls.Config, error) {
	if base == nil {
		return nil, errors.New("quic: a TLS certificate is required")
	}
	t := base.Clone()
	t.MinVersion = tls.VersionTLS13
	t.NextProtos = nil
	t.SessionTicketsDisabled = true
	return t, nil
}

// ListenQUIC binds the UDP address and, if cfg.RuntimeDir is set, records
// the bound address in RuntimeDir/quic.addr.
func ListenQUIC(cfg QUICConfig) (*QUICServer, error) {
	cfg = cfg.withDefaults()
	tlsConf, err := quicServerTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	qc := &quic.Config{
		HandshakeIdleTimeout:           cfg.HandshakeTimeout,
		MaxIdleTimeout:                 cfg.MaxIdleTimeout,
		KeepAlivePeriod:                cfg.KeepAlivePeriod,
		InitialPacketSize:              cfg.InitialPacketBytes,
		InitialStreamReceiveWindow:     cfg.StreamReceiveWindowBytes,
		MaxStreamReceiveWindow:         cfg.StreamReceiveWindowBytes,
		InitialConnectionReceiveWindow: cfg.ReceiveWindowBytes,
		MaxConnectionReceiveWindow:     cfg.ReceiveWindowBytes,
		MaxIncomingStreams:             cfg.MaxConcurrentBidiStreams,
		MaxIncomingUniStreams:          -1,
		// A stream's credit comes back only once its reply is written, so a
		// client that resets a stream cannot get ahead of its replies.
		RequireStreamCreditRelease: true,
		Allow0RTT:                  false,
	}
	ln, err := quic.ListenAddr(cfg.Address, tlsConf, qc)
	if err != nil {
		return nil, fmt.Errorf("quic listen on %q: %w", cfg.Address, err)
	}
	if cfg.RuntimeDir != "" {
		if err := writeAddrFile(cfg.RuntimeDir, QUICAddrFileName, ln.Addr().String()); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	return &QUICServer{hub: newHub(cfg.TCPConfig, KindQUIC), listener: ln}, nil
}

// Addr is the bound UDP address.
func (s *QUICServer) Addr() *net.UDPAddr { return s.listener.Addr().(*net.UDPAddr) }

// Close stops accepting; Serve then closes the connections and returns.
func (s *QUICServer) Close() { _ = s.listener.Close() }

// Serve accepts connections until ctx is cancelled or Close is called, then
// closes every connection and waits for their goroutines.
func (s *QUICServer) Serve(ctx context.Context, h Handler) error {
	var acceptErr error
	for {
		qc, err := s.listener.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, quic.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				acceptErr = fmt.Errorf("quic accept: %w", err)
			}
			break
		}
		if qc.ConnectionState().Used0RTT {
			// Never offered (no session tickets); refused if it ever is.
			_ = qc.CloseWithError(quicCloseShutdown, "0-RTT not permitted")
			continue
		}
		s.admit(&quicCarrier{qc: qc}, qc.RemoteAddr().String(), h)
	}
	_ = s.listener.Close()
	s.closeAll()
	s.wait()
	return acceptErr
}
