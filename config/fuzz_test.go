package config

import (
	"strings"
	"testing"
)

// FuzzParsers feeds arbitrary text to every value parser: bad input must
// give an error, never a panic, and accepted values must be well-formed.
func FuzzParsers(f *testing.F) {
	for _, seed := range []string{"5s", "1h 30m", "64 MiB", "1.5GiB", "::ffff:10.0.0.0/104", "[2001:db8::1]",
		"broker-1.example.com", "10.0.0.256", "a:b", "", "0", "unlimited", "18446744073709551615 TiB", "99999999999999999999s"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if d, err := ParseDuration(text); err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = negative %v", text, d)
		}
		_, _ = ParseByteSize(text)
		if host, err := ParseAdvertisedHost(text); err == nil {
			if host.Hostname != "" && (strings.ContainsAny(host.Hostname, ":_ ") || host.Hostname != strings.ToLower(host.Hostname)) {
				t.Fatalf("ParseAdvertisedHost(%q) accepted hostname %q", text, host.Hostname)
			}
		}
		_, _ = ParseClientCIDR(text)
		_, _ = parseDotEnv(text)
		_ = parseStringList(text)
	})
}

// FuzzLoadEnv applies arbitrary IGGY_* names and values: Load must return
// an error or a configuration, never panic.
func FuzzLoadEnv(f *testing.F) {
	f.Add("IGGY_CLUSTER_NODES_0_PORTS_TCP", "8090")
	f.Add("IGGY_CLUSTER_NODES_3_ADVERTISED_ADDRESSES_0_CLIENT_CIDR", "10.0.0.0/8")
	f.Add("IGGY_HTTP_JWT_TRUSTED_ISSUERS_0_USER_ID", "7")
	f.Add("IGGY_CLUSTER_NODES_", "x")
	f.Add("IGGY_CLUSTER_NODES_99999999999999999999_NAME", "x")
	f.Fuzz(func(t *testing.T, name, value string) {
		cfg, _, err := Load(Env{"IGGY_" + strings.TrimPrefix(name, "IGGY_"): value})
		if err == nil {
			_ = cfg.Validate()
		}
	})
}
