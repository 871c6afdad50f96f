package config

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func port(p uint16) *uint16 { return &p }

func size(b uint64) *ByteSize { s := ByteSize(b); return &s }

// clusterConfig is a valid three-node cluster on one host.
func clusterConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Enabled = true
	// HTTP in a cluster has its own cases (roster http ports, key material);
	// only TCP: cases that enable QUIC or WebSocket add their ports.
	cfg.HTTP.Enabled = false
	cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false
	cfg.Cluster.Nodes = nil
	for i := range 3 {
		cfg.Cluster.Nodes = append(cfg.Cluster.Nodes, NodeConfig{
			Name: "node-" + string(rune('a'+i)), IP: "127.0.0.1", ReplicaID: uint8(i),
			Ports: Ports{TCP: port(uint16(8090 + i)), TCPReplica: port(uint16(9090 + i))},
		})
	}
	return cfg
}

type rule struct {
	name   string
	mutate func(c *Config)
	want   string // "" = must validate
}

func runRules(t *testing.T, base func(t *testing.T) *Config, rules []rule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			cfg := base(t)
			r.mutate(cfg)
			err := cfg.Validate()
			switch {
			case r.want == "" && err != nil:
				t.Fatalf("want valid, got: %v", err)
			case r.want != "" && err == nil:
				t.Fatalf("want error containing %q, got valid", r.want)
			case r.want != "" && !strings.Contains(err.Error(), r.want):
				t.Fatalf("error %q does not contain %q", err, r.want)
			}
		})
	}
}

func singleNode(t *testing.T) *Config {
	t.Helper()
	cfg, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestValidateRulesCheckedEvenWhenClusterDisabled(t *testing.T) {
	runRules(t, singleNode, []rule{
		{"repair_chunk_max 1 ok", func(c *Config) { c.Cluster.RepairChunkMax = 1 }, ""},
		{"repair_chunk_max 0", func(c *Config) { c.Cluster.RepairChunkMax = 0 }, "cluster.repair_chunk_max = 0: must be between 1 and 1024"},
		{"repair_chunk_max 2000", func(c *Config) { c.Cluster.RepairChunkMax = 2000; c.MessageBus.PeerQueueCapacity = 4096 },
			"cluster.repair_chunk_max = 2000: must be between 1 and 1024"},
		{"repair_chunk_max 1024 below queue ok", func(c *Config) { c.Cluster.RepairChunkMax = 1024; c.MessageBus.PeerQueueCapacity = 1025 }, ""},
		{"repair_chunk_max equals queue", func(c *Config) { c.Cluster.RepairChunkMax = 256; c.MessageBus.PeerQueueCapacity = 256 },
			"cluster.repair_chunk_max = 256: must be less than message_bus.peer_queue_capacity = 256"},
		{"peer_queue_bytes_max 0", func(c *Config) { c.MessageBus.PeerQueueBytesMax = 0 },
			"message_bus.peer_queue_bytes_max = 0: must be greater than 0"},
		{"superblock timeout 0 ok", func(c *Config) { c.Cluster.SuperblockWedgedFatalTimeout = Dur(0) }, ""},
		{"superblock timeout 30s ok", func(c *Config) { c.Cluster.SuperblockWedgedFatalTimeout = Dur(30 * time.Second) }, ""},
		{"superblock timeout 29s", func(c *Config) { c.Cluster.SuperblockWedgedFatalTimeout = Dur(29 * time.Second) },
			"cluster.superblock_wedged_fatal_timeout = 29s: must be 0 (disabled) or at least 30s"},
		{"cluster timing ignored when disabled", func(c *Config) { c.Cluster.HeartbeatTimeout = Dur(time.Second); c.Cluster.Nodes = nil }, ""},
	})
}

func TestValidateConnectionLimits(t *testing.T) {
	runRules(t, singleNode, []rule{
		{"connections_max 1 ok", func(c *Config) { c.TCP.ConnectionsMax = 1; c.TCP.ConnectionsPerAddressMax = 1 }, ""},
		{"open_files_max 0 (derived) ok", func(c *Config) { c.System.OpenFilesMax = 0 }, ""},
		{"open_files_max 16 ok", func(c *Config) { c.System.OpenFilesMax = 16 }, ""},
		{"open_files_max 15", func(c *Config) { c.System.OpenFilesMax = 15 },
			"system.open_files_max = 15: must be 0 (derived from the descriptor limit) or between 16 and 1073741824"},
		{"connections_max 0", func(c *Config) { c.TCP.ConnectionsMax = 0 }, "tcp.connections_max = 0: must be between 1 and 1048576"},
		{"connections_max too large", func(c *Config) { c.TCP.ConnectionsMax = 1<<20 + 1 }, "tcp.connections_max = 1048577: must be between 1 and 1048576"},
		{"per address equals max ok", func(c *Config) { c.TCP.ConnectionsPerAddressMax = 4096 }, ""},
		{"per address 0", func(c *Config) { c.TCP.ConnectionsPerAddressMax = 0 },
			"tcp.connections_per_address_max = 0: must be between 1 and tcp.connections_max = 4096"},
		{"per address above max", func(c *Config) { c.TCP.ConnectionsPerAddressMax = 4097 },
			"tcp.connections_per_address_max = 4097: must be between 1 and tcp.connections_max = 4096"},
		{"login_timeout 1ms ok", func(c *Config) { c.TCP.LoginTimeout = Dur(time.Millisecond) }, ""},
		{"login_timeout 0", func(c *Config) { c.TCP.LoginTimeout = Dur(0) }, "tcp.login_timeout = 0: must be nonzero"},
		{"frame_read_timeout 0", func(c *Config) { c.TCP.FrameReadTimeout = Dur(0) }, "tcp.frame_read_timeout = 0: must be nonzero"},
		{"send queue 64 KiB ok", func(c *Config) { c.TCP.SendQueueBytesMax = ByteSize(64 * KiB) }, ""},
		{"send queue below 64 KiB", func(c *Config) { c.TCP.SendQueueBytesMax = ByteSize(64*KiB - 1) },
			"tcp.send_queue_bytes_max = 65535 B: must be at least 64 KiB"},
		{"outbound equal to send queue ok", func(c *Config) { c.TCP.OutboundBytesMax = c.TCP.SendQueueBytesMax }, ""},
		{"outbound below send queue", func(c *Config) { c.TCP.OutboundBytesMax = ByteSize(MiB) },
			"tcp.outbound_bytes_max = 1 MiB: must be at least tcp.send_queue_bytes_max = 8 MiB"},
		{"failed per address 1 ok", func(c *Config) { c.Login.FailedAttemptsPerAddressMax = 1 }, ""},
		{"failed per address 0", func(c *Config) { c.Login.FailedAttemptsPerAddressMax = 0 }, "login.failed_attempts_per_address_max = 0: must be at least 1"},
		{"failed per user 0", func(c *Config) { c.Login.FailedAttemptsPerUserMax = 0 }, "login.failed_attempts_per_user_max = 0: must be at least 1"},
		{"refill 0", func(c *Config) { c.Login.FailedAttemptsRefillInterval = Dur(0) }, "login.failed_attempts_refill_interval = 0: must be nonzero"},
		{"tracked 1 ok", func(c *Config) { c.Login.TrackedEntriesMax = 1 }, ""},
		{"tracked 0", func(c *Config) { c.Login.TrackedEntriesMax = 0 }, "login.tracked_entries_max = 0: must be between 1 and 1048576"},
		{"tracked too large", func(c *Config) { c.Login.TrackedEntriesMax = 1<<20 + 1 }, "login.tracked_entries_max = 1048577: must be between 1 and 1048576"},
	})
}

func TestValidateClusterTiming(t *testing.T) {
	runRules(t, clusterConfig, []rule{
		{"valid cluster", func(c *Config) {}, ""},
		{"empty name", func(c *Config) { c.Cluster.Name = " " }, "cluster.name is empty"},
		{"heartbeat 2s ok", func(c *Config) {
			c.Cluster.HeartbeatTimeout = Dur(2 * time.Second)
			c.Cluster.CommitBroadcastInterval = Dur(500 * time.Millisecond)
		}, ""},
		{"heartbeat below 2s", func(c *Config) {
			c.Cluster.HeartbeatTimeout = Dur(1900 * time.Millisecond)
			c.Cluster.CommitBroadcastInterval = Dur(100 * time.Millisecond)
		}, "cluster.heartbeat_timeout = 1s 900ms: must be at least 2s"},
		{"heartbeat below 4x commit broadcast", func(c *Config) { c.Cluster.CommitBroadcastInterval = Dur(2 * time.Second) },
			"cluster.heartbeat_timeout = 5s: must be at least 4 x cluster.commit_broadcast_interval = 8s"},
		{"commit broadcast zero", func(c *Config) { c.Cluster.CommitBroadcastInterval = Dur(0) }, "cluster.commit_broadcast_interval = 0: must be nonzero"},
		{"prepare retransmit zero", func(c *Config) { c.Cluster.PrepareRetransmitInterval = Dur(0) }, "cluster.prepare_retransmit_interval = 0: must be nonzero"},
		{"view change retransmit zero", func(c *Config) { c.Cluster.ViewChangeRetransmitInterval = Dur(0) }, "cluster.view_change_retransmit_interval = 0: must be nonzero"},
		{"request start view zero", func(c *Config) { c.Cluster.RequestStartViewRetransmitInterval = Dur(0) }, "cluster.request_start_view_retransmit_interval = 0: must be nonzero"},
		{"repair retry zero", func(c *Config) { c.Cluster.RepairRetryInterval = Dur(0) }, "cluster.repair_retry_interval = 0: must be nonzero"},
		{"status timeout zero", func(c *Config) { c.Cluster.ViewChangeStatusTimeout = Dur(0) }, "cluster.view_change_status_timeout = 0: must be nonzero"},
		{"status timeout exactly 4x ok", func(c *Config) { c.Cluster.ViewChangeStatusTimeout = Dur(2 * time.Second) }, ""},
		{"status timeout below 4x", func(c *Config) { c.Cluster.ViewChangeStatusTimeout = Dur(1900 * time.Millisecond) },
			"cluster.view_change_status_timeout = 1s 900ms: must be at least 4 x cluster.view_change_retransmit_interval = 2s"},
		{"probe attempts 100 ok", func(c *Config) { c.Cluster.ViewProbeAttemptsMax = 100 }, ""},
		{"probe attempts 0", func(c *Config) { c.Cluster.ViewProbeAttemptsMax = 0 }, "cluster.view_probe_attempts_max = 0: must be between 1 and 100"},
		{"probe attempts 101", func(c *Config) { c.Cluster.ViewProbeAttemptsMax = 101 }, "cluster.view_probe_attempts_max = 101: must be between 1 and 100"},
	})
}

func TestValidateRoster(t *testing.T) {
	runRules(t, clusterConfig, []rule{
		{"one node ok", func(c *Config) { c.Cluster.Nodes = c.Cluster.Nodes[:1] }, ""},
		{"no nodes", func(c *Config) { c.Cluster.Nodes = nil }, "cluster.nodes is empty"},
		{"33 nodes", func(c *Config) {
			for i := 3; i < 33; i++ {
				c.Cluster.Nodes = append(c.Cluster.Nodes, NodeConfig{Name: "n" + string(rune('A'+i)), IP: "10.0.0.1", ReplicaID: uint8(i),
					Ports: Ports{TCP: port(uint16(100 + i)), TCPReplica: port(uint16(200 + i))}})
			}
		}, "cluster.nodes has 33 entries: at most 32"},
		{"empty name", func(c *Config) { c.Cluster.Nodes[1].Name = "" }, "cluster.nodes[1].name is empty"},
		{"duplicate name", func(c *Config) { c.Cluster.Nodes[1].Name = "node-a" }, `duplicate node name "node-a"`},
		{"replica id out of range", func(c *Config) { c.Cluster.Nodes[2].ReplicaID = 3 }, "replica_id = 3: must be less than the node count 3"},
		{"duplicate replica id", func(c *Config) { c.Cluster.Nodes[2].ReplicaID = 1 }, "duplicate replica_id = 1"},
		{"ids in any order ok", func(c *Config) { c.Cluster.Nodes[0].ReplicaID, c.Cluster.Nodes[2].ReplicaID = 2, 0 }, ""},
		{"empty ip", func(c *Config) { c.Cluster.Nodes[0].IP = "" }, "ip is empty"},
		{"hostname ip", func(c *Config) { c.Cluster.Nodes[0].IP = "broker-1" }, `ip = "broker-1": must be a literal IPv4 or IPv6 address`},
		{"unspecified v4", func(c *Config) { c.Cluster.Nodes[0].IP = "0.0.0.0" }, "must not be the unspecified address"},
		{"unspecified v6", func(c *Config) { c.Cluster.Nodes[0].IP = "::" }, "must not be the unspecified address"},
		{"ipv6 ok", func(c *Config) { c.Cluster.Nodes[0].IP = "::1" }, ""},
		{"tcp port missing even if tcp disabled", func(c *Config) { c.TCP.Enabled = false; c.Cluster.Nodes[0].Ports.TCP = nil },
			"ports.tcp is not set: cluster mode requires explicit roster ports for tcp and tcp_replica"},
		{"tcp_replica missing", func(c *Config) { c.Cluster.Nodes[0].Ports.TCPReplica = nil }, "ports.tcp_replica is not set"},
		{"http port not needed when disabled", func(c *Config) { c.HTTP.Enabled = false }, ""},
		{"http port missing when enabled", func(c *Config) { c.HTTP.Enabled = true }, "ports.http is not set: cluster mode requires an explicit roster port for every enabled transport (http.enabled = true)"},
		{"quic port missing when enabled", func(c *Config) { c.QUIC.Enabled = true }, "ports.quic is not set"},
		{"websocket port missing when enabled", func(c *Config) { c.WebSocket.Enabled = true }, "ports.websocket is not set"},
		{"websocket port present when enabled", func(c *Config) {
			c.WebSocket.Enabled = true
			for i := range c.Cluster.Nodes {
				c.Cluster.Nodes[i].Ports.WebSocket = port(uint16(8190 + 10*i))
			}
		}, ""},
		{"port zero", func(c *Config) { c.Cluster.Nodes[0].Ports.TCP = port(0) }, "ports.tcp = 0: port 0 is not allowed"},
		{"same port across nodes", func(c *Config) { c.Cluster.Nodes[1].Ports.TCP = port(8090) }, "127.0.0.1:8090 is already used by cluster.nodes[0] (node-a) ports.tcp"},
		{"same port across transports", func(c *Config) { c.Cluster.Nodes[0].Ports.TCPReplica = port(8090) }, "127.0.0.1:8090 is already used"},
		{"same port different ips ok", func(c *Config) {
			for i := range c.Cluster.Nodes {
				c.Cluster.Nodes[i].IP = "10.0.0." + string(rune('1'+i))
				c.Cluster.Nodes[i].Ports = Ports{TCP: port(8090), TCPReplica: port(9090)}
			}
		}, ""},
	})
}

func TestValidateAdvertisedAddresses(t *testing.T) {
	selectors := func(pairs ...string) []AdvertisedAddressSelector {
		var out []AdvertisedAddressSelector
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, AdvertisedAddressSelector{ClientCIDR: pairs[i], Address: pairs[i+1]})
		}
		return out
	}
	distinctIPs := func(c *Config) {
		for i := range c.Cluster.Nodes {
			c.Cluster.Nodes[i].IP = "10.0.1." + string(rune('1'+i))
			c.Cluster.Nodes[i].Ports = Ports{TCP: port(8090), TCPReplica: port(9090)}
		}
	}
	runRules(t, clusterConfig, []rule{
		{"hostname ok", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "Broker-1.Example.com" }, ""},
		{"bracketed v6 ok", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "[2001:db8::1]" }, ""},
		{"with port", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "broker:8090" }, "must not include a port"},
		{"bad v6", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "2001:db8::zz" }, "not a valid IPv6"},
		{"all numeric", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "10.0.0.256" }, "only of digits and dots"},
		{"trailing dot", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "broker.example." }, "empty label"},
		{"edge hyphen", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "-broker" }, "cannot start or end with a hyphen"},
		{"underscore", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = "my_broker" }, "not allowed in a hostname"},
		{"label too long", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddress = strings.Repeat("a", 64) + ".com" }, "exceeds 63"},
		{"hostname too long", func(c *Config) {
			c.Cluster.Nodes[0].AdvertisedAddress = strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com"
		}, "limit is 253"},
		{"16 selectors ok", func(c *Config) {
			for i := range 16 {
				c.Cluster.Nodes[0].AdvertisedAddresses = append(c.Cluster.Nodes[0].AdvertisedAddresses,
					AdvertisedAddressSelector{ClientCIDR: "10." + itoaTest(i) + ".0.0/16", Address: "10.9.9.9"})
			}
		}, ""},
		{"17 selectors", func(c *Config) {
			for i := range 17 {
				c.Cluster.Nodes[0].AdvertisedAddresses = append(c.Cluster.Nodes[0].AdvertisedAddresses,
					AdvertisedAddressSelector{ClientCIDR: "10." + itoaTest(i) + ".0.0/16", Address: "10.9.9.9"})
			}
		}, "17 advertised_addresses: at most 16"},
		{"bad cidr", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddresses = selectors("10.0.0.0/33", "h") }, `client_cidr = "10.0.0.0/33"`},
		{"bad selector address", func(c *Config) { c.Cluster.Nodes[0].AdvertisedAddresses = selectors("10.0.0.0/8", "h:1") }, `advertised_addresses[0].address = "h:1"`},
		{"duplicate after truncation", func(c *Config) {
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("10.0.1.0/16", "a.example", "10.0.0.0/16", "b.example")
		}, "duplicate selector"},
		{"duplicate via v4-mapped", func(c *Config) {
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("::ffff:10.0.0.0/104", "a.example", "10.0.0.0/8", "b.example")
		}, "duplicate selector"},
		{"nested selectors ok", func(c *Config) {
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("10.0.0.0/8", "a.example", "10.1.0.0/16", "b.example")
		}, ""},
		{"same catch-all host and port on two nodes", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddress = "lb.example.com"
			c.Cluster.Nodes[1].AdvertisedAddress = "LB.example.com"
		}, "advertised endpoint conflict: lb.example.com:8090"},
		{"same host different ports ok", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddress = "lb.example.com"
			c.Cluster.Nodes[1].AdvertisedAddress = "lb.example.com"
			c.Cluster.Nodes[1].Ports.TCP = port(8091)
		}, ""},
		{"same selector endpoint for disjoint networks ok", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("192.168.1.0/24", "nat.example")
			c.Cluster.Nodes[1].AdvertisedAddresses = selectors("192.168.2.0/24", "nat.example")
		}, ""},
		{"same selector endpoint for overlapping networks", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("192.168.0.0/16", "nat.example")
			c.Cluster.Nodes[1].AdvertisedAddresses = selectors("192.168.2.0/24", "nat.example")
		}, "advertised endpoint conflict: nat.example:8090"},
		{"overlap fully shadowed by own narrower selector ok", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("192.168.0.0/16", "nat.example", "192.168.2.0/24", "other.example")
			c.Cluster.Nodes[1].AdvertisedAddresses = selectors("192.168.2.0/24", "nat.example")
		}, ""},
		{"selector equals another node's catch-all over its network", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddress = "shared.example"
			c.Cluster.Nodes[1].AdvertisedAddresses = selectors("10.0.0.0/8", "shared.example")
		}, "advertised endpoint conflict: shared.example:8090"},
		{"catch-all conflict avoided when own selectors cover the other's network", func(c *Config) {
			distinctIPs(c)
			c.Cluster.Nodes[0].AdvertisedAddress = "shared.example"
			c.Cluster.Nodes[0].AdvertisedAddresses = selectors("10.0.0.0/8", "private-a.example")
			c.Cluster.Nodes[1].AdvertisedAddresses = selectors("10.0.0.0/8", "shared.example")
		}, ""},
	})
}

func itoaTest(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

func TestValidateClusterSecurity(t *testing.T) {
	secret := strings.Repeat("k", 32)
	other := strings.Repeat("p", 32)
	runRules(t, clusterConfig, []rule{
		{"auth with secret ok", func(c *Config) { c.Cluster.Auth.Enabled = true; c.Cluster.Auth.SharedSecret = Secret(secret) }, ""},
		{"auth without secret", func(c *Config) { c.Cluster.Auth.Enabled = true }, "cluster.auth.enabled = true: cluster.auth.shared_secret must be set"},
		{"short secret even with auth off", func(c *Config) { c.Cluster.Auth.SharedSecret = "short" }, "cluster.auth.shared_secret is 5 bytes: must be at least 32 bytes"},
		{"previous ok", func(c *Config) {
			c.Cluster.Auth.Enabled = true
			c.Cluster.Auth.SharedSecret, c.Cluster.Auth.PreviousSharedSecret = Secret(secret), Secret(other)
		}, ""},
		{"previous short", func(c *Config) {
			c.Cluster.Auth.SharedSecret, c.Cluster.Auth.PreviousSharedSecret = Secret(secret), "old"
		}, "cluster.auth.previous_shared_secret is 3 bytes"},
		{"previous equals current", func(c *Config) {
			c.Cluster.Auth.SharedSecret, c.Cluster.Auth.PreviousSharedSecret = Secret(secret), Secret(secret)
		}, "must differ"},
		{"tls without auth", func(c *Config) { c.Cluster.TLS.Enabled, c.Cluster.TLS.SelfSigned = true, true },
			"cluster.tls.enabled = true: requires cluster.auth.enabled = true"},
		{"tls self-signed with auth ok", func(c *Config) {
			c.Cluster.TLS.Enabled, c.Cluster.TLS.SelfSigned = true, true
			c.Cluster.Auth.Enabled, c.Cluster.Auth.SharedSecret = true, Secret(secret)
		}, ""},
		{"tls ca mode missing files", func(c *Config) {
			c.Cluster.TLS.Enabled = true
			c.Cluster.Auth.Enabled, c.Cluster.Auth.SharedSecret = true, Secret(secret)
			c.Cluster.TLS.CertFile, c.Cluster.TLS.KeyFile = "c.pem", "k.pem"
		}, "cluster.tls.ca_file is empty"},
		{"tls ca mode with files ok", func(c *Config) {
			c.Cluster.TLS.Enabled = true
			c.Cluster.Auth.Enabled, c.Cluster.Auth.SharedSecret = true, Secret(secret)
			c.Cluster.TLS.CertFile, c.Cluster.TLS.KeyFile, c.Cluster.TLS.CAFile = "c.pem", "k.pem", "ca.pem"
		}, ""},
	})
	// The secret's value must never appear in a validation message.
	cfg := clusterConfig(t)
	cfg.Cluster.Auth.SharedSecret = "tiny-but-secret"
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "tiny-but-secret") {
		t.Fatalf("validation error must exist and mask the secret: %v", err)
	}
}

func TestValidatePlanesAndBus(t *testing.T) {
	runRules(t, singleNode, []rule{
		{"metadata depth 127 ok", func(c *Config) { c.Metadata.PrepareQueueDepth = 127; c.Metadata.JournalSlots = 1024 }, ""},
		{"metadata depth 0", func(c *Config) { c.Metadata.PrepareQueueDepth = 0 }, "metadata.prepare_queue_depth = 0: must be between 1 and 127"},
		{"metadata depth 128", func(c *Config) { c.Metadata.PrepareQueueDepth = 128 }, "metadata.prepare_queue_depth = 128"},
		{"journal slots 256 ok", func(c *Config) { c.Metadata.JournalSlots = 256 }, ""},
		{"journal slots below 4x64", func(c *Config) { c.Metadata.JournalSlots = 255 }, "metadata.journal_slots = 255: must be at least 4 x max(64, metadata.prepare_queue_depth) = 256"},
		{"journal slots below 4x depth", func(c *Config) { c.Metadata.PrepareQueueDepth = 100; c.Metadata.JournalSlots = 399 }, "= 400"},
		{"journal slots above 2^20", func(c *Config) { c.Metadata.JournalSlots = 1<<20 + 1 }, "metadata.journal_slots = 1048577: must be at most 1048576"},
		{"clients table 2 ok", func(c *Config) { c.Metadata.ClientsTableMax = 2 }, ""},
		{"clients table 1", func(c *Config) { c.Metadata.ClientsTableMax = 1 }, "metadata.clients_table_max = 1: must be between 2 and 65536"},
		{"clients table 65537", func(c *Config) { c.Metadata.ClientsTableMax = 65537 }, "metadata.clients_table_max = 65537"},
		{"partition depth 0", func(c *Config) { c.Partition.PrepareQueueDepth = 0 }, "partition.prepare_queue_depth = 0"},
		{"partition depth 128", func(c *Config) { c.Partition.PrepareQueueDepth = 128 }, "partition.prepare_queue_depth = 128"},
		{"evicted ring 65536 ok", func(c *Config) { c.Partition.EvictedRingCapacity = 65536 }, ""},
		{"evicted ring 0", func(c *Config) { c.Partition.EvictedRingCapacity = 0 }, "partition.evicted_ring_capacity = 0"},
		{"evicted ring 65537", func(c *Config) { c.Partition.EvictedRingCapacity = 65537 }, "partition.evicted_ring_capacity = 65537"},
		{"evicted bytes 256 MiB ok", func(c *Config) { c.Partition.EvictedRingBytesMax = ByteSize(256 * MiB) }, ""},
		{"evicted bytes 0", func(c *Config) { c.Partition.EvictedRingBytesMax = 0 }, "partition.evicted_ring_bytes_max = 0 B: must be between 1 B and 256 MiB"},
		{"evicted bytes too big", func(c *Config) { c.Partition.EvictedRingBytesMax = ByteSize(256*MiB + 1) }, "partition.evicted_ring_bytes_max"},
		{"served cache 0", func(c *Config) { c.Partition.TransferServedCacheBytesMax = 0 }, "partition.transfer_served_cache_bytes_max = 0 B"},
		{"served cache 65 GiB", func(c *Config) { c.Partition.TransferServedCacheBytesMax = ByteSize(65 * GiB) }, "must be between 1 B and 64 GiB"},
		{"artifact below floor", func(c *Config) { c.Partition.TransferArtifactBytesMax = ByteSize(GiB) },
			"partition.transfer_artifact_bytes_max = 1 GiB: must be at least the largest segment (1 GiB) + message_bus.max_message_size"},
		{"artifact floor follows bus size", func(c *Config) {
			c.Partition.TransferArtifactBytesMax = ByteSize(GiB + 16*MiB)
			c.MessageBus.MaxMessageSize = ByteSize(16 * MiB)
		}, ""},
		{"artifact 65 GiB", func(c *Config) { c.Partition.TransferArtifactBytesMax = ByteSize(65 * GiB) }, "partition.transfer_artifact_bytes_max = 65 GiB: must be between"},
		{"wal equals bus size ok", func(c *Config) { c.Partition.WALBytesMax = ByteSize(64 * MiB) }, ""},
		{"wal below bus size", func(c *Config) { c.Partition.WALBytesMax = ByteSize(63 * MiB) }, "partition.wal_bytes_max = 63 MiB: must be at least message_bus.max_message_size = 64 MiB"},
		{"wal above 64 GiB", func(c *Config) { c.Partition.WALBytesMax = ByteSize(65 * GiB) }, "partition.wal_bytes_max = 65 GiB: must be at most 64 GiB"},
		{"durability persisted ok", func(c *Config) {
			c.Partition.Durability = DurabilityPersisted
			c.Partition.ConsumerOffsetDurability = DurabilityPersisted
		}, ""},
		{"durability bad", func(c *Config) { c.Partition.Durability = "fsync" }, `partition.durability = "fsync": must be "replicated" or "persisted"`},
		{"offset durability bad", func(c *Config) { c.Partition.ConsumerOffsetDurability = "" }, `partition.consumer_offset_durability = ""`},
		{"max batch 512 ok", func(c *Config) { c.MessageBus.MaxBatch = 512 }, ""},
		{"max batch 0", func(c *Config) { c.MessageBus.MaxBatch = 0 }, "message_bus.max_batch = 0: must be between 1 and 512"},
		{"max batch 513", func(c *Config) { c.MessageBus.MaxBatch = 513 }, "message_bus.max_batch = 513"},
		{"bus size 256", func(c *Config) { c.MessageBus.MaxMessageSize = 256 }, "message_bus.max_message_size = 256 B: must exceed the 256-byte state-chunk header"},
		{"peer queue 0", func(c *Config) { c.MessageBus.PeerQueueCapacity = 0 }, "message_bus.peer_queue_capacity = 0: must be greater than 0"},
		{"reconnect 0", func(c *Config) { c.MessageBus.ReconnectPeriod = Dur(0) }, "message_bus.reconnect_period = 0: must be nonzero"},
		{"close peer 0", func(c *Config) { c.MessageBus.ClosePeerTimeout = Dur(0) }, "message_bus.close_peer_timeout = 0"},
		{"close grace 0", func(c *Config) { c.MessageBus.CloseGrace = Dur(0) }, "message_bus.close_grace = 0"},
		{"handshake grace 0", func(c *Config) { c.MessageBus.HandshakeGrace = Dur(0) }, "message_bus.handshake_grace = 0"},
	})
}

func TestValidateShardingAndSystem(t *testing.T) {
	runRules(t, singleNode, []rule{
		{"inbox 2^20 ok", func(c *Config) { c.System.Sharding.InboxCapacity = 1 << 20 }, ""},
		{"inbox 0", func(c *Config) { c.System.Sharding.InboxCapacity = 0 }, "system.sharding.inbox_capacity = 0: must be between 1 and 1048576"},
		{"reply inbox too big", func(c *Config) { c.System.Sharding.ReplyInboxCapacity = 1<<20 + 1 }, "system.sharding.reply_inbox_capacity = 1048577"},
		{"drain 600s ok", func(c *Config) {
			c.System.Sharding.ShutdownDrainTimeout = Dur(600 * time.Second)
			c.System.Sharding.ShutdownJoinTimeout = Dur(600 * time.Second)
		}, ""},
		{"drain 0", func(c *Config) { c.System.Sharding.ShutdownDrainTimeout = Dur(0) }, "system.sharding.shutdown_drain_timeout = 0s: must be greater than 0 and at most 600s"},
		{"drain 601s", func(c *Config) {
			c.System.Sharding.ShutdownDrainTimeout = Dur(601 * time.Second)
			c.System.Sharding.ShutdownJoinTimeout = Dur(700 * time.Second)
		}, "system.sharding.shutdown_drain_timeout = 10m 1s"},
		{"poll 0", func(c *Config) { c.System.Sharding.ShutdownPollInterval = Dur(0) }, "system.sharding.shutdown_poll_interval = 0s: must be greater than 0 and at most 5s"},
		{"poll above drain", func(c *Config) {
			c.System.Sharding.ShutdownDrainTimeout = Dur(time.Second)
			c.System.Sharding.ShutdownPollInterval = Dur(2 * time.Second)
		}, "must not exceed system.sharding.shutdown_drain_timeout = 1s"},
		{"join below drain", func(c *Config) { c.System.Sharding.ShutdownJoinTimeout = Dur(5 * time.Second) }, "system.sharding.shutdown_join_timeout = 5s: must be at least"},
		{"join above 900s", func(c *Config) { c.System.Sharding.ShutdownJoinTimeout = Dur(901 * time.Second) }, "and at most 900s"},
		{"reconcile 30s ok", func(c *Config) { c.System.Sharding.ReconcilePeriodicInterval = Dur(30 * time.Second) }, ""},
		{"reconcile 31s", func(c *Config) { c.System.Sharding.ReconcilePeriodicInterval = Dur(31 * time.Second) }, "system.sharding.reconcile_periodic_interval = 31s: must be at most 30s"},
		{"cpu all ok", func(c *Config) { c.System.Sharding.CPUAllocation = "all" }, ""},
		{"cpu count ok", func(c *Config) { c.System.Sharding.CPUAllocation = "4" }, ""},
		{"cpu range ok", func(c *Config) { c.System.Sharding.CPUAllocation = "2..6" }, ""},
		{"cpu bad", func(c *Config) { c.System.Sharding.CPUAllocation = "lots" }, `system.sharding.cpu_allocation = "lots"`},
		{"cpu reversed range", func(c *Config) { c.System.Sharding.CPUAllocation = "6..2" }, "start < end"},
		{"empty system path", func(c *Config) { c.System.Path = "" }, "system.path is empty"},
		{"log level bad", func(c *Config) { c.System.Logging.Level = "loud" }, `system.logging.level = "loud"`},
		{"log level trace ok", func(c *Config) { c.System.Logging.Level = "TRACE" }, ""},
		{"rebalancing 0", func(c *Config) { c.ConsumerGroup.RebalancingTimeout = Dur(0) }, "consumer_group.rebalancing_timeout = 0"},
		{"heartbeat interval 0 enabled", func(c *Config) { c.Heartbeat.Interval = Dur(0) }, "heartbeat.interval = 0"},
		{"heartbeat interval 0 disabled ok", func(c *Config) { c.Heartbeat.Interval = Dur(0); c.Heartbeat.Enabled = false }, ""},
		{"encryption without key", func(c *Config) { c.System.Encryption.Enabled = true }, "system.encryption.key must be set"},
		{"encryption key ok", func(c *Config) {
			c.System.Encryption.Enabled = true
			c.System.Encryption.Key = Secret(base64.StdEncoding.EncodeToString(make([]byte, 32)))
		}, ""},
		{"encryption key 16 bytes", func(c *Config) {
			c.System.Encryption.Enabled = true
			c.System.Encryption.Key = Secret(base64.StdEncoding.EncodeToString(make([]byte, 16)))
		}, "decodes to 16 bytes, not 32: it must be the base64"},
		{"encryption key not base64", func(c *Config) {
			c.System.Encryption.Enabled = true
			c.System.Encryption.Key = "not base64 at all!"
		}, "system.encryption.key (masked) is not valid base64: it must be the base64"},
		{"encryption key ignored when disabled", func(c *Config) { c.System.Encryption.Key = "junk" }, ""},
		{"rebalancing 10s", func(c *Config) { c.ConsumerGroup.RebalancingTimeout = Dur(10 * time.Second) }, "consumer_group.rebalancing_timeout = 10s: only the default 30s is accepted"},
		{"memory pool size", func(c *Config) { c.System.MemoryPool.Size = ByteSize(GiB) }, "system.memory_pool.size = 1 GiB, bucket_capacity = 8192: only the defaults"},
		{"memory pool buckets", func(c *Config) { c.System.MemoryPool.BucketCapacity = 128 }, "bucket_capacity = 128: only the defaults"},
		{"memory pool disabled ok", func(c *Config) { c.System.MemoryPool.Enabled = false }, ""},
		{"log path empty", func(c *Config) { c.System.Logging.Path = "" }, "system.logging.path is empty"},
		{"log path empty, file logging off ok", func(c *Config) { c.System.Logging.Path = ""; c.System.Logging.FileEnabled = false }, ""},
		{"log rotation check 0", func(c *Config) { c.System.Logging.RotationCheckInterval = Dur(0) }, "system.logging.rotation_check_interval = 0"},
		{"log sizes unlimited ok", func(c *Config) {
			c.System.Logging.MaxFileSize = 0
			c.System.Logging.MaxTotalSize = 0
			c.System.Logging.Retention = Dur(0)
		}, ""},
	})
}

func TestValidateTransports(t *testing.T) {
	runRules(t, singleNode, []rule{
		{"tcp address bad", func(c *Config) { c.TCP.Address = "localhost" }, `tcp.address = "localhost": must be host:port`},
		{"tcp address v6 ok", func(c *Config) { c.TCP.Address = "[::1]:8090" }, ""},
		{"disabled transport address not checked", func(c *Config) { c.QUIC.Enabled, c.QUIC.Address = false, "nonsense" }, ""},
		{"enabled transport address checked", func(c *Config) { c.QUIC.Address = "nonsense" }, `quic.address = "nonsense": must be host:port`},
		{"quic certificate files missing", func(c *Config) { c.QUIC.Certificate.SelfSigned = false }, "quic.certificate.cert_file and quic.certificate.key_file must be set"},
		{"quic bidi streams zero", func(c *Config) { c.QUIC.MaxConcurrentBidiStreams = 0 }, "quic.max_concurrent_bidi_streams = 0: must be between 1 and 1024"},
		{"quic mtu below 1200", func(c *Config) { c.QUIC.InitialMTU = 1000 }, "quic.initial_mtu = 1000 B: must be between 1200 B"},
		{"quic window zero", func(c *Config) { c.QUIC.StreamReceiveWindow = 0 }, "quic.stream_receive_window = 0 B: must be between 1 B and 4 GiB"},
		{"quic idle timeout zero", func(c *Config) { c.QUIC.MaxIdleTimeout = Duration{} }, "quic.max_idle_timeout = 0: must be nonzero"},
		{"quic keep-alive above idle", func(c *Config) { c.QUIC.KeepAliveInterval = c.QUIC.MaxIdleTimeout }, "quic.keep_alive_interval = 30s: must be below quic.max_idle_timeout"},
		{"quic disabled not checked", func(c *Config) { c.QUIC.Enabled, c.QUIC.InitialMTU = false, 1 }, ""},
		{"websocket tls files missing", func(c *Config) {
			c.WebSocket.TLS.Enabled, c.WebSocket.TLS.SelfSigned, c.WebSocket.TLS.KeyFile = true, false, ""
		}, "websocket.tls.cert_file and websocket.tls.key_file must be set"},
		{"tcp tls files missing", func(c *Config) { c.TCP.TLS.Enabled, c.TCP.TLS.SelfSigned, c.TCP.TLS.CertFile = true, false, "" }, "tcp.tls.cert_file and tcp.tls.key_file must be set"},
		{"http jwt algorithm", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.JWT.Algorithm = "RS256" }, `http.jwt.algorithm = "RS256": must be HS256, HS384 or HS512`},
		{"http tls missing files", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.TLS.Enabled = true; c.HTTP.TLS.KeyFile = "" }, "http.tls.cert_file and http.tls.key_file must be set"},
		{"trusted issuer ok", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "https://idp", JWKSURL: "https://idp/jwks", UserID: 3}}
		}, ""},
		{"trusted issuer empty issuer", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{JWKSURL: "https://idp/jwks", UserID: 3}}
		}, "http.jwt.trusted_issuers[0].issuer is empty"},
		{"trusted issuer empty jwks url", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "https://idp", UserID: 3}}
		}, "http.jwt.trusted_issuers[0].jwks_url is empty"},
		{"trusted issuer jwks url not http", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "https://idp", JWKSURL: "file:///etc/jwks", UserID: 3}}
		}, `http.jwt.trusted_issuers[0].jwks_url = "file:///etc/jwks": must be an http(s) URL`},
		{"trusted issuer root user", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "https://idp", JWKSURL: "https://idp/jwks"}}
		}, "http.jwt.trusted_issuers[0].user_id = 0"},
		{"ws zero size", func(c *Config) { c.WebSocket.ReadBufferSize = size(0) }, "websocket.read_buffer_size = 0: must be nonzero"},
		{"ws frame above message", func(c *Config) { c.WebSocket.MaxFrameSize = size(2 * MiB); c.WebSocket.MaxMessageSize = size(MiB) },
			"websocket.max_frame_size = 2 MiB: must not exceed websocket.max_message_size = 1 MiB"},
		{"ws message above bus", func(c *Config) { c.WebSocket.MaxMessageSize = size(65 * MiB) }, "websocket.max_message_size = 65 MiB: must not exceed message_bus.max_message_size = 64 MiB"},
		{"ws frame above bus", func(c *Config) { c.WebSocket.MaxFrameSize = size(65 * MiB) }, "websocket.max_frame_size = 65 MiB: must not exceed message_bus"},
		{"ws write buffer pair", func(c *Config) { c.WebSocket.MaxWriteBufferSize = size(128 * KiB) }, "websocket.max_write_buffer_size = 128 KiB: must exceed websocket.write_buffer_size = 128 KiB"},
		{"ws write buffer pair ok", func(c *Config) {
			c.WebSocket.MaxWriteBufferSize = size(MiB)
			c.WebSocket.WriteBufferSize = size(512 * KiB)
		}, ""},
	})
}

func TestValidateReportsEveryViolation(t *testing.T) {
	cfg := clusterConfig(t)
	cfg.Cluster.RepairChunkMax = 2000
	cfg.Cluster.ViewProbeAttemptsMax = 0
	cfg.Metadata.ClientsTableMax = 1
	err := cfg.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"cluster.repair_chunk_max = 2000", "cluster.view_probe_attempts_max = 0", "metadata.clients_table_max = 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("joined error lacks %q:\n%v", want, err)
		}
	}
}

func TestServedCacheWarning(t *testing.T) {
	cfg := singleNode(t)
	cfg.Partition.TransferServedCacheBytesMax = ByteSize(GiB)
	warnings := cfg.Warnings()
	if len(warnings) != 1 || !strings.Contains(warnings[0].Message, "partition.transfer_served_cache_bytes_max") {
		t.Fatalf("warnings = %v", warnings)
	}
}
