package config

import "time"

// ClusterConfig is [cluster]. RepairGapDebounceInterval is the newer
// upstream key from the clustering docs (not in the Aug 2026 server).
type ClusterConfig struct {
	Enabled                            bool              `toml:"enabled"`
	Name                               string            `toml:"name"`
	HeartbeatTimeout                   Duration          `toml:"heartbeat_timeout"`
	CommitBroadcastInterval            Duration          `toml:"commit_broadcast_interval"`
	PrepareRetransmitInterval          Duration          `toml:"prepare_retransmit_interval"`
	ViewChangeRetransmitInterval       Duration          `toml:"view_change_retransmit_interval"`
	ViewChangeStatusTimeout            Duration          `toml:"view_change_status_timeout"`
	RequestStartViewRetransmitInterval Duration          `toml:"request_start_view_retransmit_interval"`
	ViewProbeAttemptsMax               uint32            `toml:"view_probe_attempts_max"`
	RepairRetryInterval                Duration          `toml:"repair_retry_interval"`
	RepairGapDebounceInterval          Duration          `toml:"repair_gap_debounce_interval"`
	RepairChunkMax                     uint64            `toml:"repair_chunk_max"`
	SuperblockWedgedFatalTimeout       Duration          `toml:"superblock_wedged_fatal_timeout"`
	Auth                               ClusterAuthConfig `toml:"auth"`
	TLS                                ClusterTLSConfig  `toml:"tls"`
	Coordinator                        CoordinatorConfig `toml:"coordinator"`
	Nodes                              []NodeConfig      `toml:"nodes"`
}

// ClusterAuthConfig is [cluster.auth]: the replica pre-shared key.
type ClusterAuthConfig struct {
	Enabled              bool   `toml:"enabled"`
	SharedSecret         Secret `toml:"shared_secret"`
	PreviousSharedSecret Secret `toml:"previous_shared_secret"`
}

// ClusterTLSConfig is [cluster.tls]: TLS 1.3 on the replica bus.
type ClusterTLSConfig struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
	CAFile     string `toml:"ca_file"`
}

// CoordinatorConfig is [cluster.coordinator] (shard placement; accepted and
// kept for compatibility, this server runs one shard).
type CoordinatorConfig struct {
	SkipShardZeroForReplicas bool `toml:"skip_shard_zero_for_replicas"`
	SkipShardZeroForClients  bool `toml:"skip_shard_zero_for_clients"`
}

// NodeConfig is one [[cluster.nodes]] roster entry. AdvertisedAddress empty
// means unset (clients are told the roster ip).
type NodeConfig struct {
	Name                string                      `toml:"name"`
	IP                  string                      `toml:"ip"`
	AdvertisedAddress   string                      `toml:"advertised_address"`
	AdvertisedAddresses []AdvertisedAddressSelector `toml:"advertised_addresses"`
	ReplicaID           uint8                       `toml:"replica_id"`
	Ports               Ports                       `toml:"ports"`
}

// AdvertisedAddressSelector is one [[cluster.nodes.advertised_addresses]]
// entry: clients whose address falls in ClientCIDR are told Address.
type AdvertisedAddressSelector struct {
	ClientCIDR string `toml:"client_cidr"`
	Address    string `toml:"address"`
}

// Ports are a roster node's listener ports; nil means not configured.
type Ports struct {
	TCP        *uint16 `toml:"tcp"`
	QUIC       *uint16 `toml:"quic"`
	HTTP       *uint16 `toml:"http"`
	WebSocket  *uint16 `toml:"websocket"`
	TCPReplica *uint16 `toml:"tcp_replica"`
}

// Transport names as used in Ports and error messages.
const (
	TransportTCP        = "tcp"
	TransportQUIC       = "quic"
	TransportHTTP       = "http"
	TransportWebSocket  = "websocket"
	TransportTCPReplica = "tcp_replica"
)

// PortEntry is one named roster port.
type PortEntry struct {
	Transport string
	Port      *uint16
}

// All lists the five roster ports in a fixed order (client transports first).
func (p Ports) All() []PortEntry {
	return []PortEntry{
		{TransportTCP, p.TCP}, {TransportQUIC, p.QUIC}, {TransportHTTP, p.HTTP},
		{TransportWebSocket, p.WebSocket}, {TransportTCPReplica, p.TCPReplica},
	}
}

// Get returns the port configured for transport and whether it is set.
func (p Ports) Get(transport string) (uint16, bool) {
	for _, entry := range p.All() {
		if entry.Transport == transport && entry.Port != nil {
			return *entry.Port, true
		}
	}
	return 0, false
}

// NodeByReplicaID returns the roster entry with replicaID, or nil.
func (c *ClusterConfig) NodeByReplicaID(replicaID uint8) *NodeConfig {
	for i := range c.Nodes {
		if c.Nodes[i].ReplicaID == replicaID {
			return &c.Nodes[i]
		}
	}
	return nil
}

// repairGapDebounceFloor is the floor the docs put under
// repair_gap_debounce_interval (⇒ at least 50 ticks).
const repairGapDebounceFloor = 500 * time.Millisecond

// ConsensusTicks are the [cluster] timing knobs converted to 10 ms ticks.
type ConsensusTicks struct {
	HeartbeatTimeoutTicks                   uint64
	CommitBroadcastIntervalTicks            uint64
	PrepareRetransmitIntervalTicks          uint64
	ViewChangeRetransmitIntervalTicks       uint64
	ViewChangeStatusTimeoutTicks            uint64
	RequestStartViewRetransmitIntervalTicks uint64
	RepairRetryIntervalTicks                uint64
	RepairGapDebounceIntervalTicks          uint64
	// SuperblockWedgedFatalTimeoutTicks is 0 when the exit is disabled.
	SuperblockWedgedFatalTimeoutTicks uint64
}

// Ticks converts every consensus timing knob to ticks (rounded down, at
// least one; the repair gap debounce is floored at 500 ms = 50 ticks).
func (c *ClusterConfig) Ticks() ConsensusTicks {
	debounce := c.RepairGapDebounceInterval
	if debounce.Duration < repairGapDebounceFloor {
		debounce = Dur(repairGapDebounceFloor)
	}
	var wedged uint64
	if !c.SuperblockWedgedFatalTimeout.IsZero() {
		wedged = c.SuperblockWedgedFatalTimeout.Ticks()
	}
	return ConsensusTicks{
		HeartbeatTimeoutTicks:                   c.HeartbeatTimeout.Ticks(),
		CommitBroadcastIntervalTicks:            c.CommitBroadcastInterval.Ticks(),
		PrepareRetransmitIntervalTicks:          c.PrepareRetransmitInterval.Ticks(),
		ViewChangeRetransmitIntervalTicks:       c.ViewChangeRetransmitInterval.Ticks(),
		ViewChangeStatusTimeoutTicks:            c.ViewChangeStatusTimeout.Ticks(),
		RequestStartViewRetransmitIntervalTicks: c.RequestStartViewRetransmitInterval.Ticks(),
		RepairRetryIntervalTicks:                c.RepairRetryInterval.Ticks(),
		RepairGapDebounceIntervalTicks:          debounce.Ticks(),
		SuperblockWedgedFatalTimeoutTicks:       wedged,
	}
}
