package node

import (
	"context"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport/bus"
)

// startReplicaBus listens on this node's roster tcp_replica port, dials
// the higher replica ids and routes every received message by its group:
// the metadata group's to its event loop, a partition group's to the shard
// that drives it.
func (n *Node) startReplicaBus(self uint8) (bus.Bus, error) {
	opts, err := bus.OptionsFromConfig(n.cfg, self)
	if err != nil {
		return nil, err
	}
	opts.Logger = n.log.With("transport", "replica-bus")
	opts.OnMessage = n.routeReplicaMessage
	opts.OnForward = n.onForward
	opts.OnFetch = n.onFetch
	b, err := bus.New(opts)
	if err != nil {
		return nil, fmt.Errorf("replica bus: %w", err)
	}
	// Set before Start: the callbacks (reader goroutines) read them.
	n.bus = b
	n.driver.peers = b
	n.plane.peers.set(b, self)
	if err := b.Start(context.Background()); err != nil {
		b.Close()
		return nil, fmt.Errorf("replica bus: %w", err)
	}
	return b, nil
}

// routeReplicaMessage runs on a bus reader goroutine: it hands the
// message to the loop that owns its group (by the group id in the frame)
// without blocking: the metadata loop, or the shard of the partition the
// id names. A message for a group this node does not serve (a partition
// its metadata has not created yet) is counted and dropped: VSR
// retransmits.
func (n *Node) routeReplicaMessage(m consensus.Message) {
	if m.Group == metadataGroupID {
		n.driver.deliver(m)
		return
	}
	if n.plane != nil {
		if e := n.plane.entryByGroup(m.Group); e != nil && e.log != nil {
			e.shard.deliver(e, m)
			return
		}
	}
	n.unroutedReplicaMessages.Add(1)
}
