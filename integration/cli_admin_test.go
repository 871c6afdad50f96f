package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLIClientsOffsetsSegmentsFlush covers client get|list, consumer-offset get|set, segment
// delete and message flush against the real server.
func TestCLIClientsOffsetsSegmentsFlush(t *testing.T) {
	s := startServer(t, "")
	iggyCLI(t, s.addr, "", "stream", "create", "ops").ok(t)
	iggyCLI(t, s.addr, "", "topic", "create", "ops", "t", "2", "none").ok(t)
	iggyCLI(t, s.addr, "", "message", "send", "-p", "0", "ops", "t", "a", "b", "c", "d").ok(t)

	var clients []struct {
		ClientID  uint32 `json:"client_id"`
		UserID    string `json:"user_id"`
		Transport string `json:"transport"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "client", "list").ok(t), &clients)
	if len(clients) == 0 || clients[0].Transport != "TCP" {
		t.Fatalf("client list = %+v", clients)
	}
	// A second connection stays open until the test ends, so the list has someone besides itself.
	rootClient(t, s.addr)
	out := iggyCLI(t, s.addr, "", "--output", "json", "client", "list").ok(t)
	decodeJSON(t, out, &clients)
	if len(clients) < 2 {
		t.Fatalf("client list with two connections = %s", out)
	}
	got := iggyCLI(t, s.addr, "", "client", "get", u32s(clients[0].ClientID)).ok(t)
	if !strings.Contains(got, "| Client ID") || !strings.Contains(got, u32s(clients[0].ClientID)) {
		t.Errorf("client get:\n%s", got)
	}
	iggyCLI(t, s.addr, "", "client", "get", "4000000000").fails(t, 1, "ClientNotFound")
	iggyCLI(t, s.addr, "", "client", "get", "me").fails(t, 2, "not a whole number")

	iggyCLI(t, s.addr, "", "consumer-offset", "set", "7", "ops", "t", "0", "2").ok(t)
	var off struct {
		StoredOffset  uint64 `json:"stored_offset"`
		CurrentOffset uint64 `json:"current_offset"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "consumer-offset", "get", "7", "ops", "t", "0").ok(t), &off)
	if off.StoredOffset != 2 || off.CurrentOffset != 3 {
		t.Fatalf("consumer-offset get = %+v", off)
	}
	// The stored offset drives --next polling.
	if poll := iggyCLI(t, s.addr, "", "message", "poll", "--next", "-c", "7", "ops", "t", "0").ok(t); !strings.Contains(poll, "| d ") {
		t.Errorf("poll --next after set:\n%s", poll)
	}
	iggyCLI(t, s.addr, "", "consumer-offset", "get", "8", "ops", "t", "0").fails(t, 1, "no offset stored")
	iggyCLI(t, s.addr, "", "consumer-offset", "get", "-k", "consumer-group", "nogroup", "ops", "t", "0").fails(t, 1)
	iggyCLI(t, s.addr, "", "consumer-offset", "set", "-k", "bogus", "7", "ops", "t", "0", "1").fails(t, 2, "consumer-group")

	iggyCLI(t, s.addr, "", "segment", "delete", "ops", "t", "0", "1").ok(t)
	iggyCLI(t, s.addr, "", "segment", "delete", "ops", "t", "0", "0").fails(t, 2, "1..100000")
	iggyCLI(t, s.addr, "", "segment", "delete", "ops", "nosuch", "0", "1").fails(t, 1, "TopicIdNotFound")

	// Lodestream keeps no unsaved buffer: the server refuses flush, and the CLI says so.
	iggyCLI(t, s.addr, "", "message", "flush", "--fsync", "ops", "t", "0").fails(t, 1, "FeatureUnavailable")
}

// TestCLISnapshotAndOptions covers snapshot (a ZIP file in --out-dir) and options.
func TestCLISnapshotAndOptions(t *testing.T) {
	s := startServer(t, "")
	dir := t.TempDir()
	out := iggyCLI(t, s.addr, "", "snapshot", "-c", "stored", "-s", "test", "resource_usage", "-o", dir).ok(t)
	files, _ := filepath.Glob(filepath.Join(dir, "snapshot_*.zip"))
	if len(files) != 1 || !strings.Contains(out, files[0]) {
		t.Fatalf("snapshot wrote %v; output:\n%s", files, out)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.HasPrefix(string(data), "PK") || !strings.Contains(string(data), "test.txt") {
		t.Fatalf("snapshot file is not a ZIP with test.txt (%d bytes, %v)", len(data), err)
	}
	iggyCLI(t, s.addr, "", "snapshot", "-c", "rar").fails(t, 2, "--compression")
	iggyCLI(t, s.addr, "", "snapshot", "-s", "everything").fails(t, 2, "--snapshot-types")

	var specs []struct {
		Key  string `json:"key"`
		Kind string `json:"kind"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "options", "topic").ok(t), &specs)
	if len(specs) == 0 || specs[0].Key == "" || specs[0].Kind == "" {
		t.Fatalf("options topic = %+v", specs)
	}
	iggyCLI(t, s.addr, "", "options", "cluster").fails(t, 2, "topic, stream or user")
}

// TestCLIUserPermissionsCommand covers -s/--stream-permissions on user create and user
// permissions, checked by what the user may then do.
func TestCLIUserPermissionsCommand(t *testing.T) {
	s := startServer(t, "")
	iggyCLI(t, s.addr, "", "stream", "create", "perm").ok(t)
	iggyCLI(t, s.addr, "", "topic", "create", "perm", "t", "1", "none").ok(t)
	var stream struct {
		ID uint32 `json:"id"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "stream", "get", "perm").ok(t), &stream)
	var topic struct {
		ID uint32 `json:"id"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "topic", "get", "perm", "t").ok(t), &topic)
	sid, tid := u32s(stream.ID), u32s(topic.ID)
	iggyCLI(t, s.addr, "", "user", "create", "bob", "bobpass", "-g", "r_usr", "-s", sid+"#"+tid+":s_msg").ok(t)
	var u struct {
		Streams []string `json:"stream_permissions"`
	}
	decodeJSON(t, iggyCLI(t, s.addr, "", "--output", "json", "user", "get", "bob").ok(t), &u)
	if len(u.Streams) != 1 || u.Streams[0] != sid+"#"+tid+":send_messages" {
		t.Fatalf("bob's stream permissions = %v", u.Streams)
	}
	bob := func(args ...string) cliResult {
		return iggyCLIRaw(t, "", append([]string{"--tcp-server-address", s.addr, "-u", "bob", "-p", "bobpass"}, args...)...)
	}
	bob("message", "send", "perm", "t", "hi").ok(t)
	bob("message", "poll", "--first", "perm", "t", "0").fails(t, 1, "Unauthorized")
	iggyCLI(t, s.addr, "", "user", "permissions", "bob", "-s", sid+":p_msg").ok(t)
	bob("message", "poll", "--first", "perm", "t", "0").ok(t)
	bob("message", "send", "perm", "t", "again").fails(t, 1, "Unauthorized")
	iggyCLI(t, s.addr, "", "user", "permissions", "bob").ok(t) // none given: removed
	bob("message", "poll", "--first", "perm", "t", "0").fails(t, 1, "Unauthorized")
	iggyCLI(t, s.addr, "", "user", "permissions", "bob", "-s", sid+":bogus").fails(t, 2, `unknown permission "bogus"`)
}

func u32s(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
