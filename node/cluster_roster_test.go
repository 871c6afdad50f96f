package node

import (
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

func port(p uint16) *uint16 { return &p }

// TestRosterMetadata: cluster metadata in cluster mode lists the roster
// with each node's address chosen for the asking client (longest-prefix
// advertised_addresses match, else advertised_address, else the roster
// ip), the Leader from the live view, this node Healthy and a peer without
// a bus connection Unreachable; a view change names no Leader.
func TestRosterMetadata(t *testing.T) {
	cfg := &config.Config{}
	cfg.TCP.Enabled = true
	cfg.Cluster = config.ClusterConfig{Enabled: true, Name: "prod", Nodes: []config.NodeConfig{
		{Name: "a", IP: "10.0.0.1", ReplicaID: 0, Ports: config.Ports{TCP: port(8090), TCPReplica: port(9090)},
			AdvertisedAddress: "a.public.example",
			AdvertisedAddresses: []config.AdvertisedAddressSelector{
				{ClientCIDR: "10.0.0.0/8", Address: "a.internal"},
				{ClientCIDR: "10.9.0.0/16", Address: "a.rack9"},
			}},
		{Name: "b", IP: "10.0.0.2", ReplicaID: 1, Ports: config.Ports{TCP: port(8091), TCPReplica: port(9091)}},
		{Name: "c", IP: "10.0.0.3", ReplicaID: 2, Ports: config.Ports{TCP: port(8092), TCPReplica: port(9092)}},
	}}
	topo, err := newTopology(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: cfg, topo: topo, driver: &driver{}}
	n.driver.status.Store(&groupStatus{view: 3, status: consensus.StatusNormal}) // primary 3 mod 3 = 0

	md := n.rosterMetadata("10.9.1.1:5000")
	if md.Name != "prod" || len(md.Nodes) != 3 {
		t.Fatalf("metadata %+v", md)
	}
	want := []struct {
		ip     string
		tcp    uint16
		role   uint8
		status uint8
	}{
		{"a.rack9", 8090, wire.RoleLeader, wire.NodeUnreachable},
		{"10.0.0.2", 8091, wire.RoleFollower, wire.NodeHealthy},
		{"10.0.0.3", 8092, wire.RoleFollower, wire.NodeUnreachable},
	}
	for i, w := range want {
		got := md.Nodes[i]
		if got.IP != w.ip || got.TCP != w.tcp || got.Role != w.role || got.Status != w.status || got.QUIC != 0 {
			t.Errorf("node %d = %+v, want %+v", i, got, w)
		}
	}
	if ip := n.rosterMetadata("10.1.2.3:1").Nodes[0].IP; ip != "a.internal" {
		t.Errorf("10.1.2.3 gets %q, want a.internal", ip)
	}
	if ip := n.rosterMetadata("[2001:db8::1]:1").Nodes[0].IP; ip != "a.public.example" {
		t.Errorf("an address no selector matches gets %q, want the advertised_address", ip)
	}
	n.driver.status.Store(&groupStatus{view: 4, status: consensus.StatusViewChange})
	for _, node := range n.rosterMetadata("10.1.2.3:1").Nodes {
		if node.Role == wire.RoleLeader {
			t.Fatalf("a Leader named during a view change: %+v", node)
		}
	}
}
