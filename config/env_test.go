package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, env Env) (*Config, []Warning) {
	t.Helper()
	cfg, warnings, err := Load(env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg, warnings
}

func loadError(t *testing.T, env Env) string {
	t.Helper()
	_, _, err := Load(env)
	if err == nil {
		t.Fatalf("Load(%v) succeeded, want error", env)
	}
	return err.Error()
}

func TestEnvScalarAndNestedOverrides(t *testing.T) {
	cfg, warnings := mustLoad(t, Env{
		"IGGY_SYSTEM_PATH":                             "/var/lib/iggy",
		"IGGY_TCP_ADDRESS":                             "0.0.0.0:9000",
		"IGGY_HTTP_ENABLED":                            "true",
		"IGGY_QUIC_ENABLED":                            "true",
		"IGGY_WEBSOCKET_ENABLED":                       "true",
		"IGGY_CLUSTER_HEARTBEAT_TIMEOUT":               "7s",
		"IGGY_CLUSTER_AUTH_SHARED_SECRET":              "0123456789abcdef0123456789abcdef",
		"IGGY_MESSAGE_BUS_PEER_QUEUE_CAPACITY":         "512",
		"IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE":            "32 MiB",
		"IGGY_SYSTEM_SHARDING_SHUTDOWN_POLL_INTERVAL":  "100ms",
		"IGGY_HTTP_CORS_ALLOWED_METHODS":               "[GET, POST]",
		"IGGY_WEBSOCKET_MAX_FRAME_SIZE":                "1 MiB",
		"IGGY_PARTITION_DURABILITY":                    "persisted",
		"IGGY_CLUSTER_SUPERBLOCK_WEDGED_FATAL_TIMEOUT": "disabled",
		"IGGY_SYSTEM_PARTITION_VALIDATE_CHECKSUM":      "false",
		"IGGY_TCP_TLS_ENABLED":                         "",
		"IGGY_SYSTEM_OPEN_FILES_MAX":                   "2048",
		"IGGY_ROOT_USERNAME":                           "admin",
		"IGGY_TEST_VERBOSE":                            "1",
		"HOME":                                         "/root",
	})
	if len(warnings) != 0 {
		t.Errorf("unexpected warnings: %v", warnings)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"system.path", cfg.System.Path, "/var/lib/iggy"},
		{"tcp.address", cfg.TCP.Address, "0.0.0.0:9000"},
		{"http.enabled", cfg.HTTP.Enabled, true},
		{"quic.enabled", cfg.QUIC.Enabled, true},
		{"websocket.enabled", cfg.WebSocket.Enabled, true},
		{"cluster.heartbeat_timeout", cfg.Cluster.HeartbeatTimeout.Duration, 7 * time.Second},
		{"cluster.auth.shared_secret", cfg.Cluster.Auth.SharedSecret.Reveal(), "0123456789abcdef0123456789abcdef"},
		{"message_bus.peer_queue_capacity", cfg.MessageBus.PeerQueueCapacity, uint64(512)},
		{"message_bus.max_message_size", cfg.MessageBus.MaxMessageSize.Bytes(), 32 * MiB},
		{"system.sharding.shutdown_poll_interval", cfg.System.Sharding.ShutdownPollInterval.Duration, 100 * time.Millisecond},
		{"http.cors.allowed_methods", strings.Join(cfg.HTTP.CORS.AllowedMethods, "|"), "GET|POST"},
		{"websocket.max_frame_size", cfg.WebSocket.MaxFrameSize != nil && *cfg.WebSocket.MaxFrameSize == ByteSize(MiB), true},
		{"partition.durability", cfg.Partition.Durability, DurabilityPersisted},
		{"cluster.superblock_wedged_fatal_timeout", cfg.Cluster.SuperblockWedgedFatalTimeout.IsZero(), true},
		{"system.partition.validate_checksum", cfg.System.Partition.ValidateChecksum, false},
		{"tcp.tls.enabled (empty = unset)", cfg.TCP.TLS.Enabled, false},
		{"system.open_files_max", cfg.System.OpenFilesMax, uint64(2048)},
	}
	for _, check := range checks {
		if check.got != check.want {
			t.Errorf("%s = %v, want %v", check.name, check.got, check.want)
		}
	}
}

func TestEnvNodesReplaceWholeArray(t *testing.T) {
	cfg, warnings := mustLoad(t, Env{
		"IGGY_CLUSTER_NODES_0_NAME":                               "a",
		"IGGY_CLUSTER_NODES_0_IP":                                 "10.0.0.1",
		"IGGY_CLUSTER_NODES_0_REPLICA_ID":                         "0",
		"IGGY_CLUSTER_NODES_0_PORTS_TCP":                          "8090",
		"IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA":                  "9090",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESS":                 "broker.example.com",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_CLIENT_CIDR": "10.0.0.0/16",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_ADDRESS":     "10.0.0.1",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_1_CLIENT_CIDR": "192.168.0.0/24",
		"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_1_ADDRESS":     "192.168.0.9",
	})
	if len(warnings) != 0 {
		t.Errorf("unexpected warnings: %v", warnings)
	}
	if len(cfg.Cluster.Nodes) != 1 {
		t.Fatalf("nodes = %d, want 1 (env replaces the default two-node roster)", len(cfg.Cluster.Nodes))
	}
	node := cfg.Cluster.Nodes[0]
	if node.Name != "a" || node.IP != "10.0.0.1" || node.ReplicaID != 0 || node.AdvertisedAddress != "broker.example.com" {
		t.Fatalf("node = %+v", node)
	}
	if port, ok := node.Ports.Get(TransportTCPReplica); !ok || port != 9090 {
		t.Errorf("ports.tcp_replica = %d, %v", port, ok)
	}
	if _, ok := node.Ports.Get(TransportQUIC); ok {
		t.Error("ports.quic must be unset: env-built entries start empty, not from the file's entry")
	}
	if len(node.AdvertisedAddresses) != 2 || node.AdvertisedAddresses[1].ClientCIDR != "192.168.0.0/24" || node.AdvertisedAddresses[1].Address != "192.168.0.9" {
		t.Fatalf("advertised_addresses = %+v", node.AdvertisedAddresses)
	}
}

func TestEnvIndexErrors(t *testing.T) {
	cases := []struct {
		name string
		env  Env
		want []string
	}{
		{"hole in nodes", Env{"IGGY_CLUSTER_NODES_0_NAME": "a", "IGGY_CLUSTER_NODES_2_NAME": "c"},
			[]string{"IGGY_CLUSTER_NODES_1_*", "cluster.nodes index 1 is missing"}},
		{"hole in advertised addresses", Env{"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_1_ADDRESS": "h"},
			[]string{"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_0_*", "index 0 is missing"}},
		{"node index too large", Env{"IGGY_CLUSTER_NODES_256_NAME": "x"}, []string{"IGGY_CLUSTER_NODES_256_NAME", "0 to 255"}},
		{"selector index too large", Env{"IGGY_CLUSTER_NODES_0_ADVERTISED_ADDRESSES_16_ADDRESS": "h"}, []string{"0 to 15"}},
		{"bad bool", Env{"IGGY_HTTP_ENABLED": "yes please"}, []string{`IGGY_HTTP_ENABLED="yes please"`, "true or false"}},
		{"bad duration", Env{"IGGY_CLUSTER_HEARTBEAT_TIMEOUT": "5x"}, []string{"IGGY_CLUSTER_HEARTBEAT_TIMEOUT", "unknown unit"}},
		{"bad size", Env{"IGGY_PARTITION_WAL_BYTES_MAX": "lots"}, []string{"IGGY_PARTITION_WAL_BYTES_MAX"}},
		{"replica id overflow", Env{"IGGY_CLUSTER_NODES_0_REPLICA_ID": "256"}, []string{"IGGY_CLUSTER_NODES_0_REPLICA_ID", "8 bits"}},
		{"port overflow", Env{"IGGY_CLUSTER_NODES_0_PORTS_TCP": "70000"}, []string{"IGGY_CLUSTER_NODES_0_PORTS_TCP", "16 bits"}},
		{"removed key", Env{"IGGY_SYSTEM_SEGMENT_SIZE": "1 GiB"}, []string{"IGGY_SYSTEM_SEGMENT_SIZE", "segment_size"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			message := loadError(t, c.env)
			for _, want := range c.want {
				if !strings.Contains(message, want) {
					t.Errorf("error %q does not contain %q", message, want)
				}
			}
		})
	}
}

func TestEnvUnknownVariablesWarn(t *testing.T) {
	_, warnings := mustLoad(t, Env{
		"IGGY_TCP_ADRESS":           "typo",
		"IGGY_CLUSTER_NODES_0_NAME": "a",
		"IGGY_CLUSTER_NODES_0_FOO":  "bar",
		"IGGY_CONFIG_PATH":          "",
		"IGGY_ROOT_PASSWORD":        "x",
		"IGGY_CI_BUILD":             "1",
		"IGGY_ENV_PATH":             "/x",
	})
	var names []string
	for _, warning := range warnings {
		names = append(names, warning.Variable)
	}
	if strings.Join(names, ",") != "IGGY_CLUSTER_NODES_0_FOO,IGGY_TCP_ADRESS" {
		t.Fatalf("warnings = %v", warnings)
	}
}

func TestEnvNamesAreUniqueAndCoverKnownSpellings(t *testing.T) {
	names := EnvNames()
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Errorf("duplicate env name %s", name)
		}
		seen[name] = true
	}
	for _, want := range []string{"IGGY_SYSTEM_PATH", "IGGY_TCP_ADDRESS", "IGGY_HTTP_ENABLED", "IGGY_QUIC_ENABLED",
		"IGGY_WEBSOCKET_ENABLED", "IGGY_CLUSTER_ENABLED", "IGGY_CLUSTER_AUTH_PREVIOUS_SHARED_SECRET",
		"IGGY_MESSAGE_BUS_RECONNECT_PERIOD", "IGGY_SYSTEM_LOGGING_LEVEL", "IGGY_HTTP_JWT_ENCODING_SECRET",
		"IGGY_CLUSTER_COORDINATOR_SKIP_SHARD_ZERO_FOR_CLIENTS", "IGGY_PARTITION_CONSUMER_OFFSET_DURABILITY"} {
		if !seen[want] {
			t.Errorf("env name %s is not recognised", want)
		}
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFileThenEnvPrecedence(t *testing.T) {
	path := writeFile(t, `
[tcp]
address = "127.0.0.1:7000"

[system]
path = "from-file"

[http.cors]
allowed_origins = ["https://a.example"]

[[cluster.nodes]]
name = "only"
ip = "10.1.1.1"
replica_id = 0
ports = { tcp = 1, tcp_replica = 2 }
`)
	cfg, _ := mustLoad(t, Env{"IGGY_CONFIG_PATH": path, "IGGY_SYSTEM_PATH": "from-env"})
	if cfg.TCP.Address != "127.0.0.1:7000" {
		t.Errorf("tcp.address = %q, want the file's value", cfg.TCP.Address)
	}
	if cfg.System.Path != "from-env" {
		t.Errorf("system.path = %q, want env to win over the file", cfg.System.Path)
	}
	if !cfg.TCP.Enabled || cfg.System.Logging.Level != "info" {
		t.Error("keys absent from the file must keep their defaults")
	}
	if len(cfg.HTTP.CORS.AllowedOrigins) != 1 || len(cfg.HTTP.CORS.AllowedMethods) != 4 {
		t.Errorf("cors = %+v", cfg.HTTP.CORS)
	}
	if len(cfg.Cluster.Nodes) != 1 || cfg.Cluster.Nodes[0].Name != "only" {
		t.Fatalf("file roster must replace the default roster, got %+v", cfg.Cluster.Nodes)
	}
	if _, ok := cfg.Cluster.Nodes[0].Ports.Get(TransportHTTP); ok {
		t.Error("file roster entry must not inherit the default entry's ports")
	}
}

func TestFileErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"unknown key", "[tcp]\nadress = \"x\"\n", []string{`unknown key "tcp.adress"`}},
		{"unknown table", "[nonsense]\na = 1\n", []string{`unknown key "nonsense"`}},
		{"unknown node field", "[[cluster.nodes]]\nname = \"a\"\nhostname = \"b\"\n", []string{`cluster.nodes.hostname`}},
		{"removed key", "[system.segment]\nsize = \"1 GiB\"\n", []string{`"system.segment.size" was removed`, "segment_size"}},
		{"removed table", "[extra]\nx = 1\n", []string{`"extra" was removed`}},
		{"bad duration", "[cluster]\nheartbeat_timeout = \"soon\"\n", []string{"heartbeat_timeout", "soon"}},
		{"duration without unit", "[cluster]\nheartbeat_timeout = 5\n", []string{"no unit"}},
		{"replica id overflow", "[[cluster.nodes]]\nreplica_id = 300\n", []string{"replica_id"}},
		{"syntax", "[tcp\n", []string{"server.toml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			message := loadError(t, Env{"IGGY_CONFIG_PATH": writeFile(t, c.text)})
			for _, want := range c.want {
				if !strings.Contains(message, want) {
					t.Errorf("error %q does not contain %q", message, want)
				}
			}
		})
	}
	missing := loadError(t, Env{"IGGY_CONFIG_PATH": filepath.Join(t.TempDir(), "absent.toml")})
	if !strings.Contains(missing, "absent.toml") || !strings.Contains(missing, "IGGY_CONFIG_PATH") {
		t.Errorf("missing file error %q must name the file and the variable", missing)
	}
}

func TestUpstreamShippedConfigLoads(t *testing.T) {
	// Keys upstream ships but our defaults leave commented out must still load.
	path := writeFile(t, `
[websocket]
read_buffer_size = "256 KiB"
max_write_buffer_size = "64 MiB"

[[http.jwt.trusted_issuers]]
issuer = "https://issuer.example"
audience = "iggy"
jwks_url = "https://issuer.example/jwks.json"
user_id = 7

[telemetry.logs]
transport = "http"
`)
	cfg, _ := mustLoad(t, Env{"IGGY_CONFIG_PATH": path})
	if cfg.WebSocket.ReadBufferSize == nil || *cfg.WebSocket.ReadBufferSize != ByteSize(256*KiB) {
		t.Errorf("websocket.read_buffer_size = %v", cfg.WebSocket.ReadBufferSize)
	}
	if len(cfg.HTTP.JWT.TrustedIssuers) != 1 || cfg.HTTP.JWT.TrustedIssuers[0].UserID != 7 {
		t.Errorf("trusted_issuers = %+v", cfg.HTTP.JWT.TrustedIssuers)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
