package node

import (
	"net"

	"github.com/lodestream/lodestream/wire"
)

// Single-node cluster metadata names (wire-protocol §5.1; what SDK suites
// expect when clustering is off).
const (
	singleNodeClusterName = "single-node"
	singleNodeName        = "iggy-node"
)

// servedPorts are the bound ports of the client transports this node
// serves; 0 for a transport that is disabled (or not served by this build).
// Each listener records its port once bound, before serving starts, so the
// reads from connection goroutines happen after the writes. A listener
// bound to port 0 records the port the kernel chose.
type servedPorts struct {
	tcp, quic, http, websocket uint16
}

// portOf is the port of a bound listener address (0 for nil or a non-IP
// address).
func portOf(addr net.Addr) uint16 {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return uint16(a.Port)
	case *net.UDPAddr:
		return uint16(a.Port)
	}
	return 0
}

// clusterMetadata is the single-node shape: this node, Leader and Healthy,
// at the TCP bind host, with the bound port of every transport it serves
// (0 for a disabled one).
func (n *Node) clusterMetadata() wire.ClusterMetadata {
	return singleNodeMetadata(n.bindHost(), n.ports)
}

func singleNodeMetadata(host string, ports servedPorts) wire.ClusterMetadata {
	return wire.ClusterMetadata{
		Name: singleNodeClusterName,
		Nodes: []wire.ClusterNode{{
			Name:      singleNodeName,
			IP:        host,
			TCP:       ports.tcp,
			QUIC:      ports.quic,
			HTTP:      ports.http,
			WebSocket: ports.websocket,
			Role:      wire.RoleLeader,
			Status:    wire.NodeHealthy,
		}},
	}
}
