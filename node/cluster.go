package node

import "github.com/lodestream/lodestream/wire"

// Single-node cluster metadata names (wire-protocol §5.1; what SDK suites
// expect when clustering is off).
const (
	singleNodeClusterName = "single-node"
	singleNodeName        = "iggy-node"
)

// clusterMetadata is the single-node shape: this node, Leader and Healthy,
// at the TCP bind host, with the ports of the transports this build serves
// (0 for those it does not).
func (n *Node) clusterMetadata() wire.ClusterMetadata {
	return wire.ClusterMetadata{
		Name: singleNodeClusterName,
		Nodes: []wire.ClusterNode{{
			Name:   singleNodeName,
			IP:     n.bindHost(),
			TCP:    n.tcpPort(),
			Role:   wire.RoleLeader,
			Status: wire.NodeHealthy,
		}},
	}
}
