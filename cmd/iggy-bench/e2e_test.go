package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/bench"
	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

const (
	serverBootTimeout = 20 * time.Second
	e2eRunTimeout     = 60 * time.Second
)

var (
	serverBuildOnce sync.Once
	serverBinary    string
	serverBuildErr  error
)

// buildServer compiles ./cmd/iggy-server once per test binary.
func buildServer(t *testing.T) string {
	t.Helper()
	serverBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iggy-bench-e2e-")
		if err != nil {
			serverBuildErr = err
			return
		}
		serverBinary = filepath.Join(dir, "iggy-server")
		out, err := exec.Command("go", "build", "-o", serverBinary, "../iggy-server").CombinedOutput()
		if err != nil {
			serverBuildErr = fmt.Errorf("go build ../iggy-server: %w\n%s", err, out)
		}
	})
	if serverBuildErr != nil {
		t.Fatal(serverBuildErr)
	}
	return serverBinary
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer boots the server on 127.0.0.1:0 in a temp dir and returns the address it bound.
func startServer(t *testing.T) string {
	t.Helper()
	addr, _ := startServerDir(t)
	return addr
}

// publishedAddr waits for the address a listener published under dataDir/runtime.
func publishedAddr(t *testing.T, dataDir, file string) string {
	t.Helper()
	deadline := time.Now().Add(serverBootTimeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dataDir, "runtime", file)); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server did not publish %s", file)
	return ""
}

// startServerDir is startServer that also returns the data directory.
func startServerDir(t *testing.T) (string, string) {
	t.Helper()
	binary := buildServer(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	logs := &lockedBuffer{}
	cmd := exec.Command(binary, "--with-default-root-credentials")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"IGGY_SYSTEM_PATH=" + dataDir, "IGGY_TCP_ADDRESS=127.0.0.1:0", "IGGY_HTTP_ENABLED=false",
		"IGGY_QUIC_ADDRESS=127.0.0.1:0", "IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0"}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	addrFile := filepath.Join(dataDir, "runtime", "tcp.addr")
	deadline := time.Now().Add(serverBootTimeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b)), dataDir
		}
		select {
		case <-exited:
			t.Fatalf("server exited during boot:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("server did not publish %s within %s:\n%s", addrFile, serverBootTimeout, logs.String())
	return "", ""
}

// probeMessagePath sends one message before the workloads run, so a broken message path fails
// with its own error rather than as a bench failure.
func probeMessagePath(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateStream(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteStream(ctx, wire.NumericID(s.ID))
	topic, err := c.CreateTopic(ctx, wire.NumericID(s.ID), "probe", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendMessages(ctx, wire.NumericID(s.ID), wire.NumericID(topic.ID),
		wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: topic.Partitions[0].ID},
		[]wire.BatchMessageInput{{ID: [16]byte{1}, Payload: []byte("probe")}})
	if err != nil {
		t.Fatalf("probe SendMessages: %v", err)
	}
}

// runBench runs the command in-process and decodes its JSON summary.
func runBench(t *testing.T, args ...string) (bench.Summary, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eRunTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, append([]string{"--json", "--duration-max", "45s"}, args...), &stdout, &stderr)
	var s bench.Summary
	if code != exitOK {
		t.Fatalf("iggy-bench %v: exit %d\nstderr: %s\nstdout: %s", args, code, stderr.String(), stdout.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("iggy-bench %v: summary is not JSON: %v\n%s", args, err, stdout.String())
	}
	return s, stderr.String()
}

func streamNames(t *testing.T, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	streams, err := c.GetStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range streams {
		names = append(names, s.Name)
	}
	return names
}

func TestEndToEndWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	addr := startServer(t)
	probeMessagePath(t, addr)
	tiny := []string{"--address", addr, "--producers", "3", "--consumers", "3", "--message-size", "100",
		"--messages-per-batch", "10", "--message-batches", "20", "--warmup", "0s"}

	t.Run("pinned-producer-and-consumer", func(t *testing.T) {
		s, progress := runBench(t, append(tiny, "pinned-producer-and-consumer")...)
		if s.Producers == nil || s.Consumers == nil || s.Producers.Messages != 600 || s.Consumers.Messages != 600 {
			t.Fatalf("summary %+v: want 600 messages produced and consumed", s)
		}
		if s.Producers.Bytes != 60_000 || s.Producers.Latency.Samples != 60 || s.Producers.MBPerSecond <= 0 {
			t.Errorf("producers %+v: want 60000 bytes in 60 batches at a positive rate", s.Producers)
		}
		if !s.Complete || len(s.Errors) != 0 || len(s.Actors) != 6 {
			t.Errorf("complete %v, errors %v, %d actors; want a clean run of 6 actors", s.Complete, s.Errors, len(s.Actors))
		}
		if strings.Contains(progress, "\r") {
			t.Errorf("progress to a non-terminal used \\r: %q", progress)
		}
		for _, name := range streamNames(t, addr) {
			if strings.HasPrefix(name, "bench-") {
				t.Errorf("stream %q left behind without --keep", name)
			}
		}
	})

	t.Run("balanced-producer-and-consumer", func(t *testing.T) {
		s, _ := runBench(t, append(tiny, "--partitions", "4", "--durability", "persisted", "--verify",
			"balanced-producer-and-consumer")...)
		if s.Producers.Messages != 600 || s.Consumers.Messages != 600 || s.Params.Partitions != 4 {
			t.Fatalf("produced %d consumed %d over %d partitions; want 600, 600, 4", s.Producers.Messages,
				s.Consumers.Messages, s.Params.Partitions)
		}
	})

	t.Run("keep-then-consume", func(t *testing.T) {
		s, _ := runBench(t, append(tiny, "--keep", "balanced-producer")...)
		if s.Producers.Messages != 600 || s.Consumers != nil {
			t.Fatalf("balanced-producer: produced %d, consumers %+v", s.Producers.Messages, s.Consumers)
		}
		s, _ = runBench(t, append(tiny, "--verify", "balanced-consumer")...)
		if s.Consumers.Messages != 600 || s.Producers != nil {
			t.Fatalf("balanced-consumer read %d of the 600 kept messages", s.Consumers.Messages)
		}
		// A producer workload refuses the leftover stream unless --recreate.
		var stdout, stderr bytes.Buffer
		if code := execute(context.Background(), append(tiny, "--no-progress", "balanced-producer"), &stdout, &stderr); code != exitFailure ||
			!strings.Contains(stderr.String(), "--recreate") {
			t.Errorf("leftover stream: exit %d, stderr %q; want a failure naming --recreate", code, stderr.String())
		}
		s, _ = runBench(t, append(tiny, "--recreate", "balanced-producer")...)
		if s.Producers.Messages != 600 {
			t.Errorf("--recreate run produced %d, want 600", s.Producers.Messages)
		}
	})
}

// TestEveryTransportInOneRun: --transport with a list runs the workload
// over each transport in turn and compares their throughput with the first.
func TestEveryTransportInOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	addr, dataDir := startServerDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eRunTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"--no-progress", "--duration-max", "45s", "--warmup", "0s",
		"--transport", "tcp,quic,websocket", "--address", addr,
		"--quic-address", publishedAddr(t, dataDir, "quic.addr"),
		"--websocket-address", publishedAddr(t, dataDir, "websocket.addr"),
		"--producers", "2", "--consumers", "2", "--message-size", "1000", "--messages-per-batch", "10",
		"--message-batches", "20", "pinned-producer-and-consumer"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{"over tcp", "over quic", "over websocket", "transport comparison", "  tcp ", "  quic ", "  websocket "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
