// Package httpapi serves Iggy's REST API (spec http-api.md) on top of the
// node's command layer: each route decodes JSON into the binary request
// body the binary protocol would carry, runs it through node.Execute for
// the caller's principal, and encodes the binary reply as JSON. No command
// is implemented twice.
package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/node"
	"github.com/lodestream/lodestream/transport"
)

// Bounds of one HTTP exchange.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	headerBytesMax    = 64 << 10
	shutdownTimeout   = 10 * time.Second
	// requestTimeout bounds the command a request runs (consensus waits
	// are bounded inside the node too).
	requestTimeout = 30 * time.Second
)

// Server is the HTTP API of one node.
type Server struct {
	node    *node.Node
	cfg     *config.Config
	log     *slog.Logger
	tokens  *tokens
	metrics *Metrics
	handler http.Handler
	ln      net.Listener
	tls     *tls.Config
	writes  *admission
	forward *forwarder      // nil unless follower → primary forwarding is active
	trusted *trustedIssuers // nil without [[http.jwt.trusted_issuers]]
}

// Starter returns the node.HTTPStarter of this package: binds the
// listener of [http] for the node. metrics may be nil.
func Starter(metrics *Metrics, log *slog.Logger) node.HTTPStarter {
	return func(n *node.Node) (node.Listener, error) {
		s, err := New(n, metrics, log)
		if err != nil {
			return nil, err
		}
		addr, err := n.HTTPListenAddress()
		if err != nil {
			return nil, err
		}
		if err := s.Listen(addr); err != nil {
			return nil, err
		}
		return s, nil
	}
}

// New builds the API for a node (no listener yet).
func New(n *node.Node, metrics *Metrics, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	cfg := n.Config()
	tok, err := newTokens(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{node: n, cfg: cfg, log: log.With("transport", "http"), tokens: tok, metrics: metrics, writes: newAdmission()}
	if metrics != nil {
		metrics.attach(n)
	}
	s.trusted = newTrustedIssuers(cfg, s.log)
	s.log.Info("http access tokens", "algorithm", tok.method.Alg(), "key", tok.keySource)
	if cfg.HTTP.TLS.Enabled {
		if s.tls, err = transport.FileTLS(cfg.HTTP.TLS.CertFile, cfg.HTTP.TLS.KeyFile); err != nil {
			return nil, fmt.Errorf("http.tls: %w", err)
		}
		s.tls.NextProtos = []string{"h2", "http/1.1"}
	}
	if s.forward, err = newForwarder(cfg); err != nil {
		return nil, err
	}
	h, err := s.routes()
	if err != nil {
		return nil, err
	}
	s.handler = h
	return s, nil
}

// Handler is the API's root handler (tests serve it directly).
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds addr.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then shuts down gracefully (bounded).
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    headerBytesMax,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if s.metrics != nil {
		srv.ConnState = s.metrics.connState
	}
	done := make(chan error, 1)
	go func() {
		if s.tls != nil {
			srv.TLSConfig = s.tls // ALPN h2 and http/1.1
			done <- srv.ServeTLS(s.ln, "", "")
			return
		}
		done <- srv.Serve(s.ln)
	}()
	select {
	case err := <-done:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", err)
	}
	return nil
}
