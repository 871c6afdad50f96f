package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesProduceAndConsume builds examples/producer and examples/consumer and runs them
// against the real server: what the producer sends, the consumer (alone in its group) prints.
func TestExamplesProduceAndConsume(t *testing.T) {
	s := startServer(t, "")
	iggyCLI(t, s.addr, "", "stream", "create", "demo").ok(t)
	iggyCLI(t, s.addr, "", "topic", "create", "demo", "events", "3", "none").ok(t)
	iggyCLI(t, s.addr, "", "consumer-group", "create", "demo", "events", "workers").ok(t)

	bin := filepath.Dir(serverBinary)
	run := func(name string, args ...string) string {
		t.Helper()
		path := filepath.Join(bin, "example-"+name)
		if out, err := exec.Command("go", "build", "-o", path, "../examples/"+name).CombinedOutput(); err != nil {
			t.Fatalf("build examples/%s: %v\n%s", name, err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, append([]string{"--addr", s.addr}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("examples/%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	if out := run("producer", "--count", "30", "--batch", "7"); !strings.Contains(out, "sent 30 message(s) to demo/events") {
		t.Fatalf("producer: %s", out)
	}
	out := run("consumer", "--limit", "30", "--poll-interval", "5ms")
	if n := strings.Count(out, ": message "); n != 30 {
		t.Fatalf("consumer printed %d messages:\n%s", n, out)
	}
	for _, want := range []string{": message 0\n", ": message 29\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("consumer output lacks %q", want)
		}
	}
	// The consumer committed on exit: the group's stored offsets cover all thirty messages.
	total := uint64(0)
	for p := 0; p < 3; p++ {
		var o struct {
			StoredOffset uint64 `json:"stored_offset"`
		}
		r := iggyCLI(t, s.addr, "", "--output", "json", "consumer-offset", "get", "-k", "consumer-group", "workers", "demo", "events", u32s(uint32(p)))
		if r.code == 0 {
			decodeJSON(t, r.stdout, &o)
			total += o.StoredOffset + 1
		}
	}
	if total != 30 {
		t.Fatalf("stored group offsets cover %d messages", total)
	}
}
