package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		text string
		want time.Duration
	}{
		{"5s", 5 * time.Second}, {"500ms", 500 * time.Millisecond}, {"2m", 2 * time.Minute},
		{"1h 30m", 90 * time.Minute}, {"1 m", time.Minute}, {"30 s", 30 * time.Second},
		{"7 days", 7 * 24 * time.Hour}, {"1h30m", 90 * time.Minute}, {"0", 0}, {"disabled", 0},
		{"unlimited", 0}, {"none", 0}, {"0 s", 0}, {"10 minutes", 10 * time.Minute}, {"1us", time.Microsecond},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.text)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.text, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "5", "5x", "s", "1.5s", "-1s", "5s garbage"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded, want error", bad)
		}
	}
}

func TestDurationStringRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, 90 * time.Minute, 500 * time.Millisecond, 2*time.Minute + 5*time.Second, 36 * time.Hour} {
		text := Dur(d).String()
		back, err := ParseDuration(text)
		if err != nil || back != d {
			t.Errorf("%v rendered %q parsed back as %v, %v", d, text, back, err)
		}
	}
}

func TestTicksRoundDownWithOneTickMinimum(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want uint64
	}{
		{0, 1}, {5 * time.Millisecond, 1}, {10 * time.Millisecond, 1}, {19 * time.Millisecond, 1},
		{20 * time.Millisecond, 2}, {255 * time.Millisecond, 25}, {5 * time.Second, 500}, {time.Second, 100},
	}
	for _, c := range cases {
		if got := Dur(c.d).Ticks(); got != c.want {
			t.Errorf("Dur(%v).Ticks() = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestClusterTicks(t *testing.T) {
	cfg, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	ticks := cfg.Cluster.Ticks()
	if ticks.HeartbeatTimeoutTicks != 500 || ticks.CommitBroadcastIntervalTicks != 50 || ticks.PrepareRetransmitIntervalTicks != 25 ||
		ticks.ViewChangeRetransmitIntervalTicks != 50 || ticks.ViewChangeStatusTimeoutTicks != 500 ||
		ticks.RequestStartViewRetransmitIntervalTicks != 100 || ticks.RepairRetryIntervalTicks != 100 ||
		ticks.RepairGapDebounceIntervalTicks != 100 || ticks.SuperblockWedgedFatalTimeoutTicks != 12000 {
		t.Fatalf("default ticks = %+v", ticks)
	}
	cfg.Cluster.RepairGapDebounceInterval = Dur(120 * time.Millisecond)
	cfg.Cluster.SuperblockWedgedFatalTimeout = Dur(0)
	ticks = cfg.Cluster.Ticks()
	if ticks.RepairGapDebounceIntervalTicks != 50 {
		t.Errorf("repair gap debounce 120ms = %d ticks, want the 500ms floor = 50", ticks.RepairGapDebounceIntervalTicks)
	}
	if ticks.SuperblockWedgedFatalTimeoutTicks != 0 {
		t.Errorf("disabled superblock timeout = %d ticks, want 0", ticks.SuperblockWedgedFatalTimeoutTicks)
	}
}

func TestParseByteSize(t *testing.T) {
	cases := []struct {
		text string
		want uint64
	}{
		{"64 MiB", 64 * MiB}, {"1 GB", 1_000_000_000}, {"1200 B", 1200}, {"4096", 4096}, {"2176 MiB", 2176 * MiB},
		{"1.5 GiB", 3 * GiB / 2}, {"16KiB", 16 * KiB}, {"unlimited", 0}, {"0", 0}, {"2 mb", 2_000_000},
	}
	for _, c := range cases {
		got, err := ParseByteSize(c.text)
		if err != nil || got.Bytes() != c.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", c.text, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "MiB", "12 parsecs", "-1 B", "99999999999999999999 TiB"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) succeeded, want error", bad)
		}
	}
	if s := ByteSize(64 * MiB).String(); s != "64 MiB" {
		t.Errorf("64 MiB renders %q", s)
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	secret := Secret("super-secret-value-of-32-bytes!!")
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", secret)
	cfg, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Auth.SharedSecret = secret
	cfg.HTTP.JWT.EncodingSecret = secret
	cfg.System.Encryption.Key = secret
	encoded, err := EncodeTOML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	redacted := cfg.Redacted()
	outputs := map[string]string{
		"%s": fmt.Sprintf("%s", secret), "%v": fmt.Sprintf("%v", secret), "%#v": fmt.Sprintf("%#v", secret),
		"slog": logged.String(), "toml": encoded, "redacted %+v": fmt.Sprintf("%+v", *redacted),
		"redacted reveal": redacted.Cluster.Auth.SharedSecret.Reveal(),
	}
	for name, output := range outputs {
		if strings.Contains(output, "super-secret") {
			t.Errorf("%s leaks the secret: %s", name, output)
		}
	}
	if cfg.Cluster.Auth.SharedSecret.Reveal() != string(secret) {
		t.Error("Redacted must not modify the original")
	}
}
