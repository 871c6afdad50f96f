package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func creds(user, pass string) BootInput {
	return BootInput{RootUsername: user, RootUsernameSet: true, RootPassword: pass, RootPasswordSet: true}
}

func TestCheckBoot(t *testing.T) {
	type bootCase struct {
		name    string
		cluster bool
		mutate  func(c *Config)
		in      BootInput
		want    string // "" = boot allowed
		check   func(t *testing.T, plan BootPlan)
	}
	withID := func(in BootInput, id uint8) BootInput { in.ReplicaID, in.ReplicaIDSet = id, true; return in }
	restart := func(in BootInput) BootInput { in.MetadataExists = true; return in }
	cases := []bootCase{
		{name: "cluster without replica id", cluster: true, in: creds("admin", "secret"), want: "cluster.enabled = true requires --replica-id"},
		{name: "cluster replica id in roster", cluster: true, in: withID(creds("admin", "secret"), 2), check: func(t *testing.T, plan BootPlan) {
			if plan.ReplicaID != 2 || plan.Node == nil || plan.Node.Name != "node-c" || !plan.FirstBoot ||
				plan.RootUsername != "admin" || plan.RootPassword != "secret" || plan.GenerateRootPassword {
				t.Errorf("plan = %+v", plan)
			}
		}},
		{name: "replica id not in roster", cluster: true, in: withID(creds("admin", "secret"), 7),
			want: "--replica-id 7 matches no cluster.nodes entry (roster replica ids: 0, 1, 2)"},
		{name: "single node replica id 0 ok", in: withID(creds("admin", "secret"), 0)},
		{name: "single node replica id 1", in: withID(creds("admin", "secret"), 1), want: "--replica-id 1 requires cluster.enabled = true"},
		{name: "cluster first boot without credentials", cluster: true, in: withID(BootInput{}, 0),
			want: "first boot of a cluster replica (no metadata/ under system.path"},
		{name: "cluster restart without credentials ok", cluster: true, in: restart(withID(BootInput{}, 0)), check: func(t *testing.T, plan BootPlan) {
			if plan.FirstBoot || plan.RootUsername != "" || plan.RootPassword != "" {
				t.Errorf("plan = %+v", plan)
			}
		}},
		{name: "single node first boot without credentials generates", in: BootInput{}, check: func(t *testing.T, plan BootPlan) {
			if !plan.GenerateRootPassword || plan.RootUsername != DefaultRootUsername || plan.RootPassword != "" {
				t.Errorf("plan = %+v", plan)
			}
		}},
		{name: "single node restart needs nothing", in: restart(BootInput{}), check: func(t *testing.T, plan BootPlan) {
			if plan.GenerateRootPassword || plan.FirstBoot {
				t.Errorf("plan = %+v", plan)
			}
		}},
		{name: "username alone", in: BootInput{RootUsername: "admin", RootUsernameSet: true},
			want: "IGGY_ROOT_USERNAME is set but IGGY_ROOT_PASSWORD is not"},
		{name: "password alone even on restart", in: restart(BootInput{RootPassword: "secret", RootPasswordSet: true}),
			want: "IGGY_ROOT_PASSWORD is set but IGGY_ROOT_USERNAME is not"},
		{name: "username 3 bytes ok", in: creds("abc", "xyz")},
		{name: "username 2 bytes", in: creds("ab", "secret"), want: "IGGY_ROOT_USERNAME is 2 bytes: must be 3 to 50 bytes"},
		{name: "username 50 bytes ok", in: creds(strings.Repeat("u", 50), "secret")},
		{name: "username 51 bytes", in: creds(strings.Repeat("u", 51), "secret"), want: "IGGY_ROOT_USERNAME is 51 bytes"},
		{name: "password 2 bytes", in: creds("admin", "pw"), want: "IGGY_ROOT_PASSWORD is 2 bytes: must be 3 to 100 bytes"},
		{name: "password 100 bytes ok", in: creds("admin", strings.Repeat("p", 100))},
		{name: "password 101 bytes", in: creds("admin", strings.Repeat("p", 101)), want: "IGGY_ROOT_PASSWORD is 101 bytes"},
		{name: "bad credentials refused on restart too", in: restart(creds("ab", "secret")), want: "IGGY_ROOT_USERNAME is 2 bytes"},
		{name: "restart ignores valid credentials", in: restart(creds("admin", "secret")), check: func(t *testing.T, plan BootPlan) {
			if plan.RootUsername != "" || plan.RootPassword != "" {
				t.Errorf("plan = %+v", plan)
			}
		}},
		{name: "archive_expired unsupported", mutate: func(c *Config) { c.System.Segment.ArchiveExpired = true }, in: creds("admin", "secret"),
			want: "system.segment.archive_expired = true is not supported"},
		{name: "recreate_missing_state unsupported", mutate: func(c *Config) { c.System.Recovery.RecreateMissingState = true }, in: creds("admin", "secret"),
			want: "system.recovery.recreate_missing_state = true is not supported"},
		{name: "unserved transport enabled", mutate: func(c *Config) { c.QUIC.Enabled = true },
			in: BootInput{UnservedTransports: []string{TransportQUIC}}, want: "quic.enabled = true: the quic transport is not served by this build yet"},
		{name: "unserved transport disabled ok", mutate: func(c *Config) { c.QUIC.Enabled, c.HTTP.Enabled = false, false },
			in: BootInput{UnservedTransports: []string{TransportQUIC, TransportHTTP}}},
		{name: "http in cluster without key material warns", cluster: true,
			mutate: func(c *Config) { c.HTTP.Enabled = true }, in: withID(creds("admin", "secret"), 0),
			check: func(t *testing.T, plan BootPlan) {
				if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0].Message, "HTTP forwarding to the primary is disabled") {
					t.Errorf("warnings = %v", plan.Warnings)
				}
			}},
		{name: "http in cluster with psk does not warn", cluster: true,
			mutate: func(c *Config) {
				c.HTTP.Enabled = true
				c.Cluster.Auth.Enabled, c.Cluster.Auth.SharedSecret = true, Secret(strings.Repeat("s", 32))
			}, in: withID(creds("admin", "secret"), 0),
			check: func(t *testing.T, plan BootPlan) {
				if len(plan.Warnings) != 0 {
					t.Errorf("warnings = %v", plan.Warnings)
				}
			}},
		{name: "loopback bind with routable roster ip warns", cluster: true,
			mutate: func(c *Config) { c.Cluster.Nodes[0].IP = "10.0.0.1" }, in: withID(creds("admin", "secret"), 0),
			check: func(t *testing.T, plan BootPlan) {
				if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0].Message, `tcp.address = "127.0.0.1:8090" binds 127.0.0.1, but this node's roster ip is 10.0.0.1`) {
					t.Errorf("warnings = %v", plan.Warnings)
				}
			}},
		{name: "wildcard bind does not warn", cluster: true,
			mutate: func(c *Config) { c.Cluster.Nodes[0].IP = "10.0.0.1"; c.TCP.Address = "0.0.0.0:8090" }, in: withID(creds("admin", "secret"), 0),
			check: func(t *testing.T, plan BootPlan) {
				if len(plan.Warnings) != 0 {
					t.Errorf("warnings = %v", plan.Warnings)
				}
			}},
		{name: "all problems reported together", cluster: true,
			mutate: func(c *Config) { c.System.Segment.ArchiveExpired = true }, in: BootInput{RootUsername: "x", RootUsernameSet: true},
			want: "requires --replica-id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg *Config
			if c.cluster {
				cfg = clusterConfig(t)
			} else {
				cfg = singleNode(t)
			}
			if c.mutate != nil {
				c.mutate(cfg)
			}
			plan, err := CheckBoot(cfg, c.in)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want boot allowed, got: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("want refusal containing %q, got plan %+v", c.want, plan)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("refusal %q does not contain %q", err, c.want)
			}
			if c.check != nil {
				c.check(t, plan)
			}
		})
	}
}

func TestCheckBootJoinsAllRefusals(t *testing.T) {
	cfg := clusterConfig(t)
	cfg.System.Segment.ArchiveExpired = true
	_, err := CheckBoot(cfg, BootInput{RootUsername: "x", RootUsernameSet: true})
	for _, want := range []string{"requires --replica-id", "archive_expired", "IGGY_ROOT_USERNAME is set but IGGY_ROOT_PASSWORD is not"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestMetadataDirExists(t *testing.T) {
	dir := t.TempDir()
	if exists, err := MetadataDirExists(dir); err != nil || exists {
		t.Fatalf("empty dir: %v, %v", exists, err)
	}
	if exists, err := MetadataDirExists(filepath.Join(dir, "absent")); err != nil || exists {
		t.Fatalf("absent dir: %v, %v", exists, err)
	}
	if err := os.Mkdir(filepath.Join(dir, MetadataDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if exists, err := MetadataDirExists(dir); err != nil || !exists {
		t.Fatalf("with metadata/: %v, %v", exists, err)
	}
}

func TestAdvertisedHostFor(t *testing.T) {
	node := NodeConfig{
		Name: "n", IP: "10.0.1.5", AdvertisedAddress: "Public.Example.com",
		AdvertisedAddresses: []AdvertisedAddressSelector{
			{ClientCIDR: "10.0.0.0/16", Address: "10.0.1.5"},
			{ClientCIDR: "10.0.7.0/24", Address: "gw7.example"},
			{ClientCIDR: "2001:db8::/32", Address: "[2001:db8::5]"},
		},
	}
	cases := []struct {
		client string
		want   string
	}{
		{"10.0.3.3", "10.0.1.5"},
		{"10.0.7.9", "gw7.example"},
		{"::ffff:10.0.7.9", "gw7.example"},
		{"2001:db8::77", "2001:db8::5"},
		{"192.0.2.1", "public.example.com"},
		{"", "public.example.com"},
	}
	for _, c := range cases {
		var client netip.Addr
		if c.client != "" {
			client = netip.MustParseAddr(c.client)
		}
		if got := node.AdvertisedHostFor(client); got != c.want {
			t.Errorf("AdvertisedHostFor(%s) = %q, want %q", c.client, got, c.want)
		}
	}
	bare := NodeConfig{IP: "10.0.0.9"}
	if got := bare.AdvertisedHostFor(netip.MustParseAddr("10.0.0.1")); got != "10.0.0.9" {
		t.Errorf("fallback to roster ip = %q", got)
	}
}

func TestParseClientCIDRCanonicalises(t *testing.T) {
	cases := map[string]string{
		"10.0.1.0/16":         "10.0.0.0/16",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:0.0.0.0/96":   "0.0.0.0/0",
		"2001:db8::1/32":      "2001:db8::/32",
		"::ffff:0:0/80":       "::/80",
	}
	for in, want := range cases {
		got, err := ParseClientCIDR(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseClientCIDR(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}
