package integration

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// dialRawOn is dialRaw over any transport: rawConn's net.Conn is then an
// adapter that sends each Write as one request (a QUIC stream, a
// WebSocket Binary message) and reads replies as a byte stream.
func dialRawOn(t *testing.T, srv *server, tc transportCase) *rawConn {
	t.Helper()
	addr := srv.transportAddr(tc.addrFile)
	var c net.Conn
	switch {
	case tc.transport == client.TransportQUIC:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		qc, err := quic.DialAddr(ctx, addr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}, &quic.Config{})
		if err != nil {
			t.Fatalf("quic dial %s: %v", addr, err)
		}
		c = &quicRaw{qc: qc}
	case tc.transport == client.TransportWebSocket:
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		scheme := "ws://"
		if tc.tls {
			scheme = "wss://"
		}
		ws, _, err := d.Dial(scheme+addr+"/raw", nil)
		if err != nil {
			t.Fatalf("websocket dial %s: %v", addr, err)
		}
		c = &wsRaw{Conn: ws.NetConn(), ws: ws}
	case tc.tls:
		tcpConn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("tls dial %s: %v", addr, err)
		}
		c = tcpConn
	default:
		return dialRaw(t, addr)
	}
	t.Cleanup(func() { _ = c.Close() })
	var id [16]byte
	_, _ = rand.Read(id[:])
	return &rawConn{t: t, c: c, client: wire.Uint128{Lo: binary.LittleEndian.Uint64(id[:]) | 1, Hi: binary.LittleEndian.Uint64(id[8:])}}
}

// quicRaw: each Write is one request stream (written, then FIN); Read
// reads the current stream and, once it is consumed, waits for the
// connection to close (EOF) or the read deadline (timeout).
type quicRaw struct {
	qc           *quic.Conn
	st           *quic.Stream
	readDeadline time.Time
	consumed     bool
}

func (q *quicRaw) Write(p []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := q.qc.OpenStreamSync(ctx)
	if err != nil {
		return 0, err
	}
	q.st, q.consumed = st, false
	n, err := st.Write(p)
	if err == nil {
		err = st.Close()
	}
	return n, err
}

func (q *quicRaw) Read(p []byte) (int, error) {
	if q.st != nil && !q.consumed {
		_ = q.st.SetReadDeadline(q.readDeadline)
		n, err := q.st.Read(p)
		if n > 0 || !errors.Is(err, io.EOF) {
			return n, err
		}
		q.consumed = true
	}
	wait := time.Until(q.readDeadline)
	select {
	case <-q.qc.Context().Done():
		return 0, io.EOF
	case <-time.After(wait):
		return 0, os.ErrDeadlineExceeded
	}
}

func (q *quicRaw) Close() error                       { return q.qc.CloseWithError(0, "") }
func (q *quicRaw) LocalAddr() net.Addr                { return q.qc.LocalAddr() }
func (q *quicRaw) RemoteAddr() net.Addr               { return q.qc.RemoteAddr() }
func (q *quicRaw) SetDeadline(t time.Time) error      { q.readDeadline = t; return nil }
func (q *quicRaw) SetReadDeadline(t time.Time) error  { q.readDeadline = t; return nil }
func (q *quicRaw) SetWriteDeadline(t time.Time) error { return nil }

// wsRaw: each Write is one Binary message; Read reads messages back to
// back as one byte stream.
type wsRaw struct {
	net.Conn // the socket, for deadlines and addresses
	ws       *websocket.Conn
	r        io.Reader
}

func (w *wsRaw) Write(p []byte) (int, error) {
	if err := w.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *wsRaw) Read(p []byte) (int, error) {
	for {
		if w.r == nil {
			_, r, err := w.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) || errors.Is(err, io.ErrUnexpectedEOF) {
					return 0, io.EOF
				}
				return 0, err
			}
			w.r = r
		}
		n, err := w.r.Read(p)
		if n > 0 {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			w.r = nil
			continue
		}
		return n, err
	}
}

func (w *wsRaw) Close() error { return w.ws.Close() }
