package integration

import (
	"context"
	"encoding/binary"
	"net"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// TestMalformedFramingEveryTransport: what each transport's framing can
// get wrong — a size that differs from the carried bytes, a Text message,
// an abrupt reset, a frame begun and never finished — closes that
// connection and nothing else; the server keeps answering a healthy
// connection on the same transport.
func TestMalformedFramingEveryTransport(t *testing.T) {
	plain := startServer(t, "", "IGGY_TCP_FRAME_READ_TIMEOUT=1s")
	secure := startServer(t, "", append([]string{"IGGY_TCP_FRAME_READ_TIMEOUT=1s"}, tlsEnv...)...)
	ping := func(r *rawConn) []byte {
		return r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, nil)
	}
	declared := func(r *rawConn, size uint32, carried int) []byte {
		f := r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, make([]byte, carried-wire.HeaderSize))
		binary.LittleEndian.PutUint32(f[48:], size)
		return f
	}
	type row struct {
		name       string
		transports []client.Transport // nil = every transport
		send       func(t *testing.T, r *rawConn)
	}
	message := []client.Transport{client.TransportQUIC, client.TransportWebSocket}
	rows := []row{
		{"size above the carried bytes", nil, func(t *testing.T, r *rawConn) { r.write(declared(r, 1024, 600)) }},
		{"carried bytes beyond the size", message, func(t *testing.T, r *rawConn) { r.write(declared(r, 256, 300)) }},
		{"header cut short", nil, func(t *testing.T, r *rawConn) { r.write(ping(r)[:100]) }},
		{"text message", []client.Transport{client.TransportWebSocket}, func(t *testing.T, r *rawConn) {
			if err := r.c.(*wsRaw).ws.WriteMessage(websocket.TextMessage, ping(r)); err != nil {
				t.Fatal(err)
			}
		}},
		{"frame never finished", nil, func(t *testing.T, r *rawConn) {
			f := declared(r, 4096, 4096)[:1000]
			switch c := r.c.(type) {
			case *quicRaw: // the stream stays open: no FIN
				st, err := c.qc.OpenStreamSync(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				_, _ = st.Write(f)
				c.st = st
			case *wsRaw: // a first fragment, never the final one
				w, err := c.ws.NextWriter(websocket.BinaryMessage)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = w.Write(make([]byte, 128<<10)) // beyond the client's buffer: flushed as a fragment
			default:
				r.write(f)
			}
		}},
		{"abrupt reset", nil, func(t *testing.T, r *rawConn) {
			f := declared(r, 4096, 4096)[:1000]
			switch c := r.c.(type) {
			case *quicRaw:
				st, err := c.qc.OpenStreamSync(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				_, _ = st.Write(f)
				st.CancelWrite(1)
				c.st = st
			case *wsRaw:
				w, _ := c.ws.NextWriter(websocket.BinaryMessage)
				_, _ = w.Write(make([]byte, 128<<10))
				resetTCP(c.Conn)
				return
			default:
				r.write(f)
				resetTCP(r.c)
				return
			}
		}},
	}
	for _, tc := range everyTransport {
		srv := plain
		if tc.tls {
			srv = secure
		}
		healthy := dialRawOn(t, srv, tc)
		healthy.login()
		for _, rw := range rows {
			if rw.transports != nil && !contains(rw.transports, tc.transport) {
				continue
			}
			t.Run(tc.name+"/"+rw.name, func(t *testing.T) {
				r := dialRawOn(t, srv, tc)
				rw.send(t, r)
				if rw.name != "abrupt reset" || tc.transport == client.TransportQUIC {
					r.expectClosed()
				}
				healthy.ping()
			})
		}
	}
}

// resetTCP closes a TCP (or TLS) socket with RST instead of FIN.
func resetTCP(c net.Conn) {
	type netConner interface{ NetConn() net.Conn }
	if n, ok := c.(netConner); ok {
		c = n.NetConn()
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}

func contains(list []client.Transport, t client.Transport) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}
