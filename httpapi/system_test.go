package httpapi

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/config"
)

func TestSystemRoutes(t *testing.T) {
	ts := startServer(t, nil)
	r := expect(t, ts.do("GET", "/ping", "", nil), 200, "")
	if string(r.body) != "pong" || r.header.Get("iggy-view") != "" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("ping: %v %q", r.header, r.body)
	}
	tok := ts.login("iggy", "iggy")

	// A binary connection is a client; HTTP callers are not.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bc, err := client.Dial(ctx, ts.tcpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if _, err := bc.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}

	r = expect(t, ts.do("GET", "/stats", tok, nil), 200, "")
	if r.header.Get("iggy-view") != "0" {
		t.Errorf("iggy-view %q", r.header.Get("iggy-view"))
	}
	golden(t, "stats", r.body)
	golden(t, "cluster_metadata", expect(t, ts.do("GET", "/cluster/metadata", tok, nil), 200, "").body)
	r = expect(t, ts.do("GET", "/clients", tok, nil), 200, "")
	golden(t, "clients", r.body)
	var clients []clientJSON
	r.json(t, &clients)
	if len(clients) != 1 {
		t.Fatalf("clients: %s", r.body)
	}
	golden(t, "client_details", expect(t, ts.do("GET", fmt.Sprintf("/clients/%d", clients[0].ClientID), tok, nil), 200, "").body)
	expect(t, ts.do("GET", "/clients/999", tok, nil), 404, "not_found")
	expect(t, ts.do("GET", "/clients/abc", tok, nil), 400, "")
	golden(t, "options_topic", expect(t, ts.do("GET", "/options/topic", tok, nil), 200, "").body)
	golden(t, "options_stream", expect(t, ts.do("GET", "/options/stream", tok, nil), 200, "").body)
	expect(t, ts.do("GET", "/options/galaxy", tok, nil), 400, "invalid_command")

	r = expect(t, ts.do("POST", "/snapshot", tok, map[string]any{"compression": "Deflated", "snapshot_types": []string{"ServerConfig"}}), 200, "")
	if r.header.Get("Content-Type") != "application/zip" || !strings.Contains(r.header.Get("Content-Disposition"), "iggy_snapshot_") {
		t.Fatalf("snapshot headers %v", r.header)
	}
	if _, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body))); err != nil {
		t.Fatalf("snapshot is not a zip: %v", err)
	}
	expect(t, ts.do("POST", "/snapshot", tok, map[string]any{"compression": "Rar"}), 422, "")

	// Metrics need a bearer; they carry both transports and the group.
	expect(t, ts.do("GET", "/metrics", "", nil), 401, "access_token_missing")
	r = expect(t, ts.do("GET", "/metrics", tok, nil), 200, "")
	for _, want := range []string{"http_requests_total", `iggy_requests_total{command="get_stats",outcome="2xx",transport="http"}`,
		`iggy_request_duration_seconds_bucket{command="login_user",transport="http"`, `iggy_requests_total{command="register",outcome="handled",transport="tcp"}`,
		`iggy_consensus_primary{group="metadata"} 1`, `iggy_consensus_view{group="metadata"}`, `iggy_consensus_commit_op{group="metadata"}`,
		`iggy_sessions{kind="binary"} 1`, `iggy_connections{transport="tcp"} 1`, "iggy_http_connections", `iggy_received_bytes_total{transport="tcp"}`,
		`iggy_sent_bytes_total{transport="http"}`, "streams 0", "users 1"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestFrameworkAnswers(t *testing.T) {
	ts := startServer(t, func(c *config.Config) { c.HTTP.MaxRequestSize = 1000 })
	tok := ts.login("iggy", "iggy")

	r := expect(t, ts.do("GET", "/nowhere", tok, nil), 404, "")
	if len(r.body) != 0 {
		t.Errorf("unknown path body %q", r.body)
	}
	expect(t, ts.do("GET", "/streams/", tok, nil), 404, "")
	r = expect(t, ts.do("PATCH", "/streams", tok, nil), 405, "")
	if r.header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
	expect(t, ts.do("HEAD", "/streams", tok, nil), 200, "")

	// 413 before the body is read, with Connection: close.
	r = expect(t, ts.do("POST", "/streams", tok, `{"name":"`+strings.Repeat("x", 2000)+`"}`), 413, "")
	if !r.close {
		t.Error("413 without Connection: close")
	}
	expect(t, ts.doWith("POST", "/streams", tok, `{"name":"a"}`, map[string]string{"Content-Type": "text/plain"}), 415, "")
	expect(t, ts.doWith("POST", "/streams", tok, `{"name":"a"}`, map[string]string{"Content-Type": ""}), 415, "")
	expect(t, ts.doWith("POST", "/streams", tok, `{"name":"a"}`, map[string]string{"Content-Type": "application/json; charset=utf-8"}), 200, "")

	// CORS: preflights are answered before auth; responses carry the headers.
	r = expect(t, ts.doWith("OPTIONS", "/streams", "", nil, map[string]string{"Origin": "http://ui.example",
		"Access-Control-Request-Method": "POST"}), 200, "")
	if r.header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "authorization") {
		t.Errorf("preflight headers %v", r.header)
	}
	r = expect(t, ts.doWith("GET", "/streams", tok, nil, map[string]string{"Origin": "http://ui.example"}), 200, "")
	if r.header.Get("Access-Control-Expose-Headers") != "iggy-view" {
		t.Errorf("cors headers %v", r.header)
	}
}
