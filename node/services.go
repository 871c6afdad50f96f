package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
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
	// Partition groups this node runs, by its role in them.
	PartitionPrimaries, PartitionBackups int
	// Partition groups in aggregate (a node may run thousands: no series
	// per partition): groups not in normal status, the highest view, the
	// total and the largest commit lag, and the PartitionLagTopN groups that
	// lag most (lag > 0 only).
	PartitionViewChanges             int
	PartitionViewMax                 uint32
	PartitionLagSum, PartitionLagMax uint64
	PartitionLagging                 []PartitionLag
	// MetadataWALBytes is the metadata WAL's size on disk.
	MetadataWALBytes int64
	// Bus is the replica bus's counters and per-peer send-queue depth (nil
	// on a single node).
	Bus            *bus.Stats
	BusQueueDepths map[uint8]int
	// OpenFiles is the partition open-file cache's figures (nil without a
	// partition plane).
	OpenFiles *partitions.FileCacheStats
}

// PartitionLagTopN bounds the partition groups Observe names one by one.
const PartitionLagTopN = 8

// PartitionLag is one partition group's commit lag on this node.
type PartitionLag struct {
	Stream, Topic, Partition uint32
	Primary                  bool
	View                     uint32
	LagOps                   uint64 // commit_max - commit_min
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
		o.observePartition(e)
	}
	n.plane.mu.RUnlock()
	slices.SortFunc(o.PartitionLagging, func(a, b PartitionLag) int { return cmp.Compare(b.LagOps, a.LagOps) })
	if w := n.metaWAL.Load(); w != nil {
		o.MetadataWALBytes = w.Size()
	}
	if n.bus != nil {
		st := n.bus.Stats()
		o.Bus = &st
		if q, ok := n.bus.(interface{ QueueDepth(uint8) int }); ok {
			o.BusQueueDepths = make(map[uint8]int, len(n.topo.roster))
			for i := range n.topo.roster {
				if uint8(i) != n.topo.self {
					o.BusQueueDepths[uint8(i)] = q.QueueDepth(uint8(i))
				}
			}
		}
	}
	if n.plane != nil && n.plane.files != nil {
		st := n.plane.files.Stats()
		o.OpenFiles = &st
	}
	o.PartitionWritesRefused = n.partitionWritesRefused.Load()
	o.UnroutedReplicaFrames = n.unroutedReplicaMessages.Load()
	return o
}

// observePartition folds one partition group into the aggregates, keeping
// the PartitionLagTopN largest lags (the caller sorts them).
func (o *Observation) observePartition(e *partitionEntry) {
	if !e.pubNormal.Load() {
		o.PartitionViewChanges++
	}
	view := e.pubView.Load()
	o.PartitionViewMax = max(o.PartitionViewMax, view)
	lo, hi := e.pubCommitMin.Load(), e.pubCommitMax.Load()
	if hi <= lo {
		return
	}
	lag := hi - lo
	o.PartitionLagSum += lag
	o.PartitionLagMax = max(o.PartitionLagMax, lag)
	pl := PartitionLag{Stream: e.key.stream, Topic: e.key.topic, Partition: e.key.partition, Primary: e.acceptsWrites(), View: view, LagOps: lag}
	if len(o.PartitionLagging) < PartitionLagTopN {
		o.PartitionLagging = append(o.PartitionLagging, pl)
		return
	}
	least := 0
	for i := range o.PartitionLagging {
		if o.PartitionLagging[i].LagOps < o.PartitionLagging[least].LagOps {
			least = i
		}
	}
	if lag > o.PartitionLagging[least].LagOps {
		o.PartitionLagging[least] = pl
	}
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
