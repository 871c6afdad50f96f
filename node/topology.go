package node

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
)

// topology is this node's place in the cluster: a single node is replica
// 0 of 1; in cluster mode the roster ([[cluster.nodes]]) gives the replica
// count, and this node's entry its listener ports.
type topology struct {
	clustered bool
	self      uint8
	count     uint8
	roster    []config.NodeConfig // by replica id
	selfNode  *config.NodeConfig  // nil on a single node
}

func newTopology(cfg *config.Config, replicaID uint8) (topology, error) {
	if !cfg.Cluster.Enabled {
		return topology{self: 0, count: 1}, nil
	}
	roster := append([]config.NodeConfig(nil), cfg.Cluster.Nodes...)
	sort.Slice(roster, func(i, j int) bool { return roster[i].ReplicaID < roster[j].ReplicaID })
	t := topology{clustered: true, self: replicaID, count: uint8(len(roster)), roster: roster}
	for i := range t.roster {
		if t.roster[i].ReplicaID == replicaID {
			t.selfNode = &t.roster[i]
		}
	}
	if t.selfNode == nil {
		return t, fmt.Errorf("node: --replica-id %d matches no cluster.nodes entry", replicaID)
	}
	return t, nil
}

// listenAddress is where a client transport binds: the host of its
// configured address and, in cluster mode, the roster's port (the roster
// ports are the only listener ports of a cluster node, spec §6.3).
func (t topology) listenAddress(address, transport string) (string, error) {
	if !t.clustered {
		return address, nil
	}
	port, ok := t.selfNode.Ports.Get(transport)
	if !ok {
		return "", fmt.Errorf("node: cluster node %q has no ports.%s", t.selfNode.Name, transport)
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("node: %s address %q: %w", transport, address, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

// applyTimings puts the [cluster] timings (converted to 10 ms ticks) and
// the repair chunk into a group's consensus configuration. A single node
// keeps the core's defaults: it never repairs or changes views.
func (t topology) applyTimings(cfg *consensus.Config, cl config.ClusterConfig) {
	if !t.clustered {
		return
	}
	ticks := cl.Ticks()
	cfg.HeartbeatTimeoutTicks = clampTicks(ticks.HeartbeatTimeoutTicks)
	cfg.CommitBroadcastTicks = clampTicks(ticks.CommitBroadcastIntervalTicks)
	cfg.PrepareRetransmitTicks = clampTicks(ticks.PrepareRetransmitIntervalTicks)
	cfg.ViewChangeRetransmitTicks = clampTicks(ticks.ViewChangeRetransmitIntervalTicks)
	cfg.ViewChangeStatusTicks = clampTicks(ticks.ViewChangeStatusTimeoutTicks)
	cfg.RequestStartViewTicks = clampTicks(ticks.RequestStartViewRetransmitIntervalTicks)
	cfg.RepairRetryTicks = clampTicks(ticks.RepairRetryIntervalTicks)
	cfg.RepairGapDebounceTicks = clampTicks(ticks.RepairGapDebounceIntervalTicks)
	cfg.ViewProbeAttemptsMax = cl.ViewProbeAttemptsMax
	if cl.RepairChunkMax > 0 && cl.RepairChunkMax <= 1<<20 {
		cfg.RepairChunkMax = uint32(cl.RepairChunkMax)
	}
}

// clampTicks fits a validated tick count into the core's uint32 (config
// validation bounds every timing far below it).
func clampTicks(t uint64) uint32 {
	if t > 1<<31 {
		return 1 << 31
	}
	return uint32(max(t, 1))
}
