package transport

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"
)

// benchServer starts an echo server for a benchmark.
func benchServer(b *testing.B, h Handler) *TCPServer {
	b.Helper()
	s, err := ListenTCP(TCPConfig{Address: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, h) }()
	b.Cleanup(func() { cancel(); <-done })
	return s
}

// inlineReplyHandler echoes through Conn.Reply (the inline path SendMessages uses).
type inlineReplyHandler struct{}

func (inlineReplyHandler) Opened(*Conn) {}
func (inlineReplyHandler) Closed(*Conn) {}
func (inlineReplyHandler) HandleFrame(c *Conn, f []byte) {
	c.Reply(f, false)
}

// benchRoundTrips runs lockstep request/reply on 4 connections.
func benchRoundTrips(b *testing.B, h Handler, bodyBytes int) {
	s := benchServer(b, h)
	f := frameOf(bodyBytes, 5)
	b.SetBytes(int64(len(f)))
	b.SetParallelism(2) // 2 × GOMAXPROCS connections
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			if _, err := c.Write(f); err != nil {
				b.Error(err)
				return
			}
			if _, err := ReadFrame(c, 256, 64<<20); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRoundTrip: lockstep echo over loopback, small (a ping) and
// 1 MiB (a produce batch or poll reply) frames, through the writer queue
// (Send, as polls reply) and inline (Reply, as sends reply).
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    Handler
		body int
	}{
		{"send/ping", &echoHandler{}, 0},
		{"send/1MiB", &echoHandler{}, 1 << 20},
		{"reply/ping", inlineReplyHandler{}, 0},
		{"reply/1MiB", inlineReplyHandler{}, 1 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) { benchRoundTrips(b, bc.h, bc.body) })
	}
}

// BenchmarkTransportRoundTrip: lockstep echo (inline Reply) of a ping and
// a 1 MiB frame on one connection per transport.
func BenchmarkTransportRoundTrip(b *testing.B) {
	for _, body := range []struct {
		name  string
		bytes int
	}{{"ping", 0}, {"1MiB", 1 << 20}} {
		f := frameOf(body.bytes, 5)
		b.Run("tcp/"+body.name, func(b *testing.B) {
			s := benchServer(b, inlineReplyHandler{})
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.SetBytes(int64(len(f)))
			for b.Loop() {
				if _, err := c.Write(f); err != nil {
					b.Fatal(err)
				}
				if _, err := ReadFrame(c, 256, 64<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("quic/"+body.name, func(b *testing.B) {
			cert, err := SelfSignedTLS()
			if err != nil {
				b.Fatal(err)
			}
			s, err := ListenQUIC(QUICConfig{TCPConfig: TCPConfig{Address: "127.0.0.1:0", TLS: cert,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx, inlineReplyHandler{}) }()
			defer func() { cancel(); <-done }()
			qc, err := quic.DialAddr(ctx, s.Addr().String(), &tls.Config{InsecureSkipVerify: true}, &quic.Config{InitialStreamReceiveWindow: 16 << 20, MaxStreamReceiveWindow: 64 << 20, InitialConnectionReceiveWindow: 16 << 20, MaxConnectionReceiveWindow: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer qc.CloseWithError(0, "")
			b.SetBytes(int64(len(f)))
			for b.Loop() {
				st, err := qc.OpenStreamSync(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.Write(f); err != nil {
					b.Fatal(err)
				}
				_ = st.Close()
				if _, err := ReadFrame(st, 256, 64<<20); err != nil {
					b.Fatal(err)
				}
				st.CancelRead(0)
			}
		})
		b.Run("websocket/"+body.name, func(b *testing.B) {
			s, err := ListenWebSocket(WebSocketConfig{TCPConfig: TCPConfig{Address: "127.0.0.1:0",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx, inlineReplyHandler{}) }()
			defer func() { cancel(); <-done }()
			ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Addr().String(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			b.SetBytes(int64(len(f)))
			for b.Loop() {
				if err := ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
					b.Fatal(err)
				}
				_, r, err := ws.NextReader()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ReadFrame(r, 256, 64<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
