package node

import (
	"net/netip"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/wire"
)

// clusterMetadataFor answers GetClusterMetadata for a client at
// clientAddr: the roster in cluster mode, else the single-node shape.
func (n *Node) clusterMetadataFor(clientAddr string) wire.ClusterMetadata {
	if n.topo.clustered {
		return n.rosterMetadata(clientAddr)
	}
	return n.clusterMetadata()
}

// rosterMetadata is cluster metadata in cluster mode (spec §6.3): the
// cluster name and every roster node with its client ports, the address
// this client should dial (longest-prefix advertised_addresses match for
// its peer address, else advertised_address, else the roster ip), its role
// (Leader = the metadata primary as this node knows it) and its status
// (this node Healthy, or Starting until it caught up after boot; a peer
// Healthy while the replica bus holds a live connection to it, else
// Unreachable).
func (n *Node) rosterMetadata(clientAddr string) wire.ClusterMetadata {
	clientIP := netip.Addr{}
	if ap, err := netip.ParseAddrPort(clientAddr); err == nil {
		clientIP = ap.Addr().Unmap()
	}
	leader, leaderKnown := n.metadataLeader()
	out := wire.ClusterMetadata{Name: n.cfg.Cluster.Name, Nodes: make([]wire.ClusterNode, 0, len(n.topo.roster))}
	for i := range n.topo.roster {
		node := &n.topo.roster[i]
		entry := wire.ClusterNode{
			Name:   node.Name,
			IP:     node.AdvertisedHostFor(clientIP),
			Role:   wire.RoleFollower,
			Status: wire.NodeHealthy,
		}
		entry.TCP = rosterPort(node, config.TransportTCP, n.cfg.TCP.Enabled)
		entry.QUIC = rosterPort(node, config.TransportQUIC, n.cfg.QUIC.Enabled)
		entry.HTTP = rosterPort(node, config.TransportHTTP, n.cfg.HTTP.Enabled)
		entry.WebSocket = rosterPort(node, config.TransportWebSocket, n.cfg.WebSocket.Enabled)
		if leaderKnown && node.ReplicaID == leader {
			entry.Role = wire.RoleLeader
		}
		if node.ReplicaID != n.topo.self && (n.bus == nil || !n.bus.Connected(node.ReplicaID)) {
			entry.Status = wire.NodeUnreachable
		}
		if node.ReplicaID == n.topo.self && n.starting() {
			entry.Status = wire.NodeStarting
		}
		out.Nodes = append(out.Nodes, entry)
	}
	return out
}

// starting reports whether this clustered node is still catching up after
// boot: its metadata group has not yet been Normal and caught up, so it
// opens no partitions yet (the partition gate) and answers 58 for them.
func (n *Node) starting() bool {
	return n.plane != nil && n.plane.gated && !n.plane.gateOpen.Load()
}

// rosterPort is a roster node's port for a transport the cluster serves,
// 0 when the transport is disabled.
func rosterPort(node *config.NodeConfig, transport string, enabled bool) uint16 {
	if !enabled {
		return 0
	}
	port, _ := node.Ports.Get(transport)
	return port
}

// metadataLeader is the metadata primary as this node knows it: the
// primary of its view once the view is established (Normal). During a
// view change or recovery no node is named Leader, so a client retries
// instead of following a guess.
func (n *Node) metadataLeader() (uint8, bool) {
	st := n.driver.status.Load()
	if st == nil || st.status != statusNormal {
		return 0, false
	}
	return uint8(st.view % uint32(n.topo.count)), true
}
