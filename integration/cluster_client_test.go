package integration

import (
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// TestClusterClientFollowsLeader: client.DialCluster given only a
// follower's address ends on the leader; after kill -9 of that leader the
// same client reconnects through a survivor, settles on the new leader and
// a metadata write through it succeeds.
func TestClusterClientFollowsLeader(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := c.waitLeader(1, -1, failoverBound)
	follower := (leader + 1) % 3
	cl, err := client.DialCluster(ctx, []string{c.addr(follower)},
		client.WithCredentials("iggy", "iggy"), client.WithResponseTimeout(15*time.Second))
	must(t, err)
	t.Cleanup(func() { cl.Close() })
	if cl.Addr() != c.addr(leader) {
		t.Fatalf("DialCluster(follower %s) ended on %s, want the leader %s", c.addr(follower), cl.Addr(), c.addr(leader))
	}
	if _, err := cl.CreateStream(ctx, "before"); err != nil {
		t.Fatalf("write on the leader: %v", err)
	}

	c.nodes[leader].stop(syscall.SIGKILL)
	killed := time.Now()
	attempts := 0
	for {
		attempts++
		_, err = cl.CreateStream(ctx, "after")
		if err == nil || (attempts > 1 && client.CodeOf(err) == wire.ErrStreamNameAlreadyExists) {
			break // AlreadyExists: an earlier attempt with an unknown outcome committed it
		}
		t.Logf("attempt %d after %s: %v", attempts, time.Since(killed).Round(time.Millisecond), err)
		if time.Since(killed) > failoverBound+15*time.Second {
			t.Fatalf("no write through the client %s after the kill: %v", time.Since(killed), err)
		}
	}
	took := time.Since(killed)
	t.Logf("write through the client accepted %s after kill -9 of the leader, attempt %d, on %s",
		took.Round(time.Millisecond), attempts, cl.Addr())
	// The broken connection is seen by the first call; the next one reconnects and settles.
	if attempts > 2 {
		t.Errorf("%d attempts: the client should recover on the call after the one that saw the break", attempts)
	}
	survivor := (leader + 1) % 3
	newLeader := c.waitLeader(survivor, -1, failoverBound)
	if newLeader == leader || cl.Addr() != c.addr(newLeader) {
		t.Fatalf("client on %s, new leader is node %d (%s)", cl.Addr(), newLeader, c.addr(newLeader))
	}
	streams, err := cl.GetStreams(ctx)
	must(t, err)
	names := map[string]bool{}
	for _, s := range streams {
		names[s.Name] = true
	}
	if !names["before"] || !names["after"] {
		t.Fatalf("streams on the new leader: %+v", streams)
	}
}
