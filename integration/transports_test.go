package integration

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// transportCase is one way a client reaches a server.
type transportCase struct {
	name      string
	transport client.Transport
	tls       bool   // TLS on TCP, WSS on WebSocket
	wireByte  uint8  // the Client entry's transport byte
	addrFile  string // the runtime address file of its listener
}

var everyTransport = []transportCase{
	{"tcp", client.TransportTCP, false, 1, "tcp"},
	{"quic", client.TransportQUIC, false, 2, "quic"},
	{"websocket", client.TransportWebSocket, false, 4, "websocket"},
	{"tcp-tls", client.TransportTCP, true, 1, "tcp"},
	{"wss", client.TransportWebSocket, true, 4, "websocket"},
}

// tlsEnv turns on TLS for TCP and WebSocket (self-signed).
var tlsEnv = []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_WEBSOCKET_TLS_ENABLED=true"}

func (tc transportCase) options(extra ...client.Option) []client.Option {
	opts := []client.Option{client.WithResponseTimeout(15 * time.Second), client.WithTransport(tc.transport)}
	if tc.tls {
		opts = append(opts, client.WithTLS(&tls.Config{InsecureSkipVerify: true}))
	}
	return append(opts, extra...)
}

func (tc transportCase) dial(t *testing.T, srv *server, extra ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(testCtx(t), srv.transportAddr(tc.addrFile), tc.options(extra...)...)
	if err != nil {
		t.Fatalf("dial over %s: %v", tc.name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func portOfAddr(t *testing.T, addr string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	must(t, err)
	n, err := strconv.ParseUint(p, 10, 16)
	must(t, err)
	return uint16(n)
}

// TestEveryTransport runs login, metadata, send, poll and evictions over
// TCP, TLS, QUIC, WebSocket and WSS: one session layer serves them all.
func TestEveryTransport(t *testing.T) {
	plain := startServer(t, "")
	secure := startServer(t, "", tlsEnv...)
	for i, tc := range everyTransport {
		t.Run(tc.name, func(t *testing.T) {
			srv := plain
			if tc.tls {
				srv = secure
			}
			ctx := testCtx(t)
			c := tc.dial(t, srv)
			if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
				t.Fatalf("login: %v", err)
			}
			md, err := c.GetClusterMetadata(ctx)
			must(t, err)
			n := md.Nodes[0]
			if n.TCP != portOfAddr(t, srv.addr) || n.QUIC != portOfAddr(t, srv.transportAddr("quic")) ||
				n.WebSocket != portOfAddr(t, srv.transportAddr("websocket")) || n.HTTP != 0 {
				t.Fatalf("cluster metadata ports tcp %d quic %d websocket %d http %d", n.TCP, n.QUIC, n.WebSocket, n.HTTP)
			}
			me, err := c.GetMe(ctx)
			must(t, err)
			if me.Transport != tc.wireByte {
				t.Fatalf("GetMe transport byte %d, want %d", me.Transport, tc.wireByte)
			}

			stream := "s-" + tc.name
			_, err = c.CreateStream(ctx, stream)
			must(t, err)
			_, err = c.CreateTopic(ctx, named(stream), "t", 1)
			must(t, err)
			sendOK(t, c, named(stream), named("t"), partitionID(0), makeMessages("m", 0, 10))
			// A ~600 KiB request: pooled frame buffers, WebSocket fragments.
			big := makeMessages("big", 10, 3)
			for j := range big {
				big[j].Payload = make([]byte, 200<<10)
				big[j].Payload[0] = byte(i)
			}
			conf := sendOK(t, c, named(stream), named("t"), partitionID(0), big)
			if conf.BaseOffset != 10 {
				t.Fatalf("big batch confirmation %+v", conf)
			}
			expectPolled(t, "first ten", pollAt(t, c, firstConsumer, named(stream), named("t"), wire.SomePartition(0),
				wire.PollingStrategy{Kind: wire.PollFirst}, 10, false), "m", 0, 10)
			r := pollAt(t, c, firstConsumer, named(stream), named("t"), wire.SomePartition(0),
				wire.PollingStrategy{Kind: wire.PollOffset, Value: 10}, 100, false)
			if r.MessagesCount != 3 || len(r.Messages[2].Payload) != 200<<10 || r.Messages[2].Payload[0] != byte(i) {
				t.Fatalf("polled %d big messages", r.MessagesCount)
			}

			// Evictions arrive on this transport and end its connection.
			bad := tc.dial(t, srv)
			_, err = bad.LoginUser(ctx, "iggy", "wrong")
			if ev, ok := client.EvictionOf(err); !ok || ev.Reason != wire.EvictInvalidCredentials {
				t.Fatalf("wrong password: %v", err)
			}
			expectCode(t, bad.Ping(ctx), wire.ErrDisconnected)
			old := tc.dial(t, srv, client.WithProtocolVersion(wire.PackVersion(0, 12, 0)))
			_, err = old.LoginUser(ctx, "iggy", "iggy")
			if ev, ok := client.EvictionOf(err); !ok || ev.Reason != wire.EvictIncompatibleProtocol {
				t.Fatalf("version gate: %v", err)
			}
			// The first connection is untouched.
			must(t, c.Ping(ctx))
		})
	}
}
