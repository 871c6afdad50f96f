package integration

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

func splitHostPort(t *testing.T, addr string) (string, uint16) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return host, uint16(port)
}

// populate creates a user, a PAT, a stream with a topic and a group.
func populate(t *testing.T, addr string) string {
	t.Helper()
	c := rootClient(t, addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "durable")
	must(t, err)
	_, err = c.CreateTopic(ctx, named("durable"), "topic", 3)
	must(t, err)
	_, err = c.CreateConsumerGroup(ctx, id(0), id(0), "group")
	must(t, err)
	_, err = c.CreateUser(ctx, "bob", "bobpass", wire.UserActive, &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}})
	must(t, err)
	token, err := c.CreatePersonalAccessToken(ctx, "keep", 0)
	must(t, err)
	return token
}

func verifyPopulated(t *testing.T, addr, token string) {
	t.Helper()
	ctx := testCtx(t)
	c := rootClient(t, addr)
	topic, err := c.GetTopic(ctx, named("durable"), named("topic"))
	must(t, err)
	if len(topic.Partitions) != 3 {
		t.Fatalf("topic after restart %+v", topic)
	}
	if _, err := c.GetConsumerGroup(ctx, id(0), id(0), named("group")); err != nil {
		t.Fatalf("group after restart: %v", err)
	}
	bob := loginAs(t, addr, "bob", "bobpass")
	if _, err := bob.GetStreams(ctx); err != nil {
		t.Fatalf("bob's permissions after restart: %v", err)
	}
	pat := dialClient(t, addr)
	if _, err := pat.LoginWithPersonalAccessToken(ctx, token); err != nil {
		t.Fatalf("PAT after restart: %v", err)
	}
}

func TestRestartAfterSIGTERMKeepsMetadata(t *testing.T) {
	srv := startServer(t, "")
	token := populate(t, srv.addr)
	srv.restart(syscall.SIGTERM)
	verifyPopulated(t, srv.addr, token)
	// Ids keep counting from the recovered state.
	c := rootClient(t, srv.addr)
	s, err := c.CreateStream(testCtx(t), "after")
	must(t, err)
	if s.ID != 1 {
		t.Fatalf("stream created after restart has id %d, want 1", s.ID)
	}
}

// TestSIGKILLKeepsAcknowledgedWrites acknowledges enough writes to cross
// several metadata checkpoints (snapshot + journal compaction; a 256-slot
// journal asks for one every 128 ops) and kills the server without warning:
// every acknowledged write is there after the restart.
func TestSIGKILLKeepsAcknowledgedWrites(t *testing.T) {
	srv := startServer(t, "", "IGGY_METADATA_JOURNAL_SLOTS=256")
	token := populate(t, srv.addr)
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	const streams = 600
	start := time.Now()
	for i := 0; i < streams; i++ {
		if _, err := c.CreateStream(ctx, fmt.Sprintf("s-%04d", i)); err != nil {
			t.Fatalf("create stream %d: %v", i, err)
		}
	}
	t.Logf("%d acknowledged CreateStream ops in %s (%.0f ops/s)", streams, time.Since(start).Round(time.Millisecond),
		float64(streams)/time.Since(start).Seconds())
	if n := strings.Count(srv.logs.String(), "metadata checkpoint written"); n < 4 {
		t.Fatalf("%d metadata checkpoints before the kill, want at least 4", n)
	}
	srv.restart(syscall.SIGKILL)
	verifyPopulated(t, srv.addr, token)
	c = rootClient(t, srv.addr)
	all, err := c.GetStreams(ctx)
	must(t, err)
	if len(all) != streams+1 {
		t.Fatalf("%d streams after SIGKILL, want %d", len(all), streams+1)
	}
	// And once more, now from the checkpoint plus the journal tail.
	srv.restart(syscall.SIGKILL)
	c = rootClient(t, srv.addr)
	all, err = c.GetStreams(ctx)
	must(t, err)
	if len(all) != streams+1 {
		t.Fatalf("%d streams after second SIGKILL, want %d", len(all), streams+1)
	}
}

// TestStaleClientEvicted: a silent connection holding group membership is
// evicted with StaleClient and its membership released.
func TestStaleClientEvicted(t *testing.T) {
	srv := startServer(t, "", "IGGY_HEARTBEAT_INTERVAL=300ms")
	ctx := testCtx(t)
	admin := rootClient(t, srv.addr)
	_, err := admin.CreateStream(ctx, "s")
	must(t, err)
	_, err = admin.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	_, err = admin.CreateConsumerGroup(ctx, id(0), id(0), "g")
	must(t, err)

	member := rootClient(t, srv.addr)
	must(t, member.JoinConsumerGroup(ctx, id(0), id(0), id(0)))
	idle := rootClient(t, srv.addr) // silent too, but holds no membership

	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := admin.GetConsumerGroup(ctx, id(0), id(0), id(0))
		must(t, err)
		if len(g.Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stale member was not released")
		}
		time.Sleep(50 * time.Millisecond)
	}
	expectCode(t, member.Ping(ctx), wire.ErrStaleClient)
	must(t, idle.Ping(ctx))
}
