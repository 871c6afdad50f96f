package integration

import (
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
			cl, err := client.Dial(testCtx(c.t), c.addr(i), client.WithResponseTimeout(2*time.Second))
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
