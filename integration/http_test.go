package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestHTTPAPIOfTheBinary: the built server serves the REST API next to
// TCP on one state: a stream created over HTTP is the binary client's,
// and cluster metadata reports the HTTP port it bound.
func TestHTTPAPIOfTheBinary(t *testing.T) {
	s := startServer(t, "", "IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=127.0.0.1:0")
	c := rootClient(t, s.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := c.GetClusterMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Nodes) != 1 || md.Nodes[0].HTTP == 0 {
		t.Fatalf("cluster metadata: %+v", md)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", md.Nodes[0].HTTP)
	hc := &http.Client{Timeout: 10 * time.Second}
	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := call("GET", "/ping", "", ""); st != 200 || body != "pong" {
		t.Fatalf("ping: %d %q", st, body)
	}
	st, body := call("POST", "/users/login", "", `{"username":"iggy","password":"iggy"}`)
	if st != 200 {
		t.Fatalf("login: %d %s", st, body)
	}
	var id struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &id); err != nil {
		t.Fatal(err)
	}
	if st, body := call("POST", "/streams", id.AccessToken.Token, `{"name":"from-http"}`); st != 200 {
		t.Fatalf("create stream: %d %s", st, body)
	}
	if _, err := c.GetStream(ctx, wire.NamedID("from-http")); err != nil {
		t.Fatalf("stream created over HTTP is not visible over TCP: %v", err)
	}
	if st, body := call("GET", "/metrics", id.AccessToken.Token, ""); st != 200 || !strings.Contains(body, `iggy_consensus_primary{group="metadata"} 1`) {
		t.Fatalf("metrics: %d", st)
	}
}
