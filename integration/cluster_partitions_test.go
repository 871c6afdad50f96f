package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// clusterWithTopic starts a cluster of n nodes and creates stream "s" with
// topic "t" of the given partitions through node 0 (the first primary),
// returning the cluster and node 0's signed-in client.
func clusterWithTopic(t *testing.T, n int, partitions uint32, options ...wire.Option) (*testCluster, *client.Client) {
	t.Helper()
	c := startCluster(t, n)
	leader := rootClient(t, c.addr(0))
	_, err := leader.CreateStream(testCtx(t), "s")
	must(t, err)
	_, err = leader.CreateTopic(testCtx(t), id(0), "t", partitions, options...)
	must(t, err)
	return c, leader
}

// partitionDirOf is node i's directory of partition p of stream 0 topic 0.
func (c *testCluster) partitionDirOf(i int, p uint32) string {
	return filepath.Join(c.nodes[i].dataDir, "streams", "0", "topics", "0", "partitions", fmt.Sprint(p))
}

// segmentFiles reads every segment file of a partition on node i, by name.
func (c *testCluster) segmentFiles(i int, p uint32) map[string][]byte {
	c.t.Helper()
	paths, err := filepath.Glob(filepath.Join(c.partitionDirOf(i, p), "*.log"))
	must(c.t, err)
	out := map[string][]byte{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		must(c.t, err)
		out[filepath.Base(path)] = b
	}
	return out
}

// pollAll reads every message of partition p from the node cl is connected
// to (its local log); an error (the node has not applied the topic yet)
// ends the walk.
func pollAll(t *testing.T, cl *client.Client, p uint32) (map[uint64]string, error) {
	t.Helper()
	out := map[uint64]string{}
	for next := uint64(0); ; {
		r, err := cl.PollMessages(testCtx(t), wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
			Partition: wire.SomePartition(p), Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: next}, Count: 1000})
		if err != nil {
			return out, err
		}
		if r.MessagesCount == 0 {
			return out, nil
		}
		for _, m := range r.Messages {
			if _, dup := out[m.Offset]; dup {
				t.Fatalf("partition %d: offset %d polled twice", p, m.Offset)
			}
			out[m.Offset] = string(m.Payload)
			next = m.Offset + 1
		}
	}
}

// waitPartitionCount waits until node i serves want messages in partition p.
func (c *testCluster) waitPartitionCount(i int, p uint32, want int, within time.Duration) map[uint64]string {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	defer cl.Close()
	deadline := time.Now().Add(within)
	for {
		got, err := pollAll(c.t, cl, p)
		if err == nil && len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d partition %d: %d messages after %s, want %d (last error %v)", i, p, len(got), within, want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPartitionHolds polls node i's partition p until it holds every
// offset of want with its payload; past within it calls missing with the
// first offset that differs.
func (c *testCluster) waitPartitionHolds(i int, p uint32, want map[uint64]string, within time.Duration, missing func(off uint64, got, want string)) {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	defer cl.Close()
	deadline := time.Now().Add(within)
	for {
		got, err := pollAll(c.t, cl, p)
		first, differs := uint64(0), false
		if err == nil {
			for off, pl := range want {
				if got[off] != pl && (!differs || off < first) {
					first, differs = off, true
				}
			}
		}
		if err == nil && !differs {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				c.t.Fatalf("node %d partition %d: poll after %s: %v", i, p, within, err)
			}
			missing(first, got[first], want[first])
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendAnywhere sends one batch to partition p through whichever node
// accepts it (the partition's primary), trying every running node except
// skip until within passes.
func (c *testCluster) sendAnywhere(p uint32, msgs []wire.BatchMessageInput, skip int, within time.Duration) (int, wire.SendConfirmation) {
	c.t.Helper()
	return c.sendAnywhereIn(0, p, msgs, skip, within, time.Second, 2*time.Second)
}

// sendAnywhereIn is sendAnywhere for partition p of topic (stream 0),
// with the client's response timeout and each send's deadline.
func (c *testCluster) sendAnywhereIn(topic, p uint32, msgs []wire.BatchMessageInput, skip int, within, response, send time.Duration) (int, wire.SendConfirmation) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		for i := range c.nodes {
			if i == skip || !c.nodes[i].running() {
				continue
			}
			cl, err := client.Dial(testCtx(c.t), c.addr(i), client.WithResponseTimeout(response))
			if err != nil {
				last = err
				continue
			}
			if _, err := cl.LoginUser(testCtx(c.t), "iggy", "iggy"); err != nil {
				last = err
				cl.Close()
				continue
			}
			ctx, cancel := context.WithTimeout(testCtx(c.t), send)
			conf, err := cl.SendMessages(ctx, id(0), id(topic), partitionID(p), msgs)
			cancel()
			cl.Close()
			if err == nil {
				return i, conf[0]
			}
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no node accepted a send to topic %d partition %d within %s: %v", topic, p, within, last)
	return -1, wire.SendConfirmation{}
}

// TestClusterPartitionsReplicate: a topic's partitions are replicated
// groups on all three nodes. Sends go to the partition's primary (the
// creating node) and are acknowledged once a quorum holds them; a backup
// answers 58; every node serves the same messages from its own log, and
// the segment files are byte-identical (stamped once, on the primary).
// After kill -9 of the primary, the survivors elect new primaries that hold
// every acknowledged message and hand out no offset twice.
func TestClusterPartitionsReplicate(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 3)
	ctx := testCtx(t)

	acked := map[uint32]map[uint64]string{0: {}, 1: {}, 2: {}}
	for round := 0; round < 20; round++ {
		for p := uint32(0); p < 3; p++ {
			msgs := makeMessages(fmt.Sprintf("p%d-r%d", p, round), 0, 5)
			conf := sendOK(t, leader, id(0), id(0), partitionID(p), msgs)
			for i, m := range msgs {
				acked[p][conf.BaseOffset+uint64(i)] = string(m.Payload)
			}
		}
	}
	follower := rootClient(t, c.addr(1))
	_, err := follower.SendMessages(ctx, id(0), id(0), partitionID(0), makeMessages("on-a-backup", 0, 1))
	expectCode(t, err, wire.ErrTransientNotAccepted)

	for p := uint32(0); p < 3; p++ {
		for i := range c.nodes {
			got := c.waitPartitionCount(i, p, len(acked[p]), 10*time.Second)
			for off, want := range acked[p] {
				if got[off] != want {
					t.Fatalf("node %d partition %d offset %d: %q, want %q", i, p, off, got[off], want)
				}
			}
		}
	}
	for p := uint32(0); p < 3; p++ {
		want := c.segmentFiles(0, p)
		for i := 1; i < 3; i++ {
			got := c.segmentFiles(i, p)
			if len(got) != len(want) {
				t.Fatalf("partition %d: node %d has segments %v, node 0 %v", p, i, keysOf(got), keysOf(want))
			}
			for name, b := range want {
				if !bytes.Equal(got[name], b) {
					t.Fatalf("partition %d segment %s differs between node 0 and node %d (%d vs %d bytes)", p, name, i, len(b), len(got[name]))
				}
			}
		}
	}

	c.nodes[0].stop(syscall.SIGKILL)
	for p := uint32(0); p < 3; p++ {
		msgs := makeMessages(fmt.Sprintf("after-failover-p%d", p), 0, 1)
		_, conf := c.sendAnywhere(p, msgs, 0, failoverBound+10*time.Second)
		// Above every acknowledged offset; a failover may skip at most one
		// offset reservation chunk, 2^20 offsets (docs/cluster.md "Offset
		// reservations").
		if next := uint64(len(acked[p])); conf.BaseOffset < next || conf.BaseOffset > next+1<<20 {
			t.Fatalf("partition %d: the new primary handed out offset %d, want %d or at most one reservation chunk above it", p, conf.BaseOffset, next)
		}
		acked[p][conf.BaseOffset] = string(msgs[0].Payload)
	}
	for p := uint32(0); p < 3; p++ {
		for _, i := range []int{1, 2} {
			got := c.waitPartitionCount(i, p, len(acked[p]), 10*time.Second)
			for off, want := range acked[p] {
				if got[off] != want {
					t.Fatalf("after failover: node %d partition %d offset %d: %q, want %q", i, p, off, got[off], want)
				}
			}
		}
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestClusterPartitionBackupCatchesUpByTransfer: a backup killed while the
// primary writes far past its journal restarts Recovering and catches up by
// state transfer (records fetched from a peer); a consumer offset stored
// while it was down reaches it; its segment files end byte-identical; then
// it forms the quorum with the primary while the third node is down. A
// wiped node rejoins the same way.
func TestClusterPartitionBackupCatchesUpByTransfer(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1)
	ctx := testCtx(t)
	sent := 0
	send := func(tag string, batches int) {
		for i := 0; i < batches; i++ {
			conf := sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages(tag, i, 4))
			if conf.BaseOffset != uint64(sent) {
				t.Fatalf("%s batch %d: base offset %d, want %d", tag, i, conf.BaseOffset, sent)
			}
			sent += 4
		}
	}
	send("before", 10)
	c.waitPartitionCount(2, 0, sent, 10*time.Second)

	c.nodes[2].stop(syscall.SIGKILL)
	send("while-down", 300) // far past the 32-slot partition journal
	consumer := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(7)}
	must(t, leader.StoreConsumerOffset(ctx, consumer, id(0), id(0), wire.SomePartition(0), 123))
	c.nodes[2].start()
	c.waitPartitionCount(2, 0, sent, 30*time.Second)
	waitConsumerOffsetOn(t, c.addr(2), consumer, 123)
	if !strings.Contains(c.nodes[2].logs.String(), "partition state transfer installed") {
		t.Errorf("node 2 caught up without a partition state transfer")
	}
	c.expectSameSegments(0, 0, 2)

	// The caught-up node forms the quorum with the primary.
	c.nodes[1].stop(syscall.SIGKILL)
	send("node-1-down", 5)
	c.nodes[1].start()
	c.waitPartitionCount(1, 0, sent, 30*time.Second)

	// Wiped: a clean slate rejoins by state transfer.
	c.nodes[1].stop(syscall.SIGTERM)
	must(t, os.RemoveAll(c.nodes[1].dataDir))
	c.nodes[1].start()
	c.waitPartitionCount(1, 0, sent, 30*time.Second)
	c.expectSameSegments(0, 0, 1)
	// It had acknowledged prepares before the wipe, so its groups must not
	// vote with empty logs: they rejoin Recovering, not as fresh groups.
	if !strings.Contains(c.nodes[1].logs.String(), "partition created before this boot has no superblock: rejoining Recovering") {
		t.Errorf("the wiped node's partition groups did not rejoin Recovering")
	}
	// Then the transferred node forms the quorum with the primary.
	c.nodes[2].stop(syscall.SIGKILL)
	send("node-2-down", 5)
	c.waitPartitionCount(1, 0, sent, 10*time.Second)
}

// expectSameSegments checks partition p's segment files of node other
// against node ref's, byte for byte.
func (c *testCluster) expectSameSegments(p uint32, ref, other int) {
	c.t.Helper()
	want, got := c.segmentFiles(ref, p), c.segmentFiles(other, p)
	if len(got) != len(want) {
		c.t.Fatalf("partition %d: node %d has segments %v, node %d %v", p, other, keysOf(got), ref, keysOf(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			c.t.Fatalf("partition %d segment %s differs between node %d and node %d (%d vs %d bytes)", p, name, ref, other, len(b), len(got[name]))
		}
	}
}

// waitConsumerOffsetOn waits until the node at addr reports the stored
// offset (served from its own log).
func waitConsumerOffsetOn(t *testing.T, addr string, consumer wire.Consumer, want uint64) {
	t.Helper()
	cl := rootClient(t, addr)
	defer cl.Close()
	var last *wire.ConsumerOffset
	for i := 0; i < 100; i++ {
		off, err := cl.GetConsumerOffset(testCtx(t), consumer, id(0), id(0), wire.SomePartition(0))
		must(t, err)
		if off != nil && off.StoredOffset == want {
			return
		}
		last = off
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("stored offset on %s: %+v, want %d", addr, last, want)
}

// TestClusterDestructiveOpsCutEveryReplicaAlike: retention (expiry decided
// by the primary's clock), DeleteSegments and a purge are ordered inside
// each partition's log, so every replica cuts at the same offset and keeps
// byte-identical files; writes continue at the right offsets afterwards.
func TestClusterDestructiveOpsCutEveryReplicaAlike(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := rootClient(t, c.addr(0))
	_, err := leader.CreateStream(ctx, "s")
	must(t, err)
	mib := uint64(1 << 20)
	_, err = leader.CreateTopic(ctx, id(0), "expiring", 1, u64Option("segment_size", mib), u64Option("message_expiry", 2_000_000))
	must(t, err)
	_, err = leader.CreateTopic(ctx, id(0), "manual", 1, u64Option("segment_size", mib))
	must(t, err)
	// segmentsOn reads a node's segment files; nil when one vanished while
	// reading (a replica still cutting: the caller looks again).
	segmentsOn := func(node int, topic uint32) map[string][]byte {
		paths, err := filepath.Glob(filepath.Join(c.nodes[node].dataDir, "streams", "0", "topics", fmt.Sprint(topic), "partitions", "0", "*.log"))
		must(t, err)
		out := map[string][]byte{}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			out[filepath.Base(p)] = b
		}
		return out
	}
	sameOnAll := func(topic uint32) {
		t.Helper()
		waitFor(t, fmt.Sprintf("topic %d's segment files to agree on every node", topic), 15*time.Second, func() bool {
			ref := segmentsOn(0, topic)
			if ref == nil {
				return false
			}
			for i := 1; i < 3; i++ {
				got := segmentsOn(i, topic)
				if got == nil || len(got) != len(ref) {
					return false
				}
				for name, b := range ref {
					if !bytes.Equal(got[name], b) {
						return false
					}
				}
			}
			return true
		})
	}

	fillPartition(t, leader, id(0), id(0), 0, 25) // ≈2.5 MB: two sealed segments
	waitFor(t, "expired segments to go on the primary", 15*time.Second, func() bool {
		return partitionStats(t, leader, id(0), id(0), 0).SegmentsCount == 1
	})
	sameOnAll(0)

	fillPartition(t, leader, id(0), id(1), 0, 25)
	before := partitionStats(t, leader, id(0), id(1), 0)
	must(t, leader.DeleteSegments(ctx, id(0), id(1), 0, 1))
	if after := partitionStats(t, leader, id(0), id(1), 0); after.SegmentsCount != before.SegmentsCount-1 {
		t.Fatalf("DeleteSegments answered before the primary cut: before %+v after %+v", before, after)
	}
	sameOnAll(1)

	must(t, leader.PurgeTopic(ctx, id(0), id(1)))
	if st := partitionStats(t, leader, id(0), id(1), 0); st.MessagesCount != 0 {
		t.Fatalf("PurgeTopic answered before the primary purged: %+v", st)
	}
	if conf := sendOK(t, leader, id(0), id(1), partitionID(0), makeMessages("after-purge", 0, 3)); conf.BaseOffset != 0 {
		t.Fatalf("first offset after a purge: %d, want 0", conf.BaseOffset)
	}
	c.waitPartitionCountIn(2, 1, 0, 3, 10*time.Second)
	sameOnAll(1)
}

// waitPartitionCountIn is waitPartitionCount for topic topic of stream 0.
func (c *testCluster) waitPartitionCountIn(i int, topic, p uint32, want int, within time.Duration) {
	c.t.Helper()
	cl := rootClient(c.t, c.addr(i))
	defer cl.Close()
	waitFor(c.t, fmt.Sprintf("node %d topic %d partition %d to hold %d messages", i, topic, p, want), within, func() bool {
		td, err := cl.GetTopic(testCtx(c.t), id(0), id(topic))
		return err == nil && len(td.Partitions) > int(p) && td.Partitions[p].MessagesCount == uint64(want)
	})
}

// TestClusterRecreatedTopicServesOnlyTheNewIncarnation: a topic deleted and
// created again under the same ids is a new partition group; its replicas
// hold only what was written after.
func TestClusterRecreatedTopicServesOnlyTheNewIncarnation(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1)
	ctx := testCtx(t)
	for i := 0; i < 10; i++ {
		sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("old", i, 5))
	}
	must(t, leader.DeleteTopic(ctx, id(0), id(0)))
	_, err := leader.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	conf := sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("new", 0, 2))
	if conf.BaseOffset != 0 {
		t.Fatalf("the new incarnation's first offset %d, want 0", conf.BaseOffset)
	}
	for i := range c.nodes {
		got := c.waitPartitionCount(i, 0, 2, 10*time.Second)
		if len(got) != 2 || !strings.HasPrefix(got[0], "new") {
			t.Fatalf("node %d serves %v after the topic was re-created", i, got)
		}
	}
}

// TestClusterTwoNodesPartitionWritesNeedBoth: with two replicas a
// partition write needs both; while one is down it fails with a retryable
// error, and works again once it is back.
func TestClusterTwoNodesPartitionWritesNeedBoth(t *testing.T) {
	c, leader := clusterWithTopic(t, 2, 1)
	ctx := testCtx(t)
	sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("both-up", 0, 1))
	// Signed in before: a login is a metadata write, which needs both too.
	short, err := client.Dial(ctx, c.addr(0), client.WithResponseTimeout(15*time.Second))
	must(t, err)
	defer short.Close()
	_, err = short.LoginUser(ctx, "iggy", "iggy")
	must(t, err)
	c.nodes[1].stop(syscall.SIGKILL)
	// Raw: the client would replay the transient answer; the server's own
	// answer is 57 (outcome unknown, retry) once its 10 s wait ends.
	body, err := wire.AppendSendMessages(nil, id(0), id(0), partitionID(0), makeMessages("one-down", 0, 1))
	must(t, err)
	status, _, _, err := short.Raw(ctx, wire.OpSendMessages, wire.CodeSendMessages, body)
	must(t, err)
	if status != wire.ErrTransientNotCommitted && status != wire.ErrTransientNotAccepted {
		t.Fatalf("a partition write with one of two replicas down: status %s, want a retryable error", status)
	}
	c.nodes[1].start()
	_, conf := c.sendAnywhere(0, makeMessages("back", 0, 1), -1, failoverBound+10*time.Second)
	if conf.BaseOffset == 0 {
		t.Fatalf("offset %d after the node returned: the first write's offset was handed out again", conf.BaseOffset)
	}
}

// TestClusterPrimaryKilledMidProduce: producers write to every partition
// through the primary while it is killed (kill -9); the survivors elect new
// primaries; every acknowledged message is readable on both survivors at
// its acknowledged offset, no offset is handed out twice; the killed node
// restarts, catches up and ends with byte-identical segment files.
func TestClusterPrimaryKilledMidProduce(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := rootClient(t, c.addr(0))
	_, err := leader.CreateStream(ctx, "s")
	must(t, err)
	const partitions = 3
	_, err = leader.CreateTopic(ctx, id(0), "t", partitions)
	must(t, err)
	acks := produceUntilKilled(t, c.nodes[0], id(0), partitions, 6, 300)
	t.Logf("%d batches acknowledged before and while node 0 was killed", len(acks))

	// New primaries: one send per partition through whichever survivor accepts.
	for p := uint32(0); p < partitions; p++ {
		msgs := makeMessages(fmt.Sprintf("after-kill-p%d", p), 0, 1)
		_, conf := c.sendAnywhere(p, msgs, 0, failoverBound+10*time.Second)
		acks = append(acks, ackedBatch{partition: p, baseOffset: conf.BaseOffset, payloads: []string{string(msgs[0].Payload)}})
	}
	want := map[uint32]map[uint64]string{}
	for _, a := range acks {
		if want[a.partition] == nil {
			want[a.partition] = map[uint64]string{}
		}
		for i, pl := range a.payloads {
			off := a.baseOffset + uint64(i)
			if prev, dup := want[a.partition][off]; dup && prev != pl {
				t.Fatalf("partition %d offset %d acknowledged twice: %q and %q", a.partition, off, prev, pl)
			}
			want[a.partition][off] = pl
		}
	}
	for p := uint32(0); p < partitions; p++ {
		for _, i := range []int{1, 2} {
			got := c.waitPartitionCount(i, p, len(want[p]), 15*time.Second)
			for off, pl := range want[p] {
				if got[off] != pl {
					t.Fatalf("node %d partition %d offset %d: %q, want the acknowledged %q", i, p, off, got[off], pl)
				}
			}
		}
	}
	c.nodes[0].start()
	for p := uint32(0); p < partitions; p++ {
		c.waitPartitionCount(0, p, len(want[p]), 30*time.Second)
		waitFor(t, fmt.Sprintf("partition %d's files on the restarted node to match", p), 15*time.Second, func() bool {
			a, b := c.segmentFiles(1, p), c.segmentFiles(0, p)
			if len(a) != len(b) {
				return false
			}
			for name, x := range a {
				if !bytes.Equal(x, b[name]) {
					return false
				}
			}
			return true
		})
	}
}

// TestClusterCorruptSegmentRefilledFromPeers: a byte flipped inside a sealed
// segment of a stopped replica; at its restart the replica serves around
// the damaged batch and repairs it with a peer's copy when the scrubber
// meets it, while the others keep serving; its segment files end
// byte-identical.
func TestClusterCorruptSegmentRefilledFromPeers(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1, u64Option("segment_size", 1<<20))
	fillPartition(t, leader, id(0), id(0), 0, 30) // ≈3 MB: sealed segments
	total := int(partitionStats(t, leader, id(0), id(0), 0).MessagesCount)
	c.waitPartitionCount(2, 0, total, 15*time.Second)
	c.nodes[2].stop(syscall.SIGTERM)
	first := filepath.Join(c.partitionDirOf(2, 0), "00000000000000000000.log")
	b, err := os.ReadFile(first)
	must(t, err)
	b[len(b)/2] ^= 0xFF
	must(t, os.WriteFile(first, b, 0o644))

	// The others keep serving. (Not fillPartition again: the same batches
	// under the same request id would be recognised as retries.)
	for i := 0; i < 3; i++ {
		sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("while-down", i*10, 10))
	}
	total += 30
	c.nodes[2].start()
	c.waitPartitionCount(2, 0, total, 30*time.Second)
	waitFor(t, "node 2 to repair the damage", 30*time.Second, func() bool {
		return strings.Contains(c.nodes[2].logs.String(), "corrupt batch repaired from a peer")
	})
	c.expectSameSegments(0, 0, 2)
}

// TestClusterDamageFoundOnAReadIsRefilledWithoutARestart: a byte flipped
// inside a sealed segment of a running replica (written through the page
// cache, as bit rot found on a later read would be). The first poll or
// scrub that reaches it is refused (never served); the replica then
// repairs the batch with a peer's copy without a restart, serving every
// message again with its files byte-identical.
func TestClusterDamageFoundOnAReadIsRefilledWithoutARestart(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1, u64Option("segment_size", 1<<20))
	fillPartition(t, leader, id(0), id(0), 0, 30) // ≈3 MB: sealed segments
	total := int(partitionStats(t, leader, id(0), id(0), 0).MessagesCount)
	c.waitPartitionCount(2, 0, total, 15*time.Second)
	first := filepath.Join(c.partitionDirOf(2, 0), "00000000000000000000.log")
	f, err := os.OpenFile(first, os.O_RDWR, 0)
	must(t, err)
	st, err := f.Stat()
	must(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, st.Size()/2)
	must(t, err)
	b[0] ^= 0xFF
	_, err = f.WriteAt(b, st.Size()/2)
	must(t, err)
	must(t, f.Close())

	c.waitPartitionCount(2, 0, total, 30*time.Second)
	waitFor(t, "node 2 to repair the damage", 30*time.Second, func() bool {
		return strings.Contains(c.nodes[2].logs.String(), "corrupt batch repaired from a peer")
	})
	c.expectSameSegments(0, 0, 2)
}

// TestClusterRotOnThePrimaryAndABackupIsRepairedInPlace: bytes flipped in
// sealed segments of two of three running replicas at once, the
// partition's primary among them (whole-node simulator finding 24: two
// replicas that reopened to refill stalled the group). Each repairs the
// batch with a peer's copy in place: every message is served again on
// both, their files end byte-identical, and the partition keeps taking
// writes throughout.
func TestClusterRotOnThePrimaryAndABackupIsRepairedInPlace(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1, u64Option("segment_size", 1<<20))
	fillPartition(t, leader, id(0), id(0), 0, 30) // ≈3 MB: sealed segments
	total := int(partitionStats(t, leader, id(0), id(0), 0).MessagesCount)
	for _, i := range []int{1, 2} {
		c.waitPartitionCount(i, 0, total, 15*time.Second)
	}
	for i, frac := range map[int]int64{0: 3, 1: 2} { // different batches on each
		first := filepath.Join(c.partitionDirOf(i, 0), "00000000000000000000.log")
		f, err := os.OpenFile(first, os.O_RDWR, 0)
		must(t, err)
		st, err := f.Stat()
		must(t, err)
		b := make([]byte, 1)
		_, err = f.ReadAt(b, st.Size()/frac)
		must(t, err)
		b[0] ^= 0xFF
		_, err = f.WriteAt(b, st.Size()/frac)
		must(t, err)
		must(t, f.Close())
	}
	for _, i := range []int{0, 1} {
		c.waitPartitionCount(i, 0, total, 30*time.Second)
		waitFor(t, fmt.Sprintf("node %d to repair its damage", i), 30*time.Second, func() bool {
			return strings.Contains(c.nodes[i].logs.String(), "corrupt batch repaired from a peer")
		})
	}
	sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("after-rot", 0, 10))
	for _, i := range []int{0, 1, 2} {
		c.waitPartitionCount(i, 0, total+10, 15*time.Second)
	}
	c.expectSameSegments(0, 2, 0)
	c.expectSameSegments(0, 2, 1)
	for _, i := range []int{0, 1} {
		if logs := c.nodes[i].logs.String(); strings.Contains(logs, "setting the damage aside") || strings.Contains(logs, "reopening the partition") {
			t.Fatalf("node %d reopened the partition instead of repairing the batch in place", i)
		}
	}
}

// TestClusterFollowerPollNeverCommitsOffsets (seed 000): a poll with
// auto-commit served by a follower returns the messages but never moves
// the durable consumer offset; the same poll on the primary does.
func TestClusterFollowerPollNeverCommitsOffsets(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1)
	sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("m", 0, 5))
	c.waitPartitionCount(1, 0, 5, 10*time.Second)
	follower := rootClient(t, c.addr(1))
	next := wire.PollingStrategy{Kind: wire.PollNext}
	if r := pollAt(t, follower, firstConsumer, id(0), id(0), wire.SomePartition(0), next, 5, true); r.MessagesCount != 5 {
		t.Fatalf("follower poll: %d messages", r.MessagesCount)
	}
	time.Sleep(500 * time.Millisecond) // an auto-commit would have committed by now
	for _, cl := range []*client.Client{leader, follower} {
		off, err := cl.GetConsumerOffset(testCtx(t), firstConsumer, id(0), id(0), wire.SomePartition(0))
		must(t, err)
		if off != nil {
			t.Fatalf("a follower's poll stored the consumer offset %+v", off)
		}
	}
	pollAt(t, leader, firstConsumer, id(0), id(0), wire.SomePartition(0), next, 5, true)
	waitConsumerOffsetOn(t, c.addr(1), firstConsumer, 4)
}

// TestClusterPurgeSurvivesATransferAndRestarts (whole-node simulator
// finding 27): a purge restarts the offsets at 0. A backup down while the
// topic is purged and written far past its journal catches up by state
// transfer to the purge's epoch; a backup killed right after another
// purge restarts and applies its ops again; both end with the primary's
// segment files, byte for byte, and the consumer offset stored after the
// purge.
func TestClusterPurgeSurvivesATransferAndRestarts(t *testing.T) {
	c, leader := clusterWithTopic(t, 3, 1)
	ctx := testCtx(t)
	send := func(tag string, batches int, first uint64) {
		t.Helper()
		for i := 0; i < batches; i++ {
			conf := sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages(tag, i, 4))
			if want := first + uint64(4*i); conf.BaseOffset != want {
				t.Fatalf("%s batch %d: base offset %d, want %d", tag, i, conf.BaseOffset, want)
			}
		}
	}
	consumer := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(7)}
	send("before", 10, 0)
	must(t, leader.StoreConsumerOffset(ctx, consumer, id(0), id(0), wire.SomePartition(0), 30))
	c.waitPartitionCount(2, 0, 40, 10*time.Second)

	c.nodes[2].stop(syscall.SIGKILL)
	must(t, leader.PurgeTopic(ctx, id(0), id(0)))
	send("after", 300, 0) // far past the 32-slot partition journal
	must(t, leader.StoreConsumerOffset(ctx, consumer, id(0), id(0), wire.SomePartition(0), 5))
	c.nodes[2].start()
	got := c.waitPartitionCount(2, 0, 1200, 30*time.Second)
	if !strings.HasPrefix(got[0], "after") {
		t.Fatalf("node 2 serves %q at offset 0 after the purge, want a message written after it", got[0])
	}
	waitConsumerOffsetOn(t, c.addr(2), consumer, 5)
	c.expectSameSegments(0, 0, 2)

	must(t, leader.PurgeTopic(ctx, id(0), id(0)))
	send("second", 3, 0)
	c.waitPartitionCount(1, 0, 12, 10*time.Second)
	c.nodes[1].stop(syscall.SIGKILL)
	c.nodes[1].start()
	send("third", 2, 12)
	got = c.waitPartitionCount(1, 0, 20, 30*time.Second)
	if !strings.HasPrefix(got[0], "second") || !strings.HasPrefix(got[12], "third") {
		t.Fatalf("node 1 after its restart: offset 0 %q, offset 12 %q", got[0], got[12])
	}
	c.waitPartitionCount(2, 0, 20, 10*time.Second)
	c.expectSameSegments(0, 0, 1)
	c.expectSameSegments(0, 0, 2)
}
