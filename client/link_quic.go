package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// quicLink opens one bidirectional stream per request: Write sends the
// frame and FINs, Read reads that stream's reply (wire-protocol §7).
type quicLink struct {
	qc *quic.Conn

	mu         sync.Mutex // SetDeadline may come from a context's AfterFunc
	deadline   time.Time
	st         *quic.Stream
	openCancel context.CancelFunc // cancels a stream open in progress
}

func dialQUIC(ctx context.Context, addr string, cfg config) (link, error) {
	tlsConf := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}
	if cfg.tls != nil {
		tlsConf = clientTLS(cfg.tls, addr)
	}
	tlsConf.MinVersion = tls.VersionTLS13
	tlsConf.NextProtos = nil // upstream's QUIC speaks no ALPN
	ctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	qc, err := quic.DialAddr(ctx, addr, tlsConf, &quic.Config{
		KeepAlivePeriod: quicClientKeepAlive, MaxIdleTimeout: quicClientIdleTimeout,
		HandshakeIdleTimeout: cfg.dialTimeout,
		// Replies reach 64 MiB (a poll of 1000 × 1 KB is ~1 MB): windows
		// that hold a whole reply spare flow-control round trips.
		InitialStreamReceiveWindow: quicClientWindowBytes, MaxStreamReceiveWindow: 4 * quicClientWindowBytes,
		InitialConnectionReceiveWindow: quicClientWindowBytes, MaxConnectionReceiveWindow: 4 * quicClientWindowBytes,
	})
	if err != nil {
		return nil, err
	}
	return &quicLink{qc: qc}, nil
}

func (l *quicLink) SetDeadline(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = t
	if l.st != nil {
		_ = l.st.SetDeadline(t)
	}
	if l.openCancel != nil && !t.IsZero() && !t.After(time.Now()) {
		l.openCancel()
	}
	return nil
}

// Write sends p as one request on a new stream; the previous request's
// stream, read by now, is finished first: its FIN (sent with the reply) is
// read, so neither side sees a reset.
func (l *quicLink) Write(p []byte) (int, error) {
	l.mu.Lock()
	prev := l.st
	l.st = nil
	l.mu.Unlock()
	if prev != nil {
		var one [1]byte
		if n, err := prev.Read(one[:]); n > 0 || !errors.Is(err, io.EOF) {
			prev.CancelRead(0) // not at its end: give up the rest
		}
	}
	l.mu.Lock()
	ctx, cancel := context.WithCancel(context.Background())
	if !l.deadline.IsZero() {
		ctx, cancel = context.WithDeadline(context.Background(), l.deadline)
	}
	l.openCancel = cancel
	l.mu.Unlock()
	st, err := l.qc.OpenStreamSync(ctx)
	l.mu.Lock()
	l.openCancel = nil
	cancel()
	if err != nil {
		l.mu.Unlock()
		return 0, fmt.Errorf("open quic stream: %w", err)
	}
	_ = st.SetDeadline(l.deadline)
	l.st = st
	l.mu.Unlock()
	n, err := st.Write(p)
	if err == nil {
		err = st.Close()
	}
	return n, err
}

var errNoQUICRequest = errors.New("quic: read with no request in flight")

func (l *quicLink) Read(p []byte) (int, error) {
	l.mu.Lock()
	st := l.st
	l.mu.Unlock()
	if st == nil {
		return 0, errNoQUICRequest
	}
	return st.Read(p)
}

func (l *quicLink) Close() error { return l.qc.CloseWithError(0, "client closed") }

func (l *quicLink) RemoteAddr() net.Addr { return l.qc.RemoteAddr() }
