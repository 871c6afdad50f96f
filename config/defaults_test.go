package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestRepositoryConfigTOMLMatchesEmbeddedDefaults(t *testing.T) {
	root, err := os.ReadFile(filepath.Join("..", "config.toml"))
	if err != nil {
		t.Fatalf("reading repository config.toml: %v", err)
	}
	if string(root) != DefaultsTOML {
		t.Fatal("config.toml differs from config/defaults.toml: they must be byte-identical (cp config/defaults.toml config.toml)")
	}
}

func TestDefaultsDecodeAndValidate(t *testing.T) {
	cfg, err := Defaults()
	if err != nil {
		t.Fatalf("Defaults: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults must validate: %v", err)
	}
	if warnings := cfg.Warnings(); len(warnings) != 0 {
		t.Fatalf("defaults must not warn: %v", warnings)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"system.path", cfg.System.Path, "local_data"},
		{"system.open_files_max", cfg.System.OpenFilesMax, uint64(0)},
		{"tcp.enabled", cfg.TCP.Enabled, true},
		{"tcp.address", cfg.TCP.Address, "127.0.0.1:8090"},
		{"tcp.connections_max", cfg.TCP.ConnectionsMax, uint64(4096)},
		{"tcp.connections_per_address_max", cfg.TCP.ConnectionsPerAddressMax, uint64(1024)},
		{"tcp.login_timeout", cfg.TCP.LoginTimeout.Duration, 60 * time.Second},
		{"tcp.frame_read_timeout", cfg.TCP.FrameReadTimeout.Duration, 10 * time.Second},
		{"tcp.send_queue_bytes_max", cfg.TCP.SendQueueBytesMax.Bytes(), 8 * MiB},
		{"tcp.outbound_bytes_max", cfg.TCP.OutboundBytesMax.Bytes(), 256 * MiB},
		{"login.failed_attempts_per_address_max", cfg.Login.FailedAttemptsPerAddressMax, uint64(20)},
		{"login.failed_attempts_per_user_max", cfg.Login.FailedAttemptsPerUserMax, uint64(20)},
		{"login.failed_attempts_refill_interval", cfg.Login.FailedAttemptsRefillInterval.Duration, 5 * time.Second},
		{"login.tracked_entries_max", cfg.Login.TrackedEntriesMax, uint64(4096)},
		{"quic.enabled", cfg.QUIC.Enabled, true},
		{"quic.address", cfg.QUIC.Address, "127.0.0.1:8080"},
		{"http.enabled", cfg.HTTP.Enabled, true},
		{"http.address", cfg.HTTP.Address, "127.0.0.1:3000"},
		{"websocket.enabled", cfg.WebSocket.Enabled, true},
		{"websocket.address", cfg.WebSocket.Address, "127.0.0.1:8092"},
		{"heartbeat.interval", cfg.Heartbeat.Interval.Duration, 30 * time.Second},
		{"cluster.enabled", cfg.Cluster.Enabled, false},
		{"cluster.name", cfg.Cluster.Name, "iggy-cluster"},
		{"cluster.heartbeat_timeout", cfg.Cluster.HeartbeatTimeout.Duration, 5 * time.Second},
		{"cluster.commit_broadcast_interval", cfg.Cluster.CommitBroadcastInterval.Duration, 500 * time.Millisecond},
		{"cluster.prepare_retransmit_interval", cfg.Cluster.PrepareRetransmitInterval.Duration, 250 * time.Millisecond},
		{"cluster.view_change_status_timeout", cfg.Cluster.ViewChangeStatusTimeout.Duration, 5 * time.Second},
		{"cluster.request_start_view_retransmit_interval", cfg.Cluster.RequestStartViewRetransmitInterval.Duration, time.Second},
		{"cluster.view_probe_attempts_max", cfg.Cluster.ViewProbeAttemptsMax, uint32(5)},
		{"cluster.repair_gap_debounce_interval", cfg.Cluster.RepairGapDebounceInterval.Duration, time.Second},
		{"cluster.repair_chunk_max", cfg.Cluster.RepairChunkMax, uint64(128)},
		{"cluster.superblock_wedged_fatal_timeout", cfg.Cluster.SuperblockWedgedFatalTimeout.Duration, 2 * time.Minute},
		{"cluster.coordinator.skip_shard_zero_for_replicas", cfg.Cluster.Coordinator.SkipShardZeroForReplicas, true},
		{"cluster.nodes", len(cfg.Cluster.Nodes), 2},
		{"metadata.journal_slots", cfg.Metadata.JournalSlots, uint64(1024)},
		{"metadata.clients_table_max", cfg.Metadata.ClientsTableMax, uint64(8192)},
		{"partition.wal_bytes_max", cfg.Partition.WALBytesMax.Bytes(), 256 * MiB},
		{"partition.durability", cfg.Partition.Durability, DurabilityReplicated},
		{"partition.consumer_offset_durability", cfg.Partition.ConsumerOffsetDurability, DurabilityReplicated},
		{"partition.transfer_served_cache_bytes_max", cfg.Partition.TransferServedCacheBytesMax.Bytes(), 2176 * MiB},
		{"partition.transfer_artifact_bytes_max", cfg.Partition.TransferArtifactBytesMax.Bytes(), 1088 * MiB},
		{"partition.evicted_ring_bytes_max", cfg.Partition.EvictedRingBytesMax.Bytes(), 16 * MiB},
		{"message_bus.max_message_size", cfg.MessageBus.MaxMessageSize.Bytes(), 64 * MiB},
		{"message_bus.peer_queue_capacity", cfg.MessageBus.PeerQueueCapacity, uint64(8192)}, // upstream 256 (docs/config.md, deviations)
		{"message_bus.peer_queue_bytes_max", cfg.MessageBus.PeerQueueBytesMax.Bytes(), uint64(128 << 20)},
		{"message_bus.reconnect_period", cfg.MessageBus.ReconnectPeriod.Duration, 5 * time.Second},
		{"message_bus.handshake_grace", cfg.MessageBus.HandshakeGrace.Duration, 10 * time.Second},
		{"system.sharding.shutdown_poll_interval", cfg.System.Sharding.ShutdownPollInterval.Duration, 50 * time.Millisecond},
		{"http.jwt.access_token_expiry", cfg.HTTP.JWT.AccessTokenExpiry.Duration, time.Hour},
		{"system.logging.retention", cfg.System.Logging.Retention.Duration, 7 * 24 * time.Hour},
		{"system.memory_pool.size", cfg.System.MemoryPool.Size.Bytes(), 4 * GiB},
		{"quic.initial_mtu", cfg.QUIC.InitialMTU.Bytes(), uint64(1200)},
		{"http.max_request_size", cfg.HTTP.MaxRequestSize.Bytes(), uint64(2_000_000)},
	}
	for _, check := range checks {
		if check.got != check.want {
			t.Errorf("%s = %v, want %v", check.name, check.got, check.want)
		}
	}
	node := cfg.Cluster.Nodes[1]
	if port, ok := node.Ports.Get(TransportTCPReplica); !ok || port != 9091 {
		t.Errorf("cluster.nodes[1].ports.tcp_replica = %d (set %v), want 9091", port, ok)
	}
}

// TestDefaultsDocumentEveryKey walks the struct tree: every key must be set
// in defaults.toml, or (optional keys) appear there in a comment.
func TestDefaultsDocumentEveryKey(t *testing.T) {
	meta, err := toml.Decode(DefaultsTOML, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	documented := func(path string) bool {
		parts := strings.Split(path, ".")
		if meta.IsDefined(parts...) {
			return true
		}
		// Optional keys are shown commented out: "# key = ...".
		last := parts[len(parts)-1]
		for _, line := range strings.Split(DefaultsTOML, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "# "+last+" =") {
				return true
			}
		}
		return false
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		schema := schemaFor(typ)
		for _, leaf := range schema.leaves {
			path := prefix + leaf.path
			if !documented(path) && !(strings.HasPrefix(path, "cluster.nodes.") && documentedNodeKey(leaf.path)) {
				t.Errorf("key %s is not documented in defaults.toml", path)
			}
		}
		for _, array := range schema.arrays {
			if !documented(prefix+array.path) && !strings.Contains(DefaultsTOML, "[["+prefix+array.path+"]]") {
				t.Errorf("array %s is not documented", prefix+array.path)
			}
			walk(typ.FieldByIndex(array.index).Type.Elem(), prefix+array.path+".")
		}
	}
	walk(reflect.TypeFor[Config](), "")
}

// documentedNodeKey: roster entry keys are explained in the roster comment.
func documentedNodeKey(key string) bool {
	for _, line := range strings.Split(DefaultsTOML, "\n") {
		if strings.HasPrefix(line, "#") && strings.Contains(line, key) || strings.HasPrefix(line, key+" =") ||
			strings.Contains(line, "ports = {") && strings.Contains(line, strings.TrimPrefix(key, "ports.")+" =") {
			return true
		}
	}
	return false
}

// TestHTTPKeysDocumented: every [http] key is in docs/config.md's [http]
// table (by full path, or by its last segment in a row of its table).
func TestHTTPKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	schema := schemaFor(reflect.TypeFor[HTTPConfig]())
	paths := make([]string, 0, len(schema.leaves)+len(schema.arrays))
	for _, leaf := range schema.leaves {
		paths = append(paths, "http."+leaf.path)
	}
	for _, array := range schema.arrays {
		paths = append(paths, "http."+array.path)
	}
	for _, path := range paths {
		last := path[strings.LastIndex(path, ".")+1:]
		if !strings.Contains(text, "`"+path+"`") && !strings.Contains(text, "`"+last+"`") {
			t.Errorf("%s is not documented in docs/config.md", path)
		}
	}
}
