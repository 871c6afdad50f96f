package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// clientListener is one bound client transport; every one of them feeds
// the same Handler (the node), so sessions, dispatch and eviction do not
// depend on the transport.
type clientListener interface {
	Serve(ctx context.Context, h transport.Handler) error
	Close()
}

// listenerSet is the node's bound client listeners and the certificates
// that SIGHUP reloads.
type listenerSet struct {
	names   []string
	servers []clientListener
	certs   []*transport.CertFiles
}

// checkTransports refuses what this build does not serve (httpServed: the
// binary wires the HTTP API in, node.Options.HTTP).
func checkTransports(cfg *config.Config, httpServed bool) error {
	var errs []error
	if !cfg.TCP.Enabled {
		errs = append(errs, errors.New("tcp.enabled = false: this build needs the TCP listener (its bind host is the address cluster metadata reports)"))
	}
	if cfg.HTTP.Enabled && !httpServed {
		errs = append(errs, errors.New("http.enabled = true: this binary does not serve the HTTP API"))
	}
	if cfg.WebSocket.Enabled && cfg.WebSocket.AcceptUnmaskedFrames {
		errs = append(errs, errors.New("websocket.accept_unmasked_frames = true: not supported (RFC 6455 requires clients to mask their frames)"))
	}
	return errors.Join(errs...)
}

// listen binds every enabled client listener (in cluster mode on the
// roster's ports) and records each bound port for cluster metadata. On
// error, whatever was bound is closed.
func (n *Node) listen() (_ *listenerSet, err error) {
	cfg := n.cfg
	ls := &listenerSet{}
	defer func() {
		if err != nil {
			ls.close()
		}
	}()
	base := transport.TCPConfig{
		ConnectionsMax:           int(cfg.TCP.ConnectionsMax),
		ConnectionsPerAddressMax: int(cfg.TCP.ConnectionsPerAddressMax),
		PreLoginFrameBytesMax:    wire.PreLoginFrameBytesMax,
		LoginTimeout:             cfg.TCP.LoginTimeout.Duration,
		FrameReadTimeout:         cfg.TCP.FrameReadTimeout.Duration,
		SendQueueBytesMax:        int64(cfg.TCP.SendQueueBytesMax.Bytes()),
		OutboundBytesMax:         int64(cfg.TCP.OutboundBytesMax.Bytes()),
		RuntimeDir:               n.runtimeDir(),
	}

	tcpCfg := base
	if tcpCfg.Address, err = n.topo.listenAddress(cfg.TCP.Address, config.TransportTCP); err != nil {
		return nil, err
	}
	if tcpCfg.TLS, err = ls.serverTLS(cfg.TCP.TLS, tcpCfg.Address); err != nil {
		return nil, fmt.Errorf("tcp.tls: %w", err)
	}
	tcpCfg.Logger = n.log.With("transport", "tcp")
	tcp, err := transport.ListenTCP(tcpCfg)
	if err != nil {
		return nil, err
	}
	n.tcp = tcp
	n.ports.tcp = portOf(tcp.Addr())
	ls.add("tcp", tcp)
	n.log.Info("tcp listener bound", "address", tcp.Addr().String(), "tls", tcpCfg.TLS != nil)

	if cfg.QUIC.Enabled {
		q := cfg.QUIC
		qc := transport.QUICConfig{TCPConfig: base,
			MaxConcurrentBidiStreams: int64(q.MaxConcurrentBidiStreams),
			KeepAlivePeriod:          q.KeepAliveInterval.Duration,
			MaxIdleTimeout:           q.MaxIdleTimeout.Duration,
			InitialPacketBytes:       uint16(q.InitialMTU.Bytes()),
			StreamReceiveWindowBytes: q.StreamReceiveWindow.Bytes(),
			ReceiveWindowBytes:       q.ReceiveWindow.Bytes(),
		}
		if qc.Address, err = n.topo.listenAddress(q.Address, config.TransportQUIC); err != nil {
			return nil, err
		}
		cert := config.TLSConfig{Enabled: true, SelfSigned: q.Certificate.SelfSigned,
			CertFile: q.Certificate.CertFile, KeyFile: q.Certificate.KeyFile}
		if qc.TLS, err = ls.serverTLS(cert, qc.Address); err != nil {
			return nil, fmt.Errorf("quic.certificate: %w", err)
		}
		qc.Logger = n.log.With("transport", "quic")
		srv, err := transport.ListenQUIC(qc)
		if err != nil {
			return nil, err
		}
		n.ports.quic = portOf(srv.Addr())
		ls.add("quic", srv)
		n.log.Info("quic listener bound", "address", srv.Addr().String())
	}

	if cfg.WebSocket.Enabled {
		w := cfg.WebSocket
		wc := transport.WebSocketConfig{TCPConfig: base,
			ReadBufferBytes:  optionalBytes(w.ReadBufferSize),
			WriteBufferBytes: optionalBytes(w.WriteBufferSize),
			MessageBytesMax:  int64(optionalBytes(w.MaxMessageSize)),
			WSFrameBytesMax:  int64(optionalBytes(w.MaxFrameSize)),
		}
		if wc.Address, err = n.topo.listenAddress(w.Address, config.TransportWebSocket); err != nil {
			return nil, err
		}
		if wc.TLS, err = ls.serverTLS(w.TLS, wc.Address); err != nil {
			return nil, fmt.Errorf("websocket.tls: %w", err)
		}
		wc.Logger = n.log.With("transport", "websocket")
		srv, err := transport.ListenWebSocket(wc)
		if err != nil {
			return nil, err
		}
		n.ports.websocket = portOf(srv.Addr())
		ls.add("websocket", srv)
		n.log.Info("websocket listener bound", "address", srv.Addr().String(), "tls", wc.TLS != nil)
	}
	return ls, nil
}

func (ls *listenerSet) add(name string, s clientListener) {
	ls.names = append(ls.names, name)
	ls.servers = append(ls.servers, s)
}

func (ls *listenerSet) close() {
	for _, s := range ls.servers {
		s.Close()
	}
}

// serverTLS builds a listener's TLS from its [*.tls] table: nil when
// disabled, a generated certificate when self_signed (valid for the bind
// IP too), else the PEM files, reloadable on SIGHUP.
func (ls *listenerSet) serverTLS(t config.TLSConfig, address string) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	if t.SelfSigned {
		var extra []net.IP
		if host, _, err := net.SplitHostPort(address); err == nil {
			if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
				extra = append(extra, ip)
			}
		}
		return transport.SelfSignedTLS(extra...)
	}
	files, err := transport.LoadCertFiles(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, err
	}
	ls.certs = append(ls.certs, files)
	return files.TLSConfig(), nil
}

// serve runs every listener until ctx ends or one of them stops; the
// channel then receives their joined errors, once all have returned.
func (ls *listenerSet) serve(ctx context.Context, h transport.Handler) chan error {
	ctx, stopAll := context.WithCancel(ctx)
	out := make(chan error, 1)
	errs := make([]error, len(ls.servers))
	var wg sync.WaitGroup
	for i, s := range ls.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stopAll() // one listener stopping stops the others
			if err := s.Serve(ctx, h); err != nil {
				errs[i] = fmt.Errorf("%s listener: %w", ls.names[i], err)
			}
		}()
	}
	go func() {
		wg.Wait()
		stopAll()
		out <- errors.Join(errs...)
	}()
	return out
}

// reloadOnSIGHUP reloads every file certificate on SIGHUP until ctx ends:
// new handshakes use the new certificate, open connections keep theirs,
// and a certificate that fails to load leaves the previous one in use.
func (ls *listenerSet) reloadOnSIGHUP(ctx context.Context, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			if len(ls.certs) == 0 {
				log.Info("SIGHUP: no certificate files to reload")
			}
			for _, c := range ls.certs {
				certFile, keyFile := c.Files()
				if err := c.Reload(); err != nil {
					log.Error("SIGHUP: certificate reload failed; the previous certificate stays in use", "err", err)
					continue
				}
				log.Info("SIGHUP: certificate reloaded", "cert_file", certFile, "key_file", keyFile)
			}
		}
	}()
}

// optionalBytes is an optional [websocket] size, 0 (transport default)
// when unset.
func optionalBytes(b *config.ByteSize) int {
	if b == nil {
		return 0
	}
	return int(b.Bytes())
}
