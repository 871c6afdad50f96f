package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// runCLI runs one invocation in-process with the given stdin.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExpandGlobalShorthands(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"-u", "iggy", "-p", "secret", "stream", "list"}, []string{"--username=iggy", "--password=secret", "stream", "list"}},
		{[]string{"-uiggy", "-p=x", "me"}, []string{"--username=iggy", "--password=x", "me"}},
		{[]string{"-q", "-t", "tok", "me"}, []string{"--quiet", "--token=tok", "me"}},
		// After the subcommand, -p belongs to it (message send -p is a partition).
		{[]string{"-u", "a", "-p", "b", "message", "send", "-p", "1", "s", "t", "m"},
			[]string{"--username=a", "--password=b", "message", "send", "-p", "1", "s", "t", "m"}},
		// Long options with separate values are skipped over, not mistaken for the subcommand.
		{[]string{"--tcp-server-address", "10.0.0.1:1", "-u", "x", "ping"}, []string{"--tcp-server-address", "10.0.0.1:1", "--username=x", "ping"}},
		{[]string{"--quiet", "-p", "y", "ping"}, []string{"--quiet", "--password=y", "ping"}},
		// Upstream's -n/--token-name and -d/--debug; --encryption-key takes a value.
		{[]string{"-n", "deploy", "-d", "/tmp/log", "--encryption-key", "k", "me"}, []string{"--token-name=deploy", "--debug=/tmp/log", "--encryption-key", "k", "me"}},
	}
	for _, c := range cases {
		if got := expandGlobalShorthands(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTransportTargets(t *testing.T) {
	code, _, stderr := runCLI(t, "", "--transport", "carrier-pigeon", "ping")
	if code != 2 || !strings.Contains(stderr, "not a transport") || !strings.Contains(stderr, "tcp, quic, ws and http") {
		t.Errorf("--transport carrier-pigeon: code %d, stderr %q", code, stderr)
	}
	for tr, addr := range map[string]string{"tcp": "127.0.0.1:8090", "quic": "127.0.0.1:8080", "ws": "127.0.0.1:8092",
		"http": "http://localhost:3000"} {
		a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		a.globals = globals{transport: tr, tcpServerAddress: defaultTCPServerAddress,
			quicServerAddress: defaultQUICServerAddress, websocketServerAddress: defaultWebSocketServerAddress,
			httpAPIURL: defaultHTTPAPIURL, httpRetries: 3}
		if got, _, err := a.globals.dialTarget(); err != nil || got != addr {
			t.Errorf("--transport %s: address %q, %v; want %s", tr, got, err, addr)
		}
	}
}

func TestMissingCredentials(t *testing.T) {
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	a.getenv = func(string) string { return "" }
	if _, err := a.resolveCredentials(); err == nil || !strings.Contains(err.Error(), "IGGY_USERNAME") {
		t.Fatalf("err = %v", err)
	}
	a.getenv = func(k string) string { return map[string]string{envUsername: "eu", envPassword: "ep"}[k] }
	if c, err := a.resolveCredentials(); err != nil || c.username != "eu" || c.password != "ep" {
		t.Fatalf("env credentials = %+v, %v", c, err)
	}
	// Flags win over the environment; a missing password is read from stdin.
	a.globals.username = "fu"
	a.stdin = strings.NewReader("from-stdin\n")
	if c, err := a.resolveCredentials(); err != nil || c.username != "fu" || c.password != "from-stdin" {
		t.Fatalf("stdin password = %+v, %v", c, err)
	}
	a.globals.token = "tok"
	if _, err := a.resolveCredentials(); err == nil {
		t.Fatal("token and username together accepted")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"ping", "extra"}, {"cluster", "metadata", "--bogus"}, {"--generate", "tcsh"}, {"--output", "yaml", "cluster", "metadata"}} {
		code, _, stderr := runCLI(t, "", args...)
		if code != 2 || !strings.HasPrefix(stderr, "Error: ") {
			t.Errorf("%q: code %d, stderr %q", args, code, stderr)
		}
	}
}

func TestGenerateCompletion(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "bash completion", "zsh": "#compdef", "fish": "complete -c iggy", "powershell": "Register-ArgumentCompleter"} {
		code, stdout, stderr := runCLI(t, "", "--generate", shell)
		if code != 0 || !strings.Contains(stdout, marker) {
			t.Errorf("--generate %s: code %d, stderr %q, stdout lacks %q", shell, code, stderr, marker)
		}
	}
}

func TestWriteTableAndList(t *testing.T) {
	v := view{json: map[string]int{"a": 1}, headers: []string{"ID", "Name"}, rows: [][]string{{"1", "prod"}, {"22", "é"}}}
	var b bytes.Buffer
	if err := writeView(&b, formatTable, v); err != nil {
		t.Fatal(err)
	}
	want := "+----+------+\n| ID | Name |\n+----+------+\n| 1  | prod |\n| 22 | é    |\n+----+------+\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	_ = writeView(&b, formatList, v)
	if b.String() != "1|prod\n22|é\n" {
		t.Errorf("list: %q", b.String())
	}
	b.Reset()
	_ = writeView(&b, formatJSON, v)
	if strings.TrimSpace(b.String()) != "{\n  \"a\": 1\n}" {
		t.Errorf("json: %q", b.String())
	}
}

func TestClusterView(t *testing.T) {
	m := &wire.ClusterMetadata{Name: "c", Nodes: []wire.ClusterNode{
		{Name: "n1", IP: "10.0.0.1", TCP: 8090, Role: wire.RoleLeader, Status: wire.NodeHealthy},
		{Name: "n2", IP: "10.0.0.2", TCP: 8090, QUIC: 8080, Role: wire.RoleFollower, Status: wire.NodeUnreachable},
	}}
	v := clusterView(m)
	if got := v.rows[1]; !reflect.DeepEqual(got, []string{"n2", "10.0.0.2", "8090", "8080", "-", "-", "follower", "unreachable"}) {
		t.Errorf("row = %q", got)
	}
	j := v.json.(clusterJSON)
	if j.Name != "c" || j.Nodes[0].Role != "leader" {
		t.Errorf("json = %+v", j)
	}
}

func TestDescribeErrorNamesCodes(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &client.Error{Code: wire.ErrStreamIDNotFound, Command: wire.CodeGetStream})
	got := describeError(err, "x")
	if !strings.Contains(got, "StreamIdNotFound (error 1009)") || !strings.Contains(got, "iggy stream list") {
		t.Errorf("describeError = %q", got)
	}
	got = describeError(&loginError{username: "bob", err: &client.Error{Code: wire.ErrInvalidCredentials}}, "x")
	if got != `login as "bob" failed: InvalidCredentials (error 42); check the user name and password` {
		t.Errorf("login error = %q", got)
	}
	if got := describeError(errors.New("plain"), "x"); got != "plain" {
		t.Errorf("plain = %q", got)
	}
}

func TestPingSummary(t *testing.T) {
	if got := pingSummary([]float64{1, 3}); got != "min/avg/max/mdev = 1.000/2.000/3.000/1.000 ms" {
		t.Errorf("summary = %q", got)
	}
}

func TestParseIdentifier(t *testing.T) {
	if id, err := parseIdentifier("stream ID", "42"); err != nil || id != wire.NumericID(42) {
		t.Errorf("42 -> %v, %v", id, err)
	}
	if id, err := parseIdentifier("stream ID", "prod"); err != nil || id != wire.NamedID("prod") {
		t.Errorf("prod -> %v, %v", id, err)
	}
	// Beyond u32 is a name, as upstream's identifier parser does.
	if id, err := parseIdentifier("stream ID", "4294967296"); err != nil || id.Kind != wire.IdentString {
		t.Errorf("2^32 -> %v, %v", id, err)
	}
	if _, err := parseIdentifier("stream ID", strings.Repeat("x", 256)); err == nil {
		t.Error("256-byte name accepted")
	}
}

func TestTopicOptions(t *testing.T) {
	opts, err := topicOptions("GZIP", []string{"1day", "1hour"}, "10GB")
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Option{
		wire.OptionString(wire.OptCompressionAlgorithm, "gzip"),
		wire.OptionString(wire.OptMessageExpiry, "1day 1hour"),
		wire.OptionString(wire.OptMaxTopicSize, "10GB"),
	}
	if !reflect.DeepEqual(opts, want) {
		t.Errorf("opts = %+v", opts)
	}
	opts, _ = topicOptions("none", []string{"server_default"}, "server_default")
	if len(opts) != 1 {
		t.Errorf("server_default sent: %+v", opts)
	}
	if _, err := topicOptions("lz4", nil, ""); err == nil {
		t.Error("lz4 accepted")
	}
	if _, err := parseSetOptions([]string{"segment_size"}); err == nil {
		t.Error("--set without = accepted")
	}
}

func TestPositionalArgumentErrors(t *testing.T) {
	code, _, stderr := runCLI(t, "", "topic", "create", "prod", "t")
	if code != 2 || !strings.Contains(stderr, "missing PARTITIONS_COUNT, COMPRESSION_ALGORITHM") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "stream", "update", "1", "a", "b")
	if code != 2 || !strings.Contains(stderr, "too many arguments") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "topic", "create", "prod", "t", "x", "none")
	if code != 2 || !strings.Contains(stderr, "not a whole number") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}
