package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// httpClusterT is a 3-node cluster with HTTP on every node and a cluster
// PSK (so bearers verify everywhere and forwarding is active).
type httpClusterT struct {
	t     *testing.T
	c     *testCluster
	ip    string
	ports []int
	hc    *http.Client
}

func startHTTPCluster(t *testing.T) *httpClusterT {
	ip := nextClusterIP()
	ports := pickPorts(t, ip, 3)
	env := []string{"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=" + ip + ":0",
		"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=an-http-forwarding-psk-of-32-bytes!!"}
	for i, p := range ports {
		env = append(env, fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_HTTP=%d", i, p))
	}
	return &httpClusterT{t: t, c: startClusterOn(t, ip, 3, env...), ip: ip, ports: ports,
		hc: &http.Client{Timeout: 40 * time.Second}}
}

// do sends one request to node i; a transport error is status 0.
func (h *httpClusterT) do(i int, method, path, token, body string) (int, string) {
	req, err := http.NewRequest(method, fmt.Sprintf("http://%s:%d%s", h.ip, h.ports[i], path), strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *httpClusterT) login(i int) string {
	st, body := h.do(i, "POST", "/users/login", "", `{"username":"iggy","password":"iggy"}`)
	if st != 200 {
		h.t.Fatalf("login on node %d: %d %s", i, st, body)
	}
	var id struct {
		AccessToken struct {
			Token string `json:"token"`
		} `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(body), &id); err != nil {
		h.t.Fatal(err)
	}
	return id.AccessToken.Token
}

// until retries fn every 50 ms until it reports true or within passes.
func (h *httpClusterT) until(within time.Duration, what string, fn func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := fn()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %s (last: %s)", what, within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sendBody(payload string) string {
	return `{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"payload":"` +
		base64.StdEncoding.EncodeToString([]byte(payload)) + `"}]}`
}

// polledPayloads polls partition 0 on node i from offset 0 and counts each payload.
func (h *httpClusterT) polledPayloads(i int, token, path string) (map[string]int, bool) {
	st, body := h.do(i, "GET", path+"/messages?kind=offset&value=0&count=1000&partition_id=0", token, "")
	if st != 200 {
		return nil, false
	}
	var r struct {
		Messages []struct {
			Payload string `json:"payload"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(body), &r) != nil {
		return nil, false
	}
	out := map[string]int{}
	for _, m := range r.Messages {
		p, err := base64.StdEncoding.DecodeString(m.Payload)
		if err != nil {
			return nil, false
		}
		out[string(p)]++
	}
	return out, true
}

// TestHTTPPartitionWriteRetry (seed 003): a partition write sent to a
// backup of the partition's group is refused there with 58 and then tried
// on the other nodes; it lands on the primary once (sends, offset store
// and delete). Then the primary is SIGKILLed while sends stream into a
// follower: every answer is 201 (applied once), 503 with 58 (never
// applied) or 502/504 (unknown, never replayed: at most once).
func TestHTTPPartitionWriteRetry(t *testing.T) {
	h := startHTTPCluster(t)
	leader := h.c.waitLeader(0, -1, failoverBound)
	follower := (leader + 1) % 3
	tok := h.login(follower)
	if st, body := h.do(follower, "POST", "/streams", tok, `{"name":"retry"}`); st != 200 {
		t.Fatalf("create stream: %d %s", st, body)
	}
	if st, body := h.do(follower, "POST", "/streams/retry/topics", tok,
		`{"name":"t","partitions_count":1,"compression_algorithm":"none","message_expiry":0,"max_topic_size":0}`); st != 200 {
		t.Fatalf("create topic: %d %s", st, body)
	}
	path := "/streams/retry/topics/t"
	// The partition group forms on the primary first.
	h.until(10*time.Second, "first send on the primary", func() (bool, string) {
		st, body := h.do(leader, "POST", path+"/messages", tok, sendBody("on-primary"))
		return st == 201, fmt.Sprint(st, body)
	})
	// On the follower: refused locally (a backup), retried on the primary.
	st, body := h.do(follower, "POST", path+"/messages", tok, sendBody("via-follower"))
	if st != 201 || !strings.Contains(body, `"base_offset":1`) {
		t.Fatalf("send on a follower: %d %s, want 201 at offset 1", st, body)
	}
	// A hop-guarded request is not retried further: the backup's own 58.
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://%s:%d%s/messages", h.ip, h.ports[follower], path), strings.NewReader(sendBody("hop")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("iggy-forwarded", "1")
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), fmt.Sprintf(`"id":%d`, wire.ErrTransientNotAccepted)) {
		t.Fatalf("forwarded send on a backup: %d %s, want 503 id 58", resp.StatusCode, b)
	}
	// Offsets: store and delete through the follower.
	if st, body := h.do(follower, "PUT", path+"/consumer-offsets", tok, `{"consumer_id":7,"partition_id":0,"offset":1}`); st != 204 {
		t.Fatalf("store offset on a follower: %d %s", st, body)
	}
	h.until(10*time.Second, "stored offset visible on the primary", func() (bool, string) {
		st, body := h.do(leader, "GET", path+"/consumer-offsets?consumer_id=7&partition_id=0", tok, "")
		return st == 200 && strings.Contains(body, `"stored_offset":1`), fmt.Sprint(st, body)
	})
	if st, body := h.do(follower, "DELETE", path+"/consumer-offsets/7?partition_id=0", tok, ""); st != 204 {
		t.Fatalf("delete offset on a follower: %d %s", st, body)
	}
	if st, body := h.do(leader, "GET", path+"/consumer-offsets?consumer_id=7&partition_id=0", tok, ""); st != 404 {
		t.Fatalf("offset after delete via follower: %d %s, want 404", st, body)
	}
	// ack=none is not retried: its 202 would acknowledge nothing.
	if st, body := h.do(follower, "POST", path+"/messages?ack=none", tok, sendBody("no-ack")); st != 503 {
		t.Fatalf("ack=none on a backup: %d %s, want 503", st, body)
	}
	got, ok := h.polledPayloads(leader, tok, path)
	if !ok || got["on-primary"] != 1 || got["via-follower"] != 1 || got["hop"] != 0 || got["no-ack"] != 0 {
		t.Fatalf("messages on the primary: %v (ok %v)", got, ok)
	}

	// Cluster metrics: replica bus, fsync latency by kind, WAL bytes,
	// partition groups in aggregate, the retries counted.
	st, metrics := h.do(follower, "GET", "/metrics", tok, "")
	if st != 200 {
		t.Fatalf("metrics: %d %s", st, metrics)
	}
	for _, want := range []string{`iggy_replica_bus_frames_sent_total `, `iggy_replica_bus_queue_frames{peer="`,
		`iggy_replica_bus_frames_dropped_total{reason="queue_full"}`, `iggy_fsync_duration_seconds_bucket{kind="metadata_wal"`,
		`iggy_fsync_duration_seconds_bucket{kind="superblock"`, `iggy_partition_groups{role="backup"} 1`,
		`iggy_partition_groups_view_change 0`, `iggy_http_partition_write_retries_total `} {
		if !strings.Contains(metrics, want) {
			t.Errorf("follower's /metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "iggy_metadata_wal_bytes 0\n") || !strings.Contains(metrics, "iggy_metadata_wal_bytes ") {
		t.Errorf("metadata WAL bytes not reported:\n%s", metrics)
	}
	if strings.Contains(metrics, "iggy_http_partition_write_retries_total 0\n") {
		t.Error("the follower's retries are not counted")
	}

	// kill -9 of the primary while sends stream into the follower.
	const sends = 40
	type outcome struct {
		payload string
		status  int
		body    string
	}
	results := make([]outcome, sends)
	var wg sync.WaitGroup
	wg.Add(1)
	started := make(chan struct{})
	go func() {
		defer wg.Done()
		for i := range sends {
			if i == 5 {
				close(started)
			}
			p := fmt.Sprintf("k%02d", i)
			st, body := h.do(follower, "POST", path+"/messages", tok, sendBody(p))
			results[i] = outcome{payload: p, status: st, body: body}
		}
	}()
	<-started
	h.c.nodes[leader].stop(syscall.SIGKILL)
	wg.Wait()
	var applied, refused, unknown []string
	for _, r := range results {
		switch {
		case r.status == 201:
			applied = append(applied, r.payload)
		case r.status == 503 && strings.Contains(r.body, fmt.Sprintf(`"id":%d`, wire.ErrTransientNotAccepted)):
			refused = append(refused, r.payload)
		case r.status == 502 || r.status == 504:
			unknown = append(unknown, r.payload)
		default:
			t.Fatalf("send %s during failover: %d %s", r.payload, r.status, r.body)
		}
	}
	t.Logf("during the kill: %d applied, %d refused (58), %d unknown", len(applied), len(refused), len(unknown))
	// After the failover every applied send is there once, no refused one
	// at all, an unknown one at most once.
	survivor := follower
	h.until(30*time.Second, "applied sends readable after the failover", func() (bool, string) {
		got, ok := h.polledPayloads(survivor, tok, path)
		if !ok {
			return false, "poll failed"
		}
		for _, p := range applied {
			if got[p] != 1 {
				return false, fmt.Sprintf("%s seen %d times", p, got[p])
			}
		}
		return true, ""
	})
	got, _ = h.polledPayloads(survivor, tok, path)
	for _, p := range refused {
		if got[p] != 0 {
			t.Errorf("send %s was answered 58 but is stored %d times", p, got[p])
		}
	}
	for p, n := range got {
		if n != 1 {
			t.Errorf("payload %s stored %d times", p, n)
		}
	}
	// The cluster takes sends again through any node.
	h.until(30*time.Second, "send after the failover", func() (bool, string) {
		st, body := h.do(survivor, "POST", path+"/messages", tok, sendBody("after"))
		return st == 201, fmt.Sprint(st, body)
	})
}

// TestClientOverHTTPInACluster: the Go client's HTTP transport on a 3-node cluster. A plain Dial
// to a follower sends (the server retries the partition write on the primary) and creates
// (forwarded); DialCluster from a follower's HTTP endpoint settles on the leader's.
func TestClientOverHTTPInACluster(t *testing.T) {
	h := startHTTPCluster(t)
	leader := h.c.waitLeader(0, -1, failoverBound)
	follower := (leader + 1) % 3
	ctx := testCtx(t)
	url := func(i int) string { return fmt.Sprintf("http://%s:%d", h.ip, h.ports[i]) }

	fc, err := client.Dial(ctx, url(follower), client.WithTransport(client.TransportHTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	if _, err := fc.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	sd, err := fc.CreateStream(ctx, "cluster-http")
	must(t, err)
	td, err := fc.CreateTopic(ctx, id(sd.ID), "t", 1)
	must(t, err)
	msgs := []wire.BatchMessageInput{{Payload: []byte("one"), OriginTimestamp: uint64(time.Now().UnixMicro())}}
	var confs []wire.SendConfirmation
	h.until(10*time.Second, "send through a follower", func() (bool, string) {
		confs, err = fc.SendMessages(ctx, id(sd.ID), id(td.ID), wire.Partitioning{Kind: wire.PartitioningPartitionID}, msgs)
		return err == nil, fmt.Sprint(err)
	})
	if len(confs) != 1 || confs[0].BaseOffset != 0 {
		t.Fatalf("confirmations: %+v", confs)
	}

	cl, err := client.DialCluster(ctx, []string{url(follower)}, client.WithTransport(client.TransportHTTP),
		client.WithCredentials("iggy", "iggy"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if want := fmt.Sprintf("%s:%d", h.ip, h.ports[leader]); cl.Addr() != want {
		t.Fatalf("DialCluster over http settled on %s, want the leader %s", cl.Addr(), want)
	}
	_, err = cl.SendMessages(ctx, id(sd.ID), id(td.ID), wire.Partitioning{Kind: wire.PartitioningPartitionID},
		[]wire.BatchMessageInput{{Payload: []byte("two"), OriginTimestamp: uint64(time.Now().UnixMicro())}})
	must(t, err)
	polled, err := cl.PollMessages(ctx, wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)},
		Stream: id(sd.ID), Topic: id(td.ID), Partition: wire.OptPartition{Present: true}, Strategy: wire.PollingStrategy{Kind: wire.PollOffset},
		Count: 10})
	must(t, err)
	if len(polled.Messages) != 2 || string(polled.Messages[0].Payload) != "one" || string(polled.Messages[1].Payload) != "two" {
		t.Fatalf("polled: %+v", polled)
	}
}
