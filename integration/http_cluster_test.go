package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestHTTPForwardingInACluster: with a cluster PSK every node verifies the
// bearers any node minted; a follower forwards control-plane writes to
// the metadata primary (spec §12.3) and serves reads locally; a forwarded
// request arriving at a non-primary is refused (one hop); linearizable
// local reads redirect to the primary.
func TestHTTPForwardingInACluster(t *testing.T) {
	ip := nextClusterIP()
	httpPorts := pickPorts(t, ip, 3)
	env := []string{"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=" + ip + ":0",
		"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=an-http-forwarding-psk-of-32-bytes!!"}
	for i, p := range httpPorts {
		env = append(env, fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_HTTP=%d", i, p))
	}
	c := startClusterOn(t, ip, 3, env...)
	leader := c.waitLeader(0, -1, failoverBound)
	follower := (leader + 1) % 3
	base := func(i int) string { return fmt.Sprintf("http://%s:%d", ip, httpPorts[i]) }
	hc := &http.Client{Timeout: 40 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(i int, method, path, token, body string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base(i)+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for j := 0; j+1 < len(headers); j += 2 {
			req.Header.Set(headers[j], headers[j+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s on node %d: %v", method, path, i, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// Log in on the follower: the PSK-derived key makes the token valid on
	// the primary too.
	resp, body := call(follower, "POST", "/users/login", "", `{"username":"iggy","password":"iggy"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("login on a follower: %d %s", resp.StatusCode, body)
	}
	var id struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &id); err != nil {
		t.Fatal(err)
	}
	tok := id.AccessToken.Token
	if resp, body := call(leader, "GET", "/streams", tok, ""); resp.StatusCode != 200 {
		t.Fatalf("follower-minted token on the primary: %d %s", resp.StatusCode, body)
	}

	// A write on the follower is forwarded and committed on the primary.
	resp, body = call(follower, "POST", "/streams", tok, `{"name":"via-follower"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"name":"via-follower"`) {
		t.Fatalf("forwarded create: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("iggy-view") == "" {
		t.Error("forwarded reply without iggy-view")
	}
	// Replicated: every node serves it locally soon.
	for i := range 3 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if resp, _ := call(i, "GET", "/streams/via-follower", tok, ""); resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d does not serve the forwarded stream", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Errors of the primary are relayed as they are.
	if resp, body := call(follower, "POST", "/streams", tok, `{"name":"via-follower"}`); resp.StatusCode != 400 ||
		!strings.Contains(body, "stream_name_already_exists") {
		t.Fatalf("relayed error: %d %s", resp.StatusCode, body)
	}
	// Linearizable reads of forwardable routes are forwarded too.
	if resp, body := call(follower, "GET", "/streams?consistency=linearizable", tok, ""); resp.StatusCode != 200 ||
		!strings.Contains(body, "via-follower") {
		t.Fatalf("linearizable read: %d %s", resp.StatusCode, body)
	}
	// One hop at most: a forwarded request reaching a follower is refused.
	resp, body = call(follower, "POST", "/streams", tok, `{"name":"hop"}`, "iggy-forwarded", "1")
	if resp.StatusCode != 503 || !strings.Contains(body, fmt.Sprintf(`"id":%d`, wire.ErrTransientNotAccepted)) || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("hop guard: %d %s", resp.StatusCode, body)
	}
	// Linearizable local reads redirect to the primary's HTTP address.
	resp, _ = call(follower, "GET", "/stats?consistency=linearizable", tok, "")
	if want := fmt.Sprintf("http://%s:%d/stats?consistency=linearizable", ip, httpPorts[leader]); resp.StatusCode != 307 || resp.Header.Get("Location") != want {
		t.Fatalf("linearizable stats on a follower: %d %q, want 307 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	// Partition writes run where they arrive: the partition's primary (the
	// node that created it: the metadata primary) takes them.
	if resp, body := call(follower, "POST", "/streams/via-follower/topics", tok,
		`{"name":"t","partitions_count":1,"compression_algorithm":"none","message_expiry":0,"max_topic_size":0}`); resp.StatusCode != 200 {
		t.Fatalf("forwarded create topic: %d %s", resp.StatusCode, body)
	}
	send := `{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"payload":"aGk="}]}`
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := call(leader, "POST", "/streams/via-follower/topics/t/messages", tok, send)
		if resp.StatusCode == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce on the partition's primary: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// On a backup the send is refused locally (58) and tried on the other
	// nodes: it lands on the primary (TestHTTPPartitionWriteRetry).
	if resp, body := call(follower, "POST", "/streams/via-follower/topics/t/messages", tok, send); resp.StatusCode != 201 {
		t.Fatalf("produce on a backup: %d %s", resp.StatusCode, body)
	}
	// Cluster metadata lists every node's HTTP port.
	resp, body = call(follower, "GET", "/cluster/metadata", tok, "")
	if resp.StatusCode != 200 || strings.Count(body, `"http":`) != 3 || !strings.Contains(body, `"role":"leader"`) {
		t.Fatalf("cluster metadata: %d %s", resp.StatusCode, body)
	}
}

// TestHTTPForwardingRidesOutAPrimaryKill: the primary is SIGKILLed and a
// write arrives at a follower at once. The forward is retried while the
// primary provably never got it (connect refused) and commits on the
// primary of the next view, within the 30 s forwarding budget.
func TestHTTPForwardingRidesOutAPrimaryKill(t *testing.T) {
	ip := nextClusterIP()
	httpPorts := pickPorts(t, ip, 3)
	env := []string{"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=" + ip + ":0",
		"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=an-http-forwarding-psk-of-32-bytes!!"}
	for i, p := range httpPorts {
		env = append(env, fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_HTTP=%d", i, p))
	}
	c := startClusterOn(t, ip, 3, env...)
	leader := c.waitLeader(0, -1, failoverBound)
	follower := (leader + 1) % 3
	hc := &http.Client{Timeout: 40 * time.Second}
	post := func(path, token, body string) (int, string) {
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://%s:%d%s", ip, httpPorts[follower], path), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
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
	st, body := post("/users/login", "", `{"username":"iggy","password":"iggy"}`)
	if st != 200 {
		t.Fatalf("login: %d %s", st, body)
	}
	var id struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"access_token"`
	}
	_ = json.Unmarshal([]byte(body), &id)

	c.nodes[leader].stop(syscall.SIGKILL)
	start := time.Now()
	st, body = post("/streams", id.AccessToken.Token, `{"name":"after-kill"}`)
	if st != 200 {
		t.Fatalf("write during failover: %d %s (after %s)", st, body, time.Since(start))
	}
	if took := time.Since(start); took > failoverBound+5*time.Second {
		t.Fatalf("forward took %s", took)
	}
	t.Logf("write during failover committed after %s", time.Since(start).Round(time.Millisecond))
}
