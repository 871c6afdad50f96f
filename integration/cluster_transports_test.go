package integration

import (
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
)

// TestClusterRedirectsOnTransportInUse: cluster metadata reports every
// node's roster port for each enabled transport, and a leader-aware client
// that reached a follower over QUIC or WebSocket moves to the leader's
// port for that same transport.
func TestClusterRedirectsOnTransportInUse(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := c.waitLeader(0, -1, failoverBound)
	follower := (leader + 1) % 3

	md, err := rootClient(t, c.addr(follower)).GetClusterMetadata(ctx)
	must(t, err)
	for i, n := range md.Nodes {
		if int(n.TCP) != c.tcpPorts[i] || int(n.QUIC) != c.quicPorts[i] || int(n.WebSocket) != c.wsPorts[i] || n.HTTP != 0 {
			t.Fatalf("node %d ports tcp %d quic %d websocket %d http %d, roster %d/%d/%d", i,
				n.TCP, n.QUIC, n.WebSocket, n.HTTP, c.tcpPorts[i], c.quicPorts[i], c.wsPorts[i])
		}
	}
	for _, tr := range []client.Transport{client.TransportQUIC, client.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			cl, err := client.DialCluster(ctx, []string{c.addrOn(follower, tr)}, client.WithTransport(tr),
				client.WithCredentials("iggy", "iggy"), client.WithResponseTimeout(15*time.Second))
			must(t, err)
			t.Cleanup(func() { cl.Close() })
			if want := c.addrOn(leader, tr); cl.Addr() != want {
				t.Fatalf("DialCluster over %s via the follower ended on %s, want the leader's %s", tr, cl.Addr(), want)
			}
			if _, err := cl.CreateStream(ctx, "via-"+string(tr)); err != nil {
				t.Fatalf("write on the leader over %s: %v", tr, err)
			}
		})
	}
}
