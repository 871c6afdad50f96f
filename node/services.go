package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/wire"
)

// Listener is a client listener that lives outside this package (the HTTP
// API, which imports node): bound before the node serves, served until
// ctx ends.
type Listener interface {
	Addr() net.Addr
	Serve(ctx context.Context) error
}

// HTTPStarter binds the HTTP API for a node whose state is recovered
// (Options.HTTP; cmd/iggy-server passes the httpapi package's). It runs
// after the TCP listener is bound.
type HTTPStarter func(n *Node) (Listener, error)

// RequestObserver sees every binary request frame the node handles
// (metrics): the header's operation and command code (0 for operations
// that carry none), the frame size and when handling began.
type RequestObserver interface {
	ObserveBinaryRequest(op wire.Operation, code wire.CommandCode, frameBytes int, start time.Time)
}

// Config is the node's configuration (read-only).
func (n *Node) Config() *config.Config { return n.cfg }

// HTTPListenAddress is the address the HTTP API binds: http.address, with
// the port of this node's roster entry in cluster mode.
func (n *Node) HTTPListenAddress() (string, error) {
	return n.topo.listenAddress(n.cfg.HTTP.Address, config.TransportHTTP)
}

// bindHTTP binds the HTTP API when it is enabled and records its port.
func (n *Node) bindHTTP(start HTTPStarter) (Listener, error) {
	if !n.cfg.HTTP.Enabled {
		return nil, nil
	}
	if start == nil {
		return nil, errors.New("http.enabled = true: this binary has no HTTP API")
	}
	ln, err := start(n)
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	n.ports.http = portOf(ln.Addr())
	n.log.Info("http api listening", "address", ln.Addr().String(), "tls", n.cfg.HTTP.TLS.Enabled)
	return ln, nil
}

// serveHTTP serves ln until ctx ends; the channel carries its result (nil
// channel, never ready, without a listener).
func serveHTTP(ctx context.Context, ln Listener) chan error {
	if ln == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx) }()
	return done
}

// GroupObservation is one consensus group's state as its loop last
// published it.
type GroupObservation struct {
	Group     string // "metadata"
	Primary   bool
	Normal    bool // status normal (not in a view change or recovering)
	View      uint32
	CommitMin uint64 // applied
	CommitMax uint64 // known committed
}

// Observation is what the metrics endpoint samples at scrape time.
type Observation struct {
	Groups                                        []GroupObservation
	Connections, Sessions, PrincipalSessions      int
	Streams, Topics, Partitions, ConsumerGroups   int
	Users                                         int
	Messages, MessagesBytes, Segments             uint64
	PartitionWritesRefused, UnroutedReplicaFrames uint64
	// Partition groups this node runs, by its role in them (per-partition
	// view and commit stay inside the shard loops).
	PartitionPrimaries, PartitionBackups int
}

// Observe samples the node for metrics: the metadata group's published
// status, partition groups counted by role, connections, sessions and
// entity totals.
func (n *Node) Observe() Observation {
	o := Observation{Sessions: n.sessions.count(), PrincipalSessions: n.principals.count(), Users: len(n.state.Users())}
	if n.tcp != nil {
		o.Connections = n.tcp.ConnectionCount()
	}
	if st := n.driver.status.Load(); st != nil {
		o.Groups = append(o.Groups, GroupObservation{Group: "metadata", Primary: st.primary, Normal: st.status == statusNormal,
			View: st.view, CommitMin: st.commitMin, CommitMax: st.commitMax})
	}
	o.Streams, o.Topics, o.Partitions, o.ConsumerGroups = n.state.Counts()
	tot := n.planeTotals()
	o.Messages, o.MessagesBytes, o.Segments = tot.messages, tot.sizeBytes, uint64(tot.segments)
	n.plane.mu.RLock()
	for _, e := range n.plane.entries {
		if e.acceptsWrites() {
			o.PartitionPrimaries++
		} else {
			o.PartitionBackups++
		}
	}
	n.plane.mu.RUnlock()
	o.PartitionWritesRefused = n.partitionWritesRefused.Load()
	o.UnroutedReplicaFrames = n.unroutedReplicaMessages.Load()
	return o
}

// MetadataView is the metadata group's current view (the iggy-view
// header), false before the group published one.
func (n *Node) MetadataView() (uint32, bool) {
	if st := n.driver.status.Load(); st != nil {
		return st.view, true
	}
	return 0, false
}

// MetadataPrimary is who leads the metadata group as this node knows it:
// self on a single node or when this node is the primary; else the
// roster node of the primary of the current normal view (known false
// during a view change or before the group published a status).
func (n *Node) MetadataPrimary() (primary config.NodeConfig, self, known bool) {
	if !n.topo.clustered {
		return config.NodeConfig{}, true, true
	}
	st := n.driver.status.Load()
	switch {
	case st == nil:
		return config.NodeConfig{}, false, false
	case st.primary:
		return *n.topo.selfNode, true, true
	case st.status != statusNormal:
		return config.NodeConfig{}, false, false
	}
	id := uint8(st.view % uint32(n.topo.count))
	if id == n.topo.self || int(id) >= len(n.topo.roster) {
		return config.NodeConfig{}, false, false
	}
	return n.topo.roster[id], false, true
}

// PeerNodes are the other roster nodes of a cluster, in replica-id order
// (nil on a single node): the HTTP API's partition-write retry targets.
func (n *Node) PeerNodes() []config.NodeConfig {
	if !n.topo.clustered {
		return nil
	}
	out := make([]config.NodeConfig, 0, len(n.topo.roster))
	for i, nc := range n.topo.roster {
		if uint8(i) != n.topo.self {
			out = append(out, nc)
		}
	}
	return out
}
