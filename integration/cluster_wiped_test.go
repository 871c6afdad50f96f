package integration

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterWipedPrimaryRejoinsRecovering: node 0, primary of view 0 of
// the metadata group and of the partition, is killed, its storage wiped,
// and it restarts before the others notice (well within the heartbeat
// timeout). Its peers have history, so it must rejoin Recovering: led
// view 0 again with an empty log, its first prepare would contradict the
// op its backups committed (they stopped on it) and its empty log would
// vote as a nack. A write through it right away must neither break the
// others nor fork the log; it catches up and ends with the same data.
func TestClusterWipedPrimaryRejoinsRecovering(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1)
	for i := 0; i < 5; i++ {
		sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("before", 4*i, 4))
	}
	_, err := leader.CreateStream(testCtx(t), "s2")
	must(t, err)
	leader.Close()
	c.waitPartitionCount(1, 0, 20, 10*time.Second)

	c.nodes[0].stop(syscall.SIGKILL)
	must(t, os.RemoveAll(c.nodes[0].dataDir))
	c.nodes[0].start()

	// Tries node 0 first: it must refuse or forward, never lead.
	c.writeOnAnyNode("after-wipe", -1, 30*time.Second)
	for i := range c.nodes {
		if !c.nodes[i].running() {
			t.Fatalf("node %d stopped after the wiped primary returned", i)
		}
	}
	if !strings.Contains(c.nodes[0].logs.String(), "the cluster has history: this replica's storage was lost") {
		t.Errorf("the wiped node did not recognise that its storage was lost")
	}
	c.waitStreams(0, 30*time.Second, "s", "s2", "after-wipe")
	c.waitPartitionCount(0, 0, 20, 30*time.Second)
	c.expectSameSegments(0, 1, 0)
	// And it counts again: with node 1 down, nodes 0 and 2 form the quorum.
	c.nodes[1].stop(syscall.SIGKILL)
	c.writeOnAnyNode("node-1-down", 1, 30*time.Second)
}
