package bench

import (
	"strings"
	"testing"
)

func TestCheckAddressLoopbackOnly(t *testing.T) {
	accepted := []string{"127.0.0.1:8090", "127.3.4.5:1", "localhost:8090", "LOCALHOST:9", "[::1]:8090", "[::ffff:127.0.0.1]:80"}
	for _, a := range accepted {
		if err := CheckAddress(a, false); err != nil {
			t.Errorf("CheckAddress(%q) = %v, want accepted", a, err)
		}
	}
	refused := []string{"10.0.0.1:8090", "192.168.1.10:8090", "172.16.0.1:8090", "8.8.8.8:53", "example.com:8090",
		"[2001:db8::1]:8090", "0.0.0.0:8090", "[::]:8090"}
	for _, a := range refused {
		err := CheckAddress(a, false)
		if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("CheckAddress(%q) = %v, want a refusal naming --allow-remote", a, err)
		}
		if err := CheckAddress(a, true); err != nil {
			t.Errorf("CheckAddress(%q, allowRemote) = %v, want accepted", a, err)
		}
	}
	for _, a := range []string{"127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:http", ":8090x"} {
		if err := CheckAddress(a, true); err == nil {
			t.Errorf("CheckAddress(%q) accepted a malformed address", a)
		}
	}
}

func TestNormalizeDerivesWorkloadShape(t *testing.T) {
	pinned := DefaultConfig(PinnedProducerAndConsumer)
	if err := pinned.Normalize(); err != nil {
		t.Fatal(err)
	}
	if pinned.Streams != 8 || pinned.Partitions != 1 || pinned.MessageBatches != DefaultMessageBatches {
		t.Errorf("pinned defaults: streams %d partitions %d batches %d, want 8, 1, %d", pinned.Streams,
			pinned.Partitions, pinned.MessageBatches, DefaultMessageBatches)
	}
	balanced := DefaultConfig(BalancedProducer)
	if err := balanced.Normalize(); err != nil {
		t.Fatal(err)
	}
	if balanced.Streams != 1 || balanced.Partitions != DefaultBalancedPartitions || balanced.Consumers != 0 {
		t.Errorf("balanced-producer: streams %d partitions %d consumers %d, want 1, %d, 0", balanced.Streams,
			balanced.Partitions, balanced.Consumers, DefaultBalancedPartitions)
	}
	consumer := DefaultConfig(PinnedConsumer)
	consumer.Consumers = 3
	if err := consumer.Normalize(); err != nil {
		t.Fatal(err)
	}
	if consumer.Producers != 0 || consumer.Streams != 3 {
		t.Errorf("pinned-consumer: producers %d streams %d, want 0 and 3", consumer.Producers, consumer.Streams)
	}
	total := DefaultConfig(PinnedProducer)
	total.TotalDataBytes = 1_000_000_000 // 8 producers × 125 batches of 1 MB
	if err := total.Normalize(); err != nil {
		t.Fatal(err)
	}
	if total.MessageBatches != 125 {
		t.Errorf("--total-data 1GB over 8 producers: %d batches each, want 125", total.MessageBatches)
	}
	again := total
	if err := again.Normalize(); err != nil || again != total {
		t.Errorf("a second Normalize changed the config or failed (%v): %+v, first %+v", err, again, total)
	}
}

func TestNormalizeRejectsBadFlags(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"remote address", func(c *Config) { c.Address = "10.1.2.3:8090" }, "--allow-remote"},
		{"no producers", func(c *Config) { c.Producers = 0 }, "--producers"},
		{"too many consumers", func(c *Config) { c.Consumers = actorsMax + 1 }, "--consumers"},
		{"zero message size", func(c *Config) { c.MessageSizeBytes = 0 }, "--message-size"},
		{"batch over a frame", func(c *Config) { c.MessageSizeBytes, c.MessagesPerBatch = 1_000_000, 100 }, "limit"},
		{"both sizes", func(c *Config) { c.MessageBatches, c.TotalDataBytes = 5, 1000 }, "exclusive"},
		{"negative rate", func(c *Config) { c.RateLimitMBps = -1 }, "--rate-limit"},
		{"durability", func(c *Config) { c.Durability = "fsync" }, "--durability"},
		{"negative warmup", func(c *Config) { c.Warmup = -1 }, "--warmup"},
		{"no duration", func(c *Config) { c.DurationMax = 0 }, "--duration-max"},
		{"workload", func(c *Config) { c.Workload = "pinned" }, "unknown workload"},
		{"empty user", func(c *Config) { c.Username = "" }, "--username"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig(PinnedProducerAndConsumer)
		tc.mutate(&cfg)
		err := cfg.Normalize()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Normalize() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	good := map[string]uint64{"1GB": 1e9, "500 MB": 500e6, "1GiB": 1 << 30, "4096": 4096, "1.5KB": 1500, "2kib": 2048, "7b": 7}
	for in, want := range good {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1GB", "0", "1XB", "1e30TB", "one GB"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
