package integration

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// alignPartitions is the topic size of the alignment test: small by
// default, LODESTREAM_ALIGN_PARTITIONS=1000 for the measurement in
// docs/cluster.md (make cluster-align).
func alignPartitions(t *testing.T) int {
	if v := os.Getenv("LODESTREAM_ALIGN_PARTITIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LODESTREAM_ALIGN_PARTITIONS=%q", v)
		}
		return n
	}
	return 24
}

var leadershipLine = regexp.MustCompile(`msg="partition leadership" primaries_here=(\d+) partitions=(\d+) metadata_primary_here=(true|false)`)

// leadershipSince[i] is where node i's current run starts in its
// accumulated log (lines before are from before a restart).
var leadershipSince sync.Map

// leadership is node i's last logged partition leadership in its current run.
func (c *testCluster) leadership(i int) (led, served int, metadataPrimary bool) {
	logs := c.nodes[i].logs.String()
	if from, ok := leadershipSince.Load(c.nodes[i]); ok && from.(int) <= len(logs) {
		logs = logs[from.(int):]
	}
	all := leadershipLine.FindAllStringSubmatch(logs, -1)
	if len(all) == 0 {
		return 0, 0, false
	}
	last := all[len(all)-1]
	led, _ = strconv.Atoi(last[1])
	served, _ = strconv.Atoi(last[2])
	return led, served, last[3] == "true"
}

// waitAligned waits until some running node leads the metadata group and
// every one of the topic's partitions, and returns it and the time taken.
func (c *testCluster) waitAligned(partitions int, within time.Duration) (int, time.Duration) {
	c.t.Helper()
	return c.waitAlignedExcept(-1, partitions, within)
}

// waitAlignedExcept is waitAligned ignoring node except (a frozen one,
// whose last log lines still say it leads).
func (c *testCluster) waitAlignedExcept(except, partitions int, within time.Duration) (int, time.Duration) {
	c.t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		for i := range c.nodes {
			if i == except || !c.nodes[i].running() {
				continue
			}
			if led, _, meta := c.leadership(i); meta && led == partitions {
				return i, time.Since(start)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range c.nodes {
		led, served, meta := c.leadership(i)
		c.t.Logf("node %d: leads %d of %d partitions, metadata primary %v", i, led, served, meta)
	}
	c.t.Fatalf("partition leadership not on the metadata primary within %s", within)
	return -1, 0
}

// TestClusterPartitionLeadershipFollowsMetadata: partition primaries sit on
// the metadata primary's node: from the start, within a bound after kill -9
// of that node, and still after it returns; a leader-following producer
// keeps writing to every partition throughout (errors only while no
// primary exists).
func TestClusterPartitionLeadershipFollowsMetadata(t *testing.T) {
	partitions := alignPartitions(t)
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := rootClient(t, c.addr(0))
	_, err := leader.CreateStream(ctx, "s")
	must(t, err)
	created := time.Now()
	_, err = leader.CreateTopic(ctx, id(0), "t", uint32(partitions))
	must(t, err)
	t.Logf("created %d partitions in %s", partitions, time.Since(created).Round(time.Millisecond))
	first, took := c.waitAligned(partitions, 60*time.Second)
	t.Logf("aligned on node %d %s after the create", first, took.Round(time.Millisecond))

	var sent, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seeds := []string{c.addr(0), c.addr(1), c.addr(2)}
		p, err := client.DialCluster(context.Background(), seeds, client.WithCredentials("iggy", "iggy"),
			client.WithResponseTimeout(5*time.Second))
		if err != nil {
			t.Errorf("producer: %v", err)
			return
		}
		defer p.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
			_, err := p.SendMessages(sctx, id(0), id(0), partitionID(uint32(i%partitions)), makeMessages(fmt.Sprintf("m%d", i), 0, 1))
			cancel()
			if err != nil {
				failed.Add(1)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			sent.Add(1)
		}
	}()

	time.Sleep(time.Second)
	c.nodes[first].stop(syscall.SIGKILL)
	next, took := c.waitAligned(partitions, 60*time.Second)
	t.Logf("after kill -9 of node %d: all %d partition primaries on the metadata primary, node %d, %s later (heartbeat_timeout %s)",
		first, partitions, next, took.Round(time.Millisecond), clusterHeartbeatTimeout)
	leadershipSince.Store(c.nodes[first], len(c.nodes[first].logs.String()))
	c.nodes[first].start()
	returned := time.Now()
	waitFor(t, "the returned node to serve every partition again", 60*time.Second, func() bool {
		_, served, _ := c.leadership(first)
		return served == partitions
	})
	again, took := c.waitAligned(partitions, 60*time.Second)
	t.Logf("after node %d returned: it serves all %d partitions %s later; leadership on node %d",
		first, partitions, time.Since(returned).Round(time.Millisecond), again)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("producer: %d sends acknowledged, %d failed (while no primary existed)", sent.Load(), failed.Load())
	if sent.Load() == 0 {
		t.Fatal("the leader-following producer never got a write through")
	}
	_ = took
	_ = wire.OK
}

// TestClusterRestingPartitionsFailOver: idle partition groups rest (no
// ticks, no heartbeats); after a write every follower still holds it (the
// primary broadcast its commit before resting); kill -9 of the node leading
// them wakes them through the metadata group's view change and every
// partition gets a primary on the new metadata primary within 2 ×
// heartbeat_timeout, holding every acknowledged message.
func TestClusterRestingPartitionsFailOver(t *testing.T) {
	const partitions = 50
	c, leader := clusterWithTopic(t, 3, partitions)
	for p := uint32(0); p < partitions; p++ {
		sendOK(t, leader, id(0), id(0), partitionID(p), makeMessages(fmt.Sprintf("p%d", p), 0, 2))
	}
	time.Sleep(3 * time.Second) // well past the rest threshold (3 × commit_broadcast_interval)
	for _, i := range []int{1, 2} {
		for p := uint32(0); p < partitions; p += 7 {
			c.waitPartitionCount(i, p, 2, 2*time.Second)
		}
	}
	first, _ := c.waitAligned(partitions, 10*time.Second)
	c.nodes[first].stop(syscall.SIGKILL)
	next, took := c.waitAligned(partitions, 60*time.Second)
	t.Logf("%d resting partitions: every primary on node %d %s after kill -9 of node %d (heartbeat_timeout %s)",
		partitions, next, took.Round(time.Millisecond), first, clusterHeartbeatTimeout)
	if took > 2*clusterHeartbeatTimeout+time.Second {
		t.Errorf("resting partitions moved in %s, over 2 × heartbeat_timeout", took)
	}
	nl := rootClient(t, c.addr(next))
	for p := uint32(0); p < partitions; p++ {
		conf := sendOK(t, nl, id(0), id(0), partitionID(p), makeMessages(fmt.Sprintf("after-p%d", p), 0, 1))
		// Above both acknowledged offsets; a failover may skip at most one
		// reservation chunk, 64 offsets for a partition this quiet
		// (docs/cluster.md "Offset reservations").
		if conf.BaseOffset < 2 || conf.BaseOffset > 2+64 {
			t.Fatalf("partition %d after the failover: offset %d, want 2 to 66", p, conf.BaseOffset)
		}
	}
}
