package httpapi

import (
	"fmt"
	"testing"
)

// TestRBACDenials runs every protected route as a user without
// permissions: each is 403 unauthorized (the binary protocol's answer),
// except the routes every authenticated user may use (spec §11).
func TestRBACDenials(t *testing.T) {
	ts := startServer(t, nil)
	root := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", root, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics", root, topicBody("t", 2)), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics/t/consumer-groups", root, map[string]any{"name": "g"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics/t/messages", root, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 201, "")
	expect(t, ts.do("PUT", "/streams/s/topics/t/consumer-offsets", root, map[string]any{"consumer_id": 1, "partition_id": 0, "offset": 0}), 204, "")
	expect(t, ts.do("POST", "/users", root, map[string]any{"username": "nobody", "password": "secret", "status": "active"}), 200, "")
	expect(t, ts.do("POST", "/users", root, map[string]any{"username": "victim", "password": "secret", "status": "active"}), 200, "")
	tok := ts.login("nobody", "secret")

	denied := []struct {
		method, path string
		body         any
	}{
		{"GET", "/stats", nil},
		{"GET", "/clients", nil},
		{"GET", "/clients/1", nil},
		{"POST", "/snapshot", map[string]any{}},
		{"GET", "/users", nil},
		{"POST", "/users", map[string]any{"username": "another", "password": "secret", "status": "active"}},
		{"GET", "/users/victim", nil},
		{"PUT", "/users/victim", map[string]any{"status": "inactive"}},
		{"DELETE", "/users/victim", nil},
		{"PUT", "/users/victim/password", map[string]any{"current_password": "secret", "new_password": "secret2"}},
		{"PUT", "/users/victim/permissions", map[string]any{"permissions": nil}},
		{"GET", "/streams", nil},
		{"POST", "/streams", map[string]any{"name": "mine"}},
		{"GET", "/streams/s", nil},
		{"PUT", "/streams/s", map[string]any{"name": "renamed"}},
		{"DELETE", "/streams/s/purge", nil},
		{"DELETE", "/streams/s", nil},
		{"GET", "/streams/s/topics", nil},
		{"POST", "/streams/s/topics", topicBody("mine", 1)},
		{"GET", "/streams/s/topics/t", nil},
		{"PUT", "/streams/s/topics/t", map[string]any{"name": "renamed"}},
		{"DELETE", "/streams/s/topics/t/purge", nil},
		{"DELETE", "/streams/s/topics/t", nil},
		{"POST", "/streams/s/topics/t/partitions", map[string]any{"partitions_count": 1}},
		{"DELETE", "/streams/s/topics/t/partitions?partitions_count=1", nil},
		{"DELETE", "/streams/s/topics/t/partitions/0?segments_count=1", nil},
		{"GET", "/streams/s/topics/t/consumer-groups", nil},
		{"POST", "/streams/s/topics/t/consumer-groups", map[string]any{"name": "mine"}},
		{"GET", "/streams/s/topics/t/consumer-groups/g", nil},
		{"DELETE", "/streams/s/topics/t/consumer-groups/g", nil},
		{"GET", "/streams/s/topics/t/messages?partition_id=0", nil},
		{"POST", "/streams/s/topics/t/messages", sendBody("AAAAAA==", map[string]any{"payload": "eA=="})},
		{"GET", "/streams/s/topics/t/consumer-offsets?consumer_id=1&partition_id=0", nil},
		{"PUT", "/streams/s/topics/t/consumer-offsets", map[string]any{"consumer_id": 1, "partition_id": 0, "offset": 0}},
		{"DELETE", "/streams/s/topics/t/consumer-offsets/1?partition_id=0", nil},
	}
	for _, d := range denied {
		t.Run(fmt.Sprintf("%s %s", d.method, d.path), func(t *testing.T) {
			golden(t, "unauthorized", expect(t, ts.do(d.method, d.path, tok, d.body), 403, "unauthorized").body)
		})
	}

	// Allowed to every authenticated user.
	expect(t, ts.do("GET", "/cluster/metadata", tok, nil), 200, "")
	expect(t, ts.do("GET", "/options/topic", tok, nil), 200, "")
	expect(t, ts.do("GET", "/metrics", tok, nil), 200, "")
	expect(t, ts.do("GET", "/users/me", tok, nil), 200, "")
	expect(t, ts.do("GET", "/users/nobody", tok, nil), 200, "")
	expect(t, ts.do("POST", "/personal-access-tokens", tok, map[string]any{"name": "own-token", "expiry": 0}), 200, "")
	expect(t, ts.do("GET", "/personal-access-tokens", tok, nil), 200, "")
	expect(t, ts.do("DELETE", "/personal-access-tokens/own-token", tok, nil), 204, "")
	expect(t, ts.do("PUT", "/users/nobody/password", tok, map[string]any{"current_password": "secret", "new_password": "secret3"}), 204, "")
	expect(t, ts.do("DELETE", "/users/logout", tok, nil), 204, "")

	// Nothing was half-applied by the denied writes.
	r := expect(t, ts.do("GET", "/streams/s/topics/t", root, nil), 200, "")
	var td map[string]any
	r.json(t, &td)
	if td["name"] != "t" || td["partitions_count"] != 2.0 || td["messages_count"] != 1.0 {
		t.Fatalf("denied writes changed state: %s", r.body)
	}
}

// TestRBACScopedGrants: stream- and topic-scoped grants open exactly their
// routes, as the binary protocol's authorisation does.
func TestRBACScopedGrants(t *testing.T) {
	ts := startServer(t, nil)
	root := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", root, map[string]any{"name": "a"}), 200, "")
	expect(t, ts.do("POST", "/streams", root, map[string]any{"name": "b"}), 200, "")
	expect(t, ts.do("POST", "/streams/a/topics", root, topicBody("t", 1)), 200, "")
	expect(t, ts.do("POST", "/streams/b/topics", root, topicBody("t", 1)), 200, "")
	global := map[string]bool{"manage_servers": false, "read_servers": false, "manage_users": false, "read_users": false,
		"manage_streams": false, "read_streams": false, "manage_topics": false, "read_topics": false,
		"poll_messages": false, "send_messages": false}
	perms := map[string]any{"global": global, "streams": map[string]any{"0": map[string]any{"manage_stream": false, "read_stream": true,
		"manage_topics": false, "read_topics": true, "poll_messages": false, "send_messages": true, "topics": nil}}}
	expect(t, ts.do("POST", "/users", root, map[string]any{"username": "scoped", "password": "secret", "status": "active", "permissions": perms}), 200, "")
	tok := ts.login("scoped", "secret")
	expect(t, ts.do("GET", "/streams/a", tok, nil), 200, "")
	expect(t, ts.do("GET", "/streams/b", tok, nil), 403, "unauthorized")
	expect(t, ts.do("GET", "/streams/a/topics/t", tok, nil), 200, "")
	expect(t, ts.do("POST", "/streams/a/topics/t/messages", tok, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 201, "")
	expect(t, ts.do("POST", "/streams/b/topics/t/messages", tok, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 403, "unauthorized")
	expect(t, ts.do("GET", "/streams/a/topics/t/messages?partition_id=0", tok, nil), 200, "") // read_stream polls
	expect(t, ts.do("GET", "/streams/b/topics/t/messages?partition_id=0", tok, nil), 403, "unauthorized")
	expect(t, ts.do("DELETE", "/streams/a", tok, nil), 403, "unauthorized")
	// Unknown targets are 404, not 403.
	expect(t, ts.do("GET", "/streams/zz", tok, nil), 404, "")
}
