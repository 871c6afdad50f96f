package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The iggy CLI binary, built on first use next to the server binary (TestMain removes that dir).
var (
	cliOnce   sync.Once
	cliBinary string
	cliErr    error
)

const cliTimeout = 20 * time.Second

func buildCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliBinary = filepath.Join(filepath.Dir(serverBinary), "iggy")
		out, err := exec.Command("go", "build", "-o", cliBinary, "../cmd/iggy").CombinedOutput()
		if err != nil {
			cliErr = err
			cliBinary = string(out)
		}
	})
	if cliErr != nil {
		t.Fatalf("build iggy CLI: %v\n%s", cliErr, cliBinary)
	}
	return cliBinary
}

// cliResult is one finished CLI invocation.
type cliResult struct {
	code           int
	stdout, stderr string
}

// iggyCLI runs the CLI against addr as root (global flags first, as upstream) with stdin.
func iggyCLI(t *testing.T, addr, stdin string, args ...string) cliResult {
	t.Helper()
	full := append([]string{"--tcp-server-address", addr, "-u", "iggy", "-p", "iggy"}, args...)
	return iggyCLIRaw(t, stdin, full...)
}

// iggyCLIRaw runs the CLI with exactly args, bounded by cliTimeout.
func iggyCLIRaw(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	return iggyCLIEnv(t, nil, stdin, args...)
}

// iggyCLIEnv is iggyCLIRaw with extra environment variables (KEY=VALUE); without IGGY_HOME or
// HOME the CLI stores nothing.
func iggyCLIEnv(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildCLI(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("iggy %q did not finish within %s", args, cliTimeout)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("iggy %q: %v", args, err)
	}
	return cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok fails the test unless r exited 0, and returns stdout.
func (r cliResult) ok(t *testing.T) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails checks r exited with code and that stderr mentions every want.
func (r cliResult) fails(t *testing.T, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}

func TestCLISystemCommands(t *testing.T) {
	s := startServer(t, "")
	// ping needs no login.
	out := iggyCLIRaw(t, "", "--tcp-server-address", s.addr, "ping", "-c", "2").ok(t)
	if !strings.Contains(out, "Ping sequence id: 2") || !strings.Contains(out, "min/avg/max/mdev") {
		t.Errorf("ping output:\n%s", out)
	}
	out = iggyCLI(t, s.addr, "", "me").ok(t)
	if !strings.Contains(out, "| Transport | TCP") {
		t.Errorf("me output:\n%s", out)
	}
	var me struct {
		UserID    uint32 `json:"user_id"`
		Transport string `json:"transport"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "me").ok(t), &me)
	if me.Transport != "TCP" {
		t.Errorf("me json = %+v", me)
	}
	var stats struct {
		StreamsCount uint32 `json:"streams_count"`
		Hostname     string `json:"hostname"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "stats", "-o", "json").ok(t), &stats)
	if stats.Hostname == "" {
		t.Errorf("stats json = %+v", stats)
	}
	out = iggyCLI(t, s.addr, "", "cluster", "metadata").ok(t)
	if !strings.Contains(out, "Cluster name:") || !strings.Contains(out, "| Name ") || !strings.Contains(out, "leader") {
		t.Errorf("cluster metadata table:\n%s", out)
	}
	var meta struct {
		Name  string `json:"name"`
		Nodes []struct {
			TCP  uint32 `json:"tcp"`
			Role string `json:"role"`
		} `json:"nodes"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "cluster", "metadata").ok(t), &meta)
	if len(meta.Nodes) != 1 || meta.Nodes[0].Role != "leader" || !strings.HasSuffix(s.addr, ":"+itoa(meta.Nodes[0].TCP)) {
		t.Errorf("cluster metadata json = %+v (server %s)", meta, s.addr)
	}
}

func TestCLIErrors(t *testing.T) {
	s := startServer(t, "")
	iggyCLIRaw(t, "", "--tcp-server-address", s.addr, "-u", "iggy", "-p", "nope", "me").
		fails(t, 1, "InvalidCredentials (error 42)")
	iggyCLIRaw(t, "", "--tcp-server-address", s.addr, "me").fails(t, 2, "missing credentials", "IGGY_USERNAME")
	iggyCLIRaw(t, "", "--transport", "smoke", "--tcp-server-address", s.addr, "ping").fails(t, 2, "not a transport")
	// Environment credentials, as upstream.
	cmd := exec.Command(buildCLI(t), "--tcp-server-address", s.addr, "me")
	cmd.Env = []string{"IGGY_USERNAME=iggy", "IGGY_PASSWORD=iggy"}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Client ID") {
		t.Errorf("env credentials: %v\n%s", err, out)
	}
	// Nothing listens on a port we just closed.
	s.stop(syscall.SIGTERM)
	iggyCLIRaw(t, "", "--tcp-server-address", s.addr, "ping").fails(t, 1, "connection refused")
}

// TestCLIEveryTransport: the global --transport picks the listener and the
// server sees the connection on it.
func TestCLIEveryTransport(t *testing.T) {
	s := startServer(t, "")
	for _, tc := range []struct{ transport, flag, file, shown string }{
		{"tcp", "--tcp-server-address", "tcp", "TCP"},
		{"quic", "--quic-server-address", "quic", "QUIC"},
		{"ws", "--websocket-server-address", "websocket", "WebSocket"},
	} {
		out := iggyCLIRaw(t, "", "--transport", tc.transport, tc.flag, s.transportAddr(tc.file),
			"-u", "iggy", "-p", "iggy", "me").ok(t)
		if !strings.Contains(out, tc.shown) {
			t.Errorf("--transport %s: me shows\n%s", tc.transport, out)
		}
	}
}

func TestCLIStreamAndTopicCRUD(t *testing.T) {
	s := startServer(t, "")
	a := s.addr
	if out := iggyCLI(t, a, "", "stream", "create", "prod").ok(t); !strings.Contains(out, "Stream with name: prod") {
		t.Errorf("create: %s", out)
	}
	iggyCLI(t, a, "", "stream", "create", "-s", "7", "other").fails(t, 2, "assigns stream IDs")
	var streams []struct {
		ID   uint32 `json:"id"`
		Name string `json:"name"`
	}
	decodeJSON(t, iggyCLI(t, a, "", "--output", "json", "stream", "list").ok(t), &streams)
	if len(streams) != 1 || streams[0].Name != "prod" {
		t.Fatalf("streams = %+v", streams)
	}
	iggyCLI(t, a, "", "stream", "update", "prod", "production").ok(t)
	if out := iggyCLI(t, a, "", "stream", "list", "-l", "list").ok(t); !strings.Contains(out, "|production|") {
		t.Errorf("list mode: %q", out)
	}
	iggyCLI(t, a, "", "topic", "create", "production", "sensors", "3", "gzip", "1day", "2hour", "-m", "1GiB").ok(t)
	iggyCLI(t, a, "", "t", "c", "production", "logs", "1", "none").ok(t) // upstream's aliases
	var topic struct {
		Name          string `json:"name"`
		Compression   string `json:"compression_algorithm"`
		MessageExpiry uint64 `json:"message_expiry"`
		MaxTopicSize  uint64 `json:"max_topic_size"`
		Partitions    []struct {
			ID uint32 `json:"id"`
		} `json:"partitions"`
	}
	decodeJSON(t, iggyCLI(t, a, "", "--output", "json", "topic", "get", "production", "sensors").ok(t), &topic)
	if topic.Compression != "gzip" || topic.MessageExpiry != 26*3600*1_000_000 || topic.MaxTopicSize != 1<<30 || len(topic.Partitions) != 3 {
		t.Errorf("topic = %+v", topic)
	}
	iggyCLI(t, a, "", "topic", "update", "production", "sensors", "readings", "none", "unlimited").ok(t)
	out := iggyCLI(t, a, "", "topic", "list", "production").ok(t)
	if !strings.Contains(out, "readings") || !strings.Contains(out, "unlimited") || !strings.Contains(out, "logs") {
		t.Errorf("topic list:\n%s", out)
	}
	iggyCLI(t, a, "", "topic", "get", "production", "nope").fails(t, 1, "TopicIdNotFound (error 2010)")
	iggyCLI(t, a, "", "topic", "purge", "production", "readings").ok(t)
	iggyCLI(t, a, "", "topic", "delete", "production", "logs").ok(t)
	iggyCLI(t, a, "", "stream", "purge", "production").ok(t)
	// -q prints nothing on success.
	if out := iggyCLIRaw(t, "", "--tcp-server-address", a, "-u", "iggy", "-p", "iggy", "-q", "stream", "delete", "production").ok(t); out != "" {
		t.Errorf("quiet delete printed %q", out)
	}
	iggyCLI(t, a, "", "stream", "get", "production").fails(t, 1, "StreamIdNotFound (error 1009)", "iggy stream list")
}

func TestCLIMessageSendAndPoll(t *testing.T) {
	s := startServer(t, "")
	a := s.addr
	iggyCLI(t, a, "", "stream", "create", "s").ok(t)
	iggyCLI(t, a, "", "topic", "create", "s", "t", "2", "none").ok(t)
	iggyCLI(t, a, "", "message", "send", "-p", "1", "s", "t", "hello", "with spaces").ok(t)
	if out := iggyCLI(t, a, "one\n\ntwo\r\nthree", "message", "send", "--partition-id", "1", "s", "t").ok(t); !strings.Contains(out, "Sent 3 message(s)") {
		t.Errorf("stdin send: %s", out)
	}
	iggyCLI(t, a, "", "message", "send", "s", "t").fails(t, 2, "no messages to send")
	iggyCLI(t, a, "", "message", "send", "-m", "user-42", "s", "t", "keyed").ok(t)

	type msg struct {
		Offset  uint64 `json:"offset"`
		Payload string `json:"payload"`
	}
	pollJSON := func(args ...string) []msg {
		t.Helper()
		out := iggyCLI(t, a, "", append([]string{"--output", "json", "message", "poll"}, args...)...).ok(t)
		var msgs []msg
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var m msg
			decodeJSON(t, line, &m)
			msgs = append(msgs, m)
		}
		return msgs
	}
	payloads := func(ms []msg) string {
		var p []string
		for _, m := range ms {
			p = append(p, m.Payload)
		}
		return strings.Join(p, ",")
	}
	if got := payloads(pollJSON("--first", "-m", "10", "s", "t", "1")); got != "hello,with spaces,one,two,three" {
		t.Errorf("first: %s", got)
	}
	if got := payloads(pollJSON("--offset", "3", "-m", "10", "s", "t", "1")); got != "two,three" {
		t.Errorf("offset 3: %s", got)
	}
	if got := payloads(pollJSON("-l", "-m", "2", "s", "t", "1")); got != "two,three" {
		t.Errorf("last 2: %s", got)
	}
	// next with auto-commit walks the stored offset of consumer 7.
	if got := payloads(pollJSON("--next", "-a", "-c", "7", "-m", "2", "s", "t", "1")); got != "hello,with spaces" {
		t.Errorf("next 1: %s", got)
	}
	if got := payloads(pollJSON("--next", "-a", "-c", "7", "-m", "2", "s", "t", "1")); got != "one,two" {
		t.Errorf("next 2: %s", got)
	}
	out := iggyCLI(t, a, "", "message", "poll", "--first", "-m", "1", "s", "t", "1").ok(t)
	if !strings.Contains(out, "| Offset ") || !strings.Contains(out, "| hello ") {
		t.Errorf("table poll:\n%s", out)
	}
	iggyCLI(t, a, "", "message", "poll", "--first", "s", "t", "9").fails(t, 1, "error 3007")
}

func TestCLIMessagePollFollowStopsOnSIGINT(t *testing.T) {
	s := startServer(t, "")
	a := s.addr
	iggyCLI(t, a, "", "stream", "create", "s").ok(t)
	iggyCLI(t, a, "", "topic", "create", "s", "t", "1", "none").ok(t)
	iggyCLI(t, a, "", "message", "send", "-p", "0", "s", "t", "early").ok(t)

	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildCLI(t), "--tcp-server-address", a, "-u", "iggy", "-p", "iggy", "--output", "json",
		"message", "poll", "--first", "--follow", "--poll-interval", "20ms", "-m", "5", "s", "t", "0")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("follow output never showed %q:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(`"payload":"early"`)
	iggyCLI(t, a, "", "message", "send", "-p", "0", "s", "t", "late").ok(t)
	waitFor(`"payload":"late"`)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("follow exit after SIGINT: %v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), `"payload"`); n != 2 {
		t.Errorf("follow printed %d messages, want 2 (no duplicates):\n%s", n, out.String())
	}
}

func TestCLIPartitionsGroupsAndTokens(t *testing.T) {
	s := startServer(t, "")
	a := s.addr
	iggyCLI(t, a, "", "stream", "create", "s").ok(t)
	iggyCLI(t, a, "", "topic", "create", "s", "t", "1", "none").ok(t)
	iggyCLI(t, a, "", "partition", "create", "s", "t", "3").ok(t)
	iggyCLI(t, a, "", "partition", "delete", "s", "t", "1").ok(t)
	iggyCLI(t, a, "", "partition", "create", "s", "t", "0").fails(t, 2, "PARTITIONS_COUNT")
	var topic struct {
		PartitionsCount int `json:"partitions_count"`
	}
	decodeJSON(t, iggyCLI(t, a, "", "--output", "json", "topic", "get", "s", "t").ok(t), &topic)
	if topic.PartitionsCount != 3 {
		t.Errorf("partitions = %d, want 3", topic.PartitionsCount)
	}

	iggyCLI(t, a, "", "consumer-group", "create", "s", "t", "workers").ok(t)
	iggyCLI(t, a, "", "consumer-group", "create", "-g", "4", "s", "t", "other").fails(t, 2, "assigns consumer group IDs")
	var groups []struct {
		Name            string `json:"name"`
		PartitionsCount int    `json:"partitions_count"`
	}
	decodeJSON(t, iggyCLI(t, a, "", "--output", "json", "g", "l", "s", "t").ok(t), &groups)
	if len(groups) != 1 || groups[0].Name != "workers" || groups[0].PartitionsCount != 3 {
		t.Errorf("groups = %+v", groups)
	}
	if out := iggyCLI(t, a, "", "consumer-group", "get", "s", "t", "workers").ok(t); !strings.Contains(out, "| Consumer group name | workers") {
		t.Errorf("group get:\n%s", out)
	}
	iggyCLI(t, a, "", "consumer-group", "delete", "s", "t", "workers").ok(t)
	iggyCLI(t, a, "", "consumer-group", "get", "s", "t", "workers").fails(t, 1, "error 50")

	// A token printed in quiet mode logs in with -t.
	token := strings.TrimSpace(iggyCLIRaw(t, "", "--tcp-server-address", a, "-u", "iggy", "-p", "iggy", "-q", "pat", "create", "ci-token", "1day").ok(t))
	if token == "" {
		t.Fatal("no token printed")
	}
	if out := iggyCLIRaw(t, "", "--tcp-server-address", a, "-t", token, "stream", "list", "-l", "list").ok(t); !strings.Contains(out, "|s|") {
		t.Errorf("stream list with token: %q", out)
	}
	if out := iggyCLI(t, a, "", "pat", "list", "-l", "list").ok(t); !strings.HasPrefix(out, "ci-token|") || strings.Contains(out, "unlimited") {
		t.Errorf("pat list: %q", out)
	}
	iggyCLI(t, a, "", "pat", "delete", "ci-token").ok(t)
	iggyCLIRaw(t, "", "--tcp-server-address", a, "-t", token, "me").fails(t, 1, "login with personal access token failed")
}

func TestCLIUsers(t *testing.T) {
	s := startServer(t, "")
	a := s.addr
	iggyCLI(t, a, "", "user", "create", "bob", "secret-one", "-g", "r_str").ok(t)
	var users []struct {
		Username string `json:"username"`
		Status   string `json:"status"`
	}
	decodeJSON(t, iggyCLI(t, a, "", "--output", "json", "user", "list").ok(t), &users)
	if len(users) != 2 || users[1].Username != "bob" || users[1].Status != "active" {
		t.Fatalf("users = %+v", users)
	}
	as := func(user, pass string, args ...string) cliResult {
		return iggyCLIRaw(t, "", append([]string{"--tcp-server-address", a, "-u", user, "-p", pass}, args...)...)
	}
	as("bob", "secret-one", "stream", "list").ok(t)
	as("bob", "secret-one", "stream", "create", "nope").fails(t, 1, "Unauthorized (error 41)", "lacks the permission")
	iggyCLI(t, a, "", "user", "password", "bob", "secret-one", "secret-two").ok(t)
	as("bob", "secret-two", "me").ok(t)
	iggyCLI(t, a, "", "user", "name", "bob", "robert").ok(t)
	iggyCLI(t, a, "", "user", "status", "robert", "inactive").ok(t)
	if out := iggyCLI(t, a, "", "user", "get", "robert").ok(t); !strings.Contains(out, "| Status             | inactive") || !strings.Contains(out, "read_streams") {
		t.Errorf("user get:\n%s", out)
	}
	as("robert", "secret-two", "me").fails(t, 1, "login as \"robert\" failed")
	iggyCLI(t, a, "", "user", "delete", "robert").ok(t)
	iggyCLI(t, a, "", "user", "get", "robert").fails(t, 1, "error")
}
