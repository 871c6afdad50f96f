package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// writeOnAnyNode tries CreateStream(name) on every node except skip until
// one accepts (only the metadata primary does), returning its index.
func (c *testCluster) writeOnAnyNode(name string, skip int, within time.Duration) (int, time.Duration) {
	c.t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		for i := range c.nodes {
			if i == skip || !c.nodes[i].running() {
				continue
			}
			// A short response budget: the client stops replaying 57/58
			// soon, so the loop's granularity does not hide the failover.
			cl, err := client.Dial(testCtx(c.t), c.addr(i), client.WithResponseTimeout(500*time.Millisecond))
			if err != nil {
				continue
			}
			_, lerr := cl.LoginUser(testCtx(c.t), "iggy", "iggy")
			if lerr == nil {
				if _, err := cl.CreateStream(testCtx(c.t), name); err == nil {
					cl.Close()
					return i, time.Since(start)
				}
			}
			cl.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no node accepted CreateStream(%q) within %s", name, within)
	return -1, 0
}

// TestClusterMetadataReplicatesAndFailsOver: three nodes; metadata written
// through the primary is on the other nodes; kill -9 of the primary hands
// the metadata group to a new primary that holds every acknowledged write
// and accepts new ones.
func TestClusterMetadataReplicatesAndFailsOver(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	root := rootClient(t, c.addr(0))
	if _, err := root.CreateStream(ctx, "orders"); err != nil {
		t.Fatalf("create stream on the primary: %v", err)
	}
	if _, err := root.CreateUser(ctx, "alice", "secret-pw", wire.UserActive, nil); err != nil {
		t.Fatalf("create user on the primary: %v", err)
	}
	md, err := root.GetClusterMetadata(ctx)
	must(t, err)
	if md.Name != "it-cluster" || len(md.Nodes) != 3 || md.Nodes[0].Role != wire.RoleLeader ||
		md.Nodes[1].Role != wire.RoleFollower || int(md.Nodes[1].TCP) != c.tcpPorts[1] || md.Nodes[2].IP != c.ip {
		t.Fatalf("cluster metadata: %+v", md)
	}

	c.nodes[0].stop(syscall.SIGKILL)
	leader, took := c.writeOnAnyNode("after-failover", 0, failoverBound+10*time.Second)
	t.Logf("failover: node %d accepted a metadata write %s after kill -9 of the primary (heartbeat_timeout %s)",
		leader, took.Round(time.Millisecond), clusterHeartbeatTimeout)
	if took > failoverBound {
		t.Errorf("failover took %s, over the %s bound", took, failoverBound)
	}
	nl := rootClient(t, c.addr(leader))
	streams, err := nl.GetStreams(ctx)
	must(t, err)
	names := map[string]bool{}
	for _, s := range streams {
		names[s.Name] = true
	}
	if !names["orders"] || !names["after-failover"] {
		t.Fatalf("new primary's streams: %+v", streams)
	}
	if _, err := nl.LoginUser(ctx, "alice", "secret-pw"); err != nil {
		t.Fatalf("user created before the failover: %v", err)
	}
}

// streamNames logs in at node i (a follower forwards the login to the
// primary) and returns the names of the streams it serves from its state.
func (c *testCluster) streamNames(i int) map[string]bool {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	streams, err := cl.GetStreams(testCtx(c.t))
	must(c.t, err)
	out := map[string]bool{}
	for _, s := range streams {
		out[s.Name] = true
	}
	return out
}

// waitStreams polls node i until it serves every stream in want.
func (c *testCluster) waitStreams(i int, within time.Duration, want ...string) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		have := c.streamNames(i)
		missing := 0
		for _, w := range want {
			if !have[w] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d still misses %d of %d streams after %s", i, missing, len(want), within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterFollowerLoginAndRedirect: a login at a follower succeeds
// (forwarded to the primary), reads are served there, a write there
// answers 58, and cluster metadata names the leader.
func TestClusterFollowerLoginAndRedirect(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	primary := rootClient(t, c.addr(0))
	if _, err := primary.CreateStream(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	c.waitStreams(1, 10*time.Second, "orders")
	follower := rootClient(t, c.addr(1))
	md, err := follower.GetClusterMetadata(ctx)
	must(t, err)
	if md.Nodes[0].Role != wire.RoleLeader || md.Nodes[1].Role != wire.RoleFollower {
		t.Fatalf("cluster metadata at the follower: %+v", md)
	}
	_, err = follower.CreateStream(ctx, "refused")
	expectCode(t, err, wire.ErrTransientNotAccepted)
	// Logout at the follower is forwarded too; logging in again works.
	must(t, follower.Logout(ctx))
	if _, err := follower.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatalf("login again at the follower: %v", err)
	}
}

// TestClusterRestartedNodeCatchesUp: a follower killed while the others
// commit catches up by repair after a restart; one that was down while
// the journal wrapped past a checkpoint catches up by state transfer; a
// wiped follower rejoins by state transfer.
func TestClusterRestartedNodeCatchesUp(t *testing.T) {
	c := startCluster(t, 3, "IGGY_METADATA_JOURNAL_SLOTS=256")
	ctx := testCtx(t)
	primary := rootClient(t, c.addr(0))
	c.nodes[2].stop(syscall.SIGKILL)
	var names []string
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("repair-%d", i)
		_, err := primary.CreateStream(ctx, name)
		must(t, err)
		names = append(names, name)
	}
	c.nodes[2].start()
	c.waitStreams(2, 20*time.Second, names...)

	// Down while the primary checkpoints past 256 journal slots.
	c.nodes[2].stop(syscall.SIGKILL)
	for i := 0; i < 400; i++ {
		name := fmt.Sprintf("transfer-%d", i)
		_, err := primary.CreateStream(ctx, name)
		must(t, err)
		names = append(names, name)
	}
	c.nodes[2].start()
	c.waitStreams(2, 30*time.Second, names...)
	if !strings.Contains(c.nodes[2].logs.String(), "metadata snapshot installed from a peer") {
		t.Errorf("node 2 caught up without a state transfer")
	}

	// Wiped: a clean slate rejoins by state transfer.
	c.nodes[1].stop(syscall.SIGTERM)
	must(t, os.RemoveAll(c.nodes[1].dataDir))
	c.nodes[1].start()
	c.waitStreams(1, 30*time.Second, names...)
}

// TestClusterTwoNodesNeedBoth: with two replicas the quorum is both; a
// metadata write while one is down gets a retryable error, and works again
// once it returns.
func TestClusterTwoNodesNeedBoth(t *testing.T) {
	c := startCluster(t, 2)
	ctx := testCtx(t)
	primary := rootClient(t, c.addr(0))
	_, err := primary.CreateStream(ctx, "before")
	must(t, err)
	c.nodes[1].stop(syscall.SIGKILL)
	short, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	_, err = primary.CreateStream(short, "while-down")
	if code := client.CodeOf(err); code != wire.ErrTransientNotCommitted && code != wire.ErrTransientNotAccepted && err == nil {
		t.Fatalf("write with the only peer down: err %v, want a retryable error", err)
	}
	c.nodes[1].start()
	leader, _ := c.writeOnAnyNode("after", -1, 30*time.Second)
	t.Logf("two nodes: node %d accepted a write after the peer returned", leader)
}

// TestClusterFiveNodesTolerateTwoFailures: five replicas keep accepting
// metadata writes with two of them killed.
func TestClusterFiveNodesTolerateTwoFailures(t *testing.T) {
	c := startCluster(t, 5)
	ctx := testCtx(t)
	primary := rootClient(t, c.addr(0))
	_, err := primary.CreateStream(ctx, "five")
	must(t, err)
	c.nodes[3].stop(syscall.SIGKILL)
	c.nodes[0].stop(syscall.SIGKILL)
	leader, took := c.writeOnAnyNode("after-two-failures", 0, failoverBound+10*time.Second)
	t.Logf("five nodes, two killed (one the primary): node %d accepted a write after %s", leader, took.Round(time.Millisecond))
	if !c.streamNames(leader)["five"] {
		t.Fatal("the write before the failures is gone")
	}
}

// TestClusterCorruptWALIsSetAsideAndRejoins: an interior bit flip in one
// node's metadata WAL no longer refuses that node's boot (a single node's
// still does): the node logs the damage, naming the file and the offset,
// sets the WAL aside, rejoins without a vote and catches up from its peers,
// while the other two keep serving.
func TestClusterCorruptWALIsSetAsideAndRejoins(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	primary := rootClient(t, c.addr(0))
	for i := 0; i < 5; i++ {
		_, err := primary.CreateStream(ctx, fmt.Sprintf("s%d", i))
		must(t, err)
	}
	c.waitStreams(2, 10*time.Second, "s4")
	c.nodes[2].stop(syscall.SIGTERM)
	wal := lastWALSegment(t, c.nodes[2].dataDir)
	b, err := os.ReadFile(wal)
	must(t, err)
	if len(b) < 600 {
		t.Fatalf("WAL of %d bytes is too short to damage its interior", len(b))
	}
	b[300] ^= 0xFF
	must(t, os.WriteFile(wal, b, 0o644))
	_, err = primary.CreateStream(ctx, "while-down")
	must(t, err)
	c.nodes[2].start()
	c.waitStreams(2, 30*time.Second, "s0", "s4", "while-down")
	logs := c.nodes[2].logs.String()
	if !strings.Contains(logs, "metadata WAL damaged: set aside") || !strings.Contains(logs, "interior corruption at byte") ||
		!strings.Contains(logs, filepath.Base(wal)) {
		t.Fatalf("boot on a damaged WAL did not report the set-aside, the damage and the file; log:\n%s", logs)
	}
	_, err = primary.CreateStream(ctx, "after")
	must(t, err)
	c.waitStreams(2, 30*time.Second, "after")
}

// TestClusterPSKRotationThreeSteps rotates the replica bus's shared secret
// on a live 3-node cluster in upstream's three rolling steps (spec §7.2):
// (1) shared = old, previous = new on every node; (2) shared = new,
// previous = old; (3) shared = new alone. Each step restarts the nodes one
// at a time, and after each restart the cluster commits a metadata write
// through the primary and the primary's cluster metadata shows every peer
// Healthy (a bus connection exists only after the PSK handshake). Finally a node that still signs
// with the retired key cannot join: with it and one other down the
// remaining node has no quorum with it.
func TestClusterPSKRotationThreeSteps(t *testing.T) {
	const oldKey = "old-cluster-secret-of-32-bytes-or-more!"
	const newKey = "new-cluster-secret-of-32-bytes-or-more!"
	auth := func(shared, previous string) []string {
		env := []string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=" + shared}
		if previous != "" {
			env = append(env, "IGGY_CLUSTER_AUTH_PREVIOUS_SHARED_SECRET="+previous)
		}
		return env
	}
	c := startCluster(t, 3, auth(oldKey, "")...)
	writes := 0
	write := func(step string) {
		t.Helper()
		writes++
		leader, _ := c.writeOnAnyNode(fmt.Sprintf("%s-%d", step, writes), -1, 30*time.Second)
		c.waitAllHealthy(leader, 20*time.Second)
		t.Logf("%s: node %d committed write %d; it holds authenticated bus connections to both peers", step, leader, writes)
	}
	write("start")
	// Restart order: followers first, then node 0 (the primary), so each
	// restarted node must authenticate with the ones still on the old step.
	restartAll := func(step string, env []string) {
		for _, i := range []int{2, 1, 0} {
			c.nodes[i].stop(syscall.SIGTERM)
			c.nodes[i].env = append(append([]string(nil), c.env[i]...), env...)
			c.nodes[i].start()
			write(fmt.Sprintf("%s-node%d", step, i))
		}
	}
	restartAll("step1", auth(oldKey, newKey))
	restartAll("step2", auth(newKey, oldKey))
	restartAll("step3", auth(newKey, ""))
	// A node signing with the retired key alone is refused by the others.
	c.nodes[2].stop(syscall.SIGTERM)
	c.nodes[2].env = append(append([]string(nil), c.env[2]...), auth(oldKey, "")...)
	c.nodes[2].start()
	c.nodes[1].stop(syscall.SIGKILL)
	short, cancel := context.WithTimeout(testCtx(t), 6*time.Second)
	defer cancel()
	cl, err := client.Dial(short, c.addr(0), client.WithResponseTimeout(5*time.Second))
	must(t, err)
	defer cl.Close()
	if _, err := cl.LoginUser(short, "iggy", "iggy"); err == nil {
		if _, err := cl.CreateStream(short, "must-not-commit"); err == nil {
			t.Fatal("a write committed with the only other live node on the retired key")
		}
	}
	if !strings.Contains(c.nodes[2].logs.String(), "mac") && !strings.Contains(c.nodes[0].logs.String(), "mac") {
		t.Logf("node 0 log:\n%s", c.nodes[0].logs.String())
		t.Error("no handshake refusal logged for the retired key")
	}
}

// waitAllHealthy polls node via's cluster metadata until every node is
// Healthy (this node, and a live replica-bus connection to each peer).
func (c *testCluster) waitAllHealthy(via int, within time.Duration) {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(via))
	deadline := time.Now().Add(within)
	for {
		md, err := cl.GetClusterMetadata(testCtx(c.t))
		must(c.t, err)
		healthy := 0
		for _, n := range md.Nodes {
			if n.Status == wire.NodeHealthy {
				healthy++
			}
		}
		if healthy == len(md.Nodes) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d: %d of %d nodes Healthy after %s: %+v", via, healthy, len(md.Nodes), within, md.Nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupMembers reads a consumer group's member count through node i.
func (c *testCluster) groupMembers(i int, stream, topic, group string) int {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	g, err := cl.GetConsumerGroup(testCtx(c.t), named(stream), named(topic), named(group))
	must(c.t, err)
	return len(g.Members)
}

// TestClusterGhostMembershipsReleased: a consumer whose connection was on
// a node that dies (kill -9 of the metadata primary) leaves the group once
// the new primary has seen that node gone for two heartbeat timeouts; one
// whose node restarts is released by that node itself once it has caught
// up. Group partitions are never left assigned to dead members.
func TestClusterGhostMembershipsReleased(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	root := rootClient(t, c.addr(0))
	_, err := root.CreateStream(ctx, "gs")
	must(t, err)
	_, err = root.CreateTopic(ctx, named("gs"), "gt", 2)
	must(t, err)
	_, err = root.CreateConsumerGroup(ctx, named("gs"), named("gt"), "gg")
	must(t, err)
	must(t, root.JoinConsumerGroup(ctx, named("gs"), named("gt"), named("gg")))
	if n := c.groupMembers(0, "gs", "gt", "gg"); n != 1 {
		t.Fatalf("members after join: %d", n)
	}
	// The primary dies with the member's connection.
	c.nodes[0].stop(syscall.SIGKILL)
	leader, _ := c.writeOnAnyNode("after-kill", 0, failoverBound+10*time.Second)
	deadline := time.Now().Add(4*clusterHeartbeatTimeout + 10*time.Second)
	for c.groupMembers(leader, "gs", "gt", "gg") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the dead node's member still holds the group's partitions")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A member on the new primary; that node restarts (kill -9 and back
	// at once, before any peer notices it gone): it releases the member
	// itself once caught up.
	nl := rootClient(t, c.addr(leader))
	must(t, nl.JoinConsumerGroup(ctx, named("gs"), named("gt"), named("gg")))
	c.nodes[0].start()
	c.waitStreams(0, 20*time.Second, "after-kill")
	c.nodes[leader].stop(syscall.SIGKILL)
	c.nodes[leader].start()
	deadline = time.Now().Add(30 * time.Second)
	for {
		other := 0
		if leader == 0 {
			other = 1
		}
		if n := c.groupMembers(other, "gs", "gt", "gg"); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted node's old member still holds the group's partitions")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
