package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/node"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/*.json")

// testServer is one node with its HTTP API on loopback ports, in-process.
type testServer struct {
	t       *testing.T
	base    string // http://127.0.0.1:port
	tcpAddr string
	dir     string
	client  *http.Client
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer boots a node on a temp dir with ephemeral ports; mutate
// adjusts the configuration. The node stops at test cleanup.
func startServer(t *testing.T, mutate func(*config.Config)) *testServer {
	t.Helper()
	cfg, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg.System.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Enabled = true
	cfg.HTTP.Address = "127.0.0.1:0"
	// Only the transports under test: QUIC and WebSocket default to fixed ports.
	cfg.QUIC.Enabled, cfg.WebSocket.Enabled = false, false
	if mutate != nil {
		mutate(cfg)
	}
	metrics := NewMetrics()
	addrs := make(chan string, 1)
	start := Starter(metrics, quietLogger())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, node.Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy", Logger: quietLogger(),
			Requests: metrics,
			HTTP: func(n *node.Node) (node.Listener, error) {
				ln, err := start(n)
				if err == nil {
					addrs <- ln.Addr().String()
				}
				return ln, err
			}})
	}()
	ts := &testServer{t: t, dir: dir, client: &http.Client{Timeout: 30 * time.Second}}
	scheme := "http"
	if cfg.HTTP.TLS.Enabled {
		scheme = "https"
	}
	select {
	case a := <-addrs:
		ts.base = scheme + "://" + a
	case err := <-done:
		cancel()
		t.Fatalf("node stopped during boot: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("http listener not bound in time")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("node: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("node did not stop")
		}
	})
	// The TCP address is published once the listener serves.
	deadline := time.Now().Add(10 * time.Second)
	for ts.tcpAddr == "" && time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "runtime", "tcp.addr")); err == nil && strings.HasSuffix(string(b), "\n") {
			ts.tcpAddr = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ts
}

// response is one exchange's outcome.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server asked to close the connection
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// do sends a request; body is marshalled unless it is a string or []byte
// (sent as is). token "" sends no Authorization.
func (ts *testServer) do(method, path, token string, body any) response {
	ts.t.Helper()
	return ts.doWith(method, path, token, body, nil)
}

func (ts *testServer) doWith(method, path, token string, body any, headers map[string]string) response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, ts.base+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw, close: resp.Close}
}

// login returns an access token for username/password.
func (ts *testServer) login(username, password string) string {
	ts.t.Helper()
	r := ts.do("POST", "/users/login", "", map[string]string{"username": username, "password": password})
	if r.status != 200 {
		ts.t.Fatalf("login %s: %d %s", username, r.status, r.body)
	}
	var id identityInfo
	r.json(ts.t, &id)
	return id.AccessToken.Token
}

// expect checks a response's status (and, when code is set, its error
// code) and returns it.
func expect(t *testing.T, r response, status int, code string) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if code != "" {
		var e errorBody
		if err := json.Unmarshal(r.body, &e); err != nil || e.Code != code {
			t.Fatalf("error body %s, want code %s", r.body, code)
		}
	}
	return r
}

// volatile keys hold values that change run to run; golden files hold a
// placeholder.
var volatile = map[string]bool{
	"created_at": true, "start_time": true, "run_time": true, "token": true, "expiry": true, "timestamp": true,
	"origin_timestamp": true, "checksum": true, "process_id": true, "cpu_usage": true, "total_cpu_usage": true,
	"memory_usage": true, "total_memory": true, "available_memory": true, "read_bytes": true, "written_bytes": true,
	"hostname": true, "os_name": true, "os_version": true, "kernel_version": true, "threads_count": true,
	"free_disk_space": true, "total_disk_space": true, "expiry_at": true, "address": true, "client_id": true, "http": true,
	"tcp": true, "iggy_server_version": true, "iggy_server_semver": true,
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if volatile[k] && val != nil {
				out[k] = "<" + k + ">"
				continue
			}
			out[k] = normalize(val)
		}
		return out
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	}
	return v
}

// golden compares a JSON body, volatile values masked, with
// testdata/golden/<name>.json (-update rewrites it).
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", name, body, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(normalize(v)); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "golden", name+".json")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run with -update to create)", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: body differs from golden\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
