package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/gorilla/websocket"
)

// WebSocketConfig bounds the WebSocket listener ([websocket]). The
// embedded TCPConfig's connection limits, deadlines and budgets apply as
// on TCP; its TLS, when set, makes the listener WSS ([websocket.tls]).
type WebSocketConfig struct {
	TCPConfig
	ReadBufferBytes  int // the library's I/O buffers; 0 = DefaultWebSocketBufferBytes
	WriteBufferBytes int
	// MessageBytesMax bounds a reassembled message, WSFrameBytesMax one
	// WebSocket frame (fragment) of it; both close the connection.
	MessageBytesMax int64
	WSFrameBytesMax int64
}

// Upstream [websocket] defaults (tungstenite's).
const (
	DefaultWebSocketBufferBytes     = 128 << 10
	DefaultWebSocketMessageBytesMax = 64 << 20
	DefaultWebSocketFrameBytesMax   = 16 << 20
	// WebSocketAddrFileName receives the bound address under the runtime directory.
	WebSocketAddrFileName = "websocket.addr"
	// wsHeaderBytesMax bounds the HTTP upgrade request's headers.
	wsHeaderBytesMax = 16 << 10
)

func (cfg *WebSocketConfig) withDefaults() WebSocketConfig {
	out := *cfg
	out.TCPConfig = cfg.TCPConfig.withDefaults()
	if out.ReadBufferBytes <= 0 {
		out.ReadBufferBytes = DefaultWebSocketBufferBytes
	}
	if out.WriteBufferBytes <= 0 {
		out.WriteBufferBytes = DefaultWebSocketBufferBytes
	}
	if out.MessageBytesMax <= 0 {
		out.MessageBytesMax = DefaultWebSocketMessageBytesMax
	}
	if out.WSFrameBytesMax <= 0 {
		out.WSFrameBytesMax = DefaultWebSocketFrameBytesMax
	}
	return out
}

// WebSocketServer accepts WebSocket (or WSS) connections on any URL path;
// each request and each reply is one Binary message (wire-protocol §7).
type WebSocketServer struct {
	*hub
	wsCfg    WebSocketConfig
	listener net.Listener
	http     *http.Server
	upgrader websocket.Upgrader
	handler  Handler
}

// ListenWebSocket binds the address and, if cfg.RuntimeDir is set, records
// the bound address in RuntimeDir/websocket.addr.
func ListenWebSocket(cfg WebSocketConfig) (*WebSocketServer, error) {
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("websocket listen on %q: %w", cfg.Address, err)
	}
	if cfg.RuntimeDir != "" {
		if err := writeAddrFile(cfg.RuntimeDir, WebSocketAddrFileName, ln.Addr().String()); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	s := &WebSocketServer{hub: newHub(cfg.TCPConfig, KindWebSocket), wsCfg: cfg,
		listener: &wsListener{Listener: ln, tls: cfg.TLS}}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.HandshakeTimeout,
		ReadBufferSize:   cfg.ReadBufferBytes,
		WriteBufferSize:  cfg.WriteBufferBytes,
		// Binary protocol clients, not browsers: no origin policy.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		IdleTimeout:       cfg.HandshakeTimeout,
		MaxHeaderBytes:    wsHeaderBytesMax,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, wsConnKey{}, c)
		},
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Addr is the bound address.
func (s *WebSocketServer) Addr() *net.TCPAddr { return s.listener.Addr().(*net.TCPAddr) }

// Close stops accepting; Serve then closes the connections and returns.
func (s *WebSocketServer) Close() { _ = s.http.Close() }

// Serve accepts connections until ctx is cancelled or Close is called, then
// closes every connection and waits for their goroutines.
func (s *WebSocketServer) Serve(ctx context.Context, h Handler) error {
	s.handler = h
	stop := context.AfterFunc(ctx, func() { _ = s.http.Close() })
	defer stop()
	err := s.http.Serve(s.listener)
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		err = nil
	}
	s.closeAll()
	s.wait()
	if err != nil {
		return fmt.Errorf("websocket serve: %w", err)
	}
	return nil
}

type wsConnKey struct{}

// ServeHTTP upgrades a request on any path and admits the connection.
func (s *WebSocketServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gc, ok := r.Context().Value(wsConnKey{}).(*wsGuardConn)
	if !ok {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.cfg.Logger.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	gc.arm(uint64(s.wsCfg.WSFrameBytesMax))
	ws.SetReadLimit(s.wsCfg.MessageBytesMax)
	s.admit(&wsCarrier{ws: ws}, r.RemoteAddr, s.handler)
}

// wsListener accepts TCP connections for the HTTP upgrade: TCP_NODELAY,
// TLS (WSS) when configured, and the frame guard beneath the library.
type wsListener struct {
	net.Listener
	tls *tls.Config
}

func (l *wsListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	if l.tls != nil {
		// The handshake runs in the server's first read, bounded by the
		// header read timeout.
		nc = tls.Server(nc, l.tls)
	}
	return &wsGuardConn{Conn: nc}, nil
}
