package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/client"
)

// The scenarios of upstream's leader_redirection suite (apache/iggy
// bdd/scenarios/leader_redirection.feature: a follower redirects to the
// leader, a client given the leader stays, clients converge, a server without
// clustering needs no redirection), on real 2- and 3-node clusters and a
// single server, with client.DialCluster.

// sessionsBound counts the sign-ins node i served so far (its log).
func (c *testCluster) sessionsBound(i int) int {
	return strings.Count(c.nodes[i].logs.String(), "session bound")
}

func dialClusterAt(t *testing.T, addr string) *client.Client {
	t.Helper()
	cl, err := client.DialCluster(testCtx(t), []string{addr}, client.WithCredentials("iggy", "iggy"))
	if err != nil {
		t.Fatalf("DialCluster(%s): %v", addr, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestLeaderRedirectionScenarios(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d-nodes", n), func(t *testing.T) {
			c := startCluster(t, n)
			leader := c.waitLeader(0, -1, failoverBound)
			follower := (leader + 1) % n

			t.Run("client redirects from follower to leader", func(t *testing.T) {
				before := c.sessionsBound(follower)
				cl := dialClusterAt(t, c.addr(follower))
				if cl.Addr() != c.addr(leader) {
					t.Fatalf("client on %s, want the leader %s", cl.Addr(), c.addr(leader))
				}
				// The node's log reaches the test through a pipe: wait for the line.
				waitFor(t, "a sign-in on the follower the client was given", failoverBound, func() bool {
					return c.sessionsBound(follower) > before
				})
				name := fmt.Sprintf("test-stream-%d", n)
				_, err := cl.CreateStream(testCtx(t), name)
				must(t, err)
				if _, err := rootClient(t, c.addr(leader)).GetStream(testCtx(t), named(name)); err != nil {
					t.Fatalf("the stream is not on the leader: %v", err)
				}
			})

			t.Run("client connects directly to leader without redirection", func(t *testing.T) {
				before := make([]int, n)
				for i := range before {
					before[i] = c.sessionsBound(i)
				}
				cl := dialClusterAt(t, c.addr(leader))
				if cl.Addr() != c.addr(leader) {
					t.Fatalf("client moved to %s", cl.Addr())
				}
				waitFor(t, "the sign-in on the leader", failoverBound, func() bool {
					return c.sessionsBound(leader) > before[leader]
				})
				for i := range before {
					if got := c.sessionsBound(i) - before[i]; i != leader && got != 0 {
						t.Fatalf("node %d bound %d sessions: the client was redirected", i, got)
					}
				}
			})

			t.Run("multiple clients converge to the same leader", func(t *testing.T) {
				a := dialClusterAt(t, c.addr(leader))
				b := dialClusterAt(t, c.addr(follower))
				if a.Addr() != c.addr(leader) || b.Addr() != a.Addr() {
					t.Fatalf("client A on %s, client B on %s, want both on the leader %s", a.Addr(), b.Addr(), c.addr(leader))
				}
			})
		})
	}

	t.Run("client handles missing cluster metadata gracefully", func(t *testing.T) {
		srv := startServer(t, "")
		cl := dialClusterAt(t, srv.addr)
		if cl.Addr() != srv.addr {
			t.Fatalf("client moved to %s", cl.Addr())
		}
		_, err := cl.CreateStream(testCtx(t), "single-server-stream")
		must(t, err)
		if _, err := cl.GetStream(testCtx(t), named("single-server-stream")); err != nil {
			t.Fatal(err)
		}
	})
}
