package client

import (
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestParseTransport(t *testing.T) {
	for in, want := range map[string]Transport{"tcp": TransportTCP, "": TransportTCP, "QUIC": TransportQUIC,
		"ws": TransportWebSocket, "websocket": TransportWebSocket, "http": TransportHTTP, "HTTP": TransportHTTP} {
		if got, err := ParseTransport(in); err != nil || got != want {
			t.Errorf("ParseTransport(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseTransport("https"); err == nil {
		t.Error("https accepted as a transport name (TLS is WithTLS or an https:// address)")
	}
}

// TestRedirectEndpointFollowsTransport: a leader-aware client redirects to
// the leader's port for the transport it speaks, and skips nodes where that
// transport is disabled.
func TestRedirectEndpointFollowsTransport(t *testing.T) {
	md := wire.ClusterMetadata{Nodes: []wire.ClusterNode{
		{IP: "10.0.0.1", TCP: 8090, QUIC: 8080, WebSocket: 8092, HTTP: 3000, Role: wire.RoleFollower, Status: wire.NodeHealthy},
		{IP: "10.0.0.2", TCP: 8091, QUIC: 0, WebSocket: 8093, HTTP: 3001, Role: wire.RoleLeader, Status: wire.NodeHealthy},
	}}
	for _, tc := range []struct {
		t      Transport
		roster []string
		leader string
	}{
		{TransportTCP, []string{"10.0.0.1:8090", "10.0.0.2:8091"}, "10.0.0.2:8091"},
		{TransportQUIC, []string{"10.0.0.1:8080"}, ""},
		{TransportWebSocket, []string{"10.0.0.1:8092", "10.0.0.2:8093"}, "10.0.0.2:8093"},
		{TransportHTTP, []string{"10.0.0.1:3000", "10.0.0.2:3001"}, "10.0.0.2:3001"},
	} {
		var s clusterState
		s.remember(md, tc.t)
		if len(s.roster) != len(tc.roster) || s.leader != tc.leader {
			t.Errorf("%s: roster %v leader %q, want %v %q", tc.t, s.roster, s.leader, tc.roster, tc.leader)
			continue
		}
		for i := range s.roster {
			if s.roster[i] != tc.roster[i] {
				t.Errorf("%s: roster %v, want %v", tc.t, s.roster, tc.roster)
			}
		}
	}
}
