package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

func startQUIC(t *testing.T, cfg QUICConfig, h Handler) *QUICServer {
	t.Helper()
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	if cfg.TLS == nil {
		tc, err := SelfSignedTLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tc
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := ListenQUIC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return s
}

func dialQUIC(t *testing.T, s *QUICServer) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, s.Addr().String(), &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"},
		&quic.Config{MaxIdleTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	return qc
}

// quicRequest sends one frame on a new stream, FINs, and reads the reply
// to the end of the stream.
func quicRequest(t *testing.T, qc *quic.Conn, f []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	_ = st.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := st.Write(f); err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return io.ReadAll(st)
}

// expectQUICClosed waits for the server to close qc.
func expectQUICClosed(t *testing.T, qc *quic.Conn) {
	t.Helper()
	select {
	case <-qc.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("quic connection still open")
	}
}

func TestQUICOneStreamPerRequest(t *testing.T) {
	h := &echoHandler{}
	s := startQUIC(t, QUICConfig{}, h)
	qc := dialQUIC(t, s)
	st := qc.ConnectionState().TLS
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "" {
		t.Fatalf("tls version %x alpn %q, want TLS 1.3 without ALPN", st.Version, st.NegotiatedProtocol)
	}
	for i, body := range []int{0, 100, 200 << 10} {
		f := frameOf(body, 5)
		got, err := quicRequest(t, qc, f)
		if err != nil || string(got) != string(f) {
			t.Fatalf("request %d: %d bytes, %v", i, len(got), err)
		}
	}
	// An eviction is delivered on its request's stream before the close.
	ev := frameOf(0, 99)
	got, err := quicRequest(t, qc, ev)
	if err != nil || string(got) != string(ev) {
		t.Fatalf("eviction: %d bytes, %v", len(got), err)
	}
	expectQUICClosed(t, qc)
	waitFor(t, func() bool { o, c, _ := h.counts(); return o == 1 && c == 1 })
}

// TestQUICMalformedStreams: every broken request stream closes its
// connection, and the server keeps serving others.
func TestQUICMalformedStreams(t *testing.T) {
	h := &echoHandler{}
	s := startQUIC(t, QUICConfig{TCPConfig: TCPConfig{FrameReadTimeout: 300 * time.Millisecond}}, h)
	short := frameOf(10, 5)
	short = short[:len(short)-4]
	cases := []struct {
		name string
		send func(st *quic.Stream)
	}{
		{"size above the carried bytes", func(st *quic.Stream) { _, _ = st.Write(short); _ = st.Close() }},
		{"bytes beyond the declared size", func(st *quic.Stream) {
			_, _ = st.Write(append(frameOf(10, 5), 1, 2, 3))
			_ = st.Close()
		}},
		{"declared size below a header", func(st *quic.Stream) {
			f := frameOf(0, 5)
			f[sizeFieldOffset] = 10
			_, _ = st.Write(f)
			_ = st.Close()
		}},
		{"half a header", func(st *quic.Stream) { _, _ = st.Write(make([]byte, 100)); _ = st.Close() }},
		{"empty stream", func(st *quic.Stream) { _, _ = st.Write([]byte{}); _ = st.Close() }},
		{"reset mid-frame", func(st *quic.Stream) { _, _ = st.Write(frameOf(1000, 5)[:300]); st.CancelWrite(7) }},
		{"frame never finished", func(st *quic.Stream) { _, _ = st.Write(frameOf(1000, 5)[:300]) }},
		{"frame without FIN", func(st *quic.Stream) { _, _ = st.Write(frameOf(10, 5)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			qc := dialQUIC(t, s)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := qc.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tc.send(st)
			expectQUICClosed(t, qc)
		})
	}
	// A healthy client still gets answers.
	f := frameOf(10, 5)
	if got, err := quicRequest(t, dialQUIC(t, s), f); err != nil || string(got) != string(f) {
		t.Fatalf("healthy client: %v", err)
	}
}

// TestQUICOneRequestInFlight: the server grants one bidirectional stream
// at a time, so a second request waits for the first reply.
func TestQUICOneRequestInFlight(t *testing.T) {
	release := make(chan struct{})
	h := &gateHandler{release: release}
	s := startQUIC(t, QUICConfig{}, h)
	qc := dialQUIC(t, s)
	first, err := qc.OpenStreamSync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write(frameOf(0, 5)); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := qc.OpenStreamSync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second stream opened while the first awaits its reply: %v", err)
	}
	close(release)
	if _, err := io.ReadAll(first); err != nil {
		t.Fatal(err)
	}
	if got, err := quicRequest(t, qc, frameOf(0, 5)); err != nil || len(got) != headerBytes {
		t.Fatalf("second request: %v", err)
	}
}

// gateHandler answers once release is closed.
type gateHandler struct{ release chan struct{} }

func (gateHandler) Opened(*Conn) {}
func (gateHandler) Closed(*Conn) {}
func (g *gateHandler) HandleFrame(c *Conn, f []byte) {
	<-g.release
	c.Send(f)
}

func TestQUICRequiresCertificate(t *testing.T) {
	if _, err := ListenQUIC(QUICConfig{TCPConfig: TCPConfig{Address: "127.0.0.1:0"}}); err == nil {
		t.Fatal("QUIC listener without a certificate")
	}
}

// TestQUICClientStopSendingKeepsConnection: a client that stops reading a
// stream once it has its reply (STOP_SENDING, possibly before the server's
// FIN) loses nothing else: the connection keeps serving.
func TestQUICClientStopSendingKeepsConnection(t *testing.T) {
	s := startQUIC(t, QUICConfig{}, &echoHandler{})
	qc := dialQUIC(t, s)
	f := frameOf(64<<10, 5)
	for i := range 50 {
		st, err := qc.OpenStreamSync(context.Background())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_ = st.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := st.Write(f); err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
		if _, err := ReadFrame(st, 256, 1<<20); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		st.CancelRead(0)
	}
	if qc.Context().Err() != nil {
		t.Fatal("connection closed")
	}
}
