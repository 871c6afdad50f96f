package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// TestClusterNodeRejoinsAmnesiacAfterPowerLoss: one node of three loses
// power under `durability = replicated` (its unsynced prepare WAL writes
// are gone) and reboots: its partition group rejoins amnesiac (the boot
// record saw an unclean stop and a new boot id), catches up to every
// acknowledged message, and the cluster keeps taking writes. A clean stop
// then syncs everything and records it, so the reboot after it marks
// nothing.
func TestClusterNodeRejoinsAmnesiacAfterPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a 3-node cluster and reboots one node twice")
	}
	const victim = 2
	mc := startMemCluster(t, 3, 7_300)
	mc.send("before", 100)
	// The victim must have run the group (its superblock written) for the
	// reboot to find something to be amnesiac about: a replica cut off
	// before its group ever spoke rejoins Recovering instead.
	mc.holdsEveryAcked(victim)

	// Power loss of one node: its unsynced writes are lost, the machine reboots.
	mc.mems[victim].PowerOffAfter(0)
	mc.stop(victim, false)
	mc.mems[victim].Crash()
	writeBootID(t, mc.mems[victim], 2)
	mc.start(victim)
	waitFor(t, "the rebooted node's partition group to rejoin amnesiac", 30*time.Second, func() bool {
		return strings.Contains(mc.logs[victim].String(), "partition group rejoins amnesiac")
	})
	mc.send("after-power-loss", 50)
	mc.holdsEveryAcked(victim)

	// A clean stop syncs and records it: the reboot after it marks nothing.
	mc.stop(victim, true)
	b, err := mc.mems[victim].ReadFile(filepath.Join(mc.dirs[victim], bootRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := decodeBootRecord(b); err != nil || !r.clean {
		t.Fatalf("boot record after a clean stop: %+v, %v", r, err)
	}
	mc.mems[victim].Crash() // the machine then loses power: a clean stop left nothing unsynced
	writeBootID(t, mc.mems[victim], 3)
	mc.start(victim)
	mc.send("after-clean-stop", 20)
	mc.holdsEveryAcked(victim)
	if l := mc.logs[victim].String(); strings.Contains(l, "rejoins amnesiac") || !strings.Contains(l, "the last stop was clean") {
		t.Fatalf("after a clean stop the node rejoined amnesiac, or did not say why not:\n%s", l)
	}
	t.Logf("%d messages acknowledged; node %d rejoined amnesiac after its power loss, not after its clean stop", len(mc.acked), victim)
}

// memCluster is n in-process nodes, each on its own simulated disk, with
// one stream "s" and one `replicated` topic "t" of one partition, and a
// leader-aware client that records what was acknowledged.
type memCluster struct {
	t      *testing.T
	n      int
	roster loopbackRoster
	mems   []*vfs.Mem
	dirs   []string
	logs   []*lockedLog
	addrs  []string
	stops  []func() error
	ctx    context.Context
	c      *client.Client
	acked  []ackedSend
}

func startMemCluster(t *testing.T, n int, seed uint64, topicOptions ...wire.Option) *memCluster {
	t.Helper()
	mc := &memCluster{t: t, n: n, roster: pickLoopbackPorts(t, 3*n), mems: make([]*vfs.Mem, n), dirs: make([]string, n),
		logs: make([]*lockedLog, n), addrs: make([]string, n), stops: make([]func() error, n)}
	for i := range n {
		mc.mems[i] = vfs.NewMem(seed + uint64(i))
		writeBootID(t, mc.mems[i], 1)
		mc.dirs[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	for i := range n { // a node waits for a quorum before it serves: boot them together
		wg.Add(1)
		go func() {
			defer wg.Done()
			mc.start(i)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		if t.Failed() { // registered before the stops: runs after them, with the whole logs
			for i, l := range mc.logs {
				t.Logf("node %d log, last %d lines:\n%s", i, failureLogLines, lastLines(l.String(), failureLogLines))
			}
		}
	})
	t.Cleanup(func() {
		for i, stop := range mc.stops {
			if stop != nil {
				if err := stop(); err != nil {
					t.Logf("node %d: Run: %v", i, err)
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	mc.ctx = ctx
	mc.c = clusterClient(ctx, t, mc.addrs)
	t.Cleanup(func() { mc.c.Close() })
	if _, err := mc.c.CreateStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.c.CreateTopic(ctx, wire.NamedID("s"), "t", 1, topicOptions...); err != nil { // durability = replicated
		t.Fatal(err)
	}
	return mc
}

// start boots node i on its disk, logging into mc.logs[i] (and stderr
// with LODESTREAM_TEST_LOGS set).
func (mc *memCluster) start(i int) {
	mc.logs[i] = &lockedLog{}
	var out io.Writer = mc.logs[i]
	if os.Getenv("LODESTREAM_TEST_LOGS") != "" {
		out = io.MultiWriter(out, os.Stderr)
	}
	mc.addrs[i], mc.stops[i] = runNodeLogged(mc.t, clusterNodeConfig(mc.t, mc.dirs[i], mc.n, mc.roster), uint8(i), mc.mems[i],
		slog.New(slog.NewTextHandler(out, nil)))
}

// stop stops node i; clean: Run must return nil.
func (mc *memCluster) stop(i int, clean bool) {
	mc.t.Helper()
	if mc.stops[i] == nil {
		mc.t.Fatalf("stop node %d: it is not running (its boot failed, see above)", i)
	}
	err := mc.stops[i]()
	mc.stops[i] = nil
	if err != nil && clean {
		mc.t.Fatalf("clean stop of node %d: %v", i, err)
	} else if err != nil {
		mc.t.Logf("node %d stopped: %v", i, err)
	}
}

// send sends count one-message batches to the partition and records each
// acknowledged offset.
func (mc *memCluster) send(label string, count int) {
	mc.t.Helper()
	mc.sendWith(label, count, func(p string) string { return p })
}

// sendWith is send with each payload shaped by shape.
func (mc *memCluster) sendWith(label string, count int, shape func(string) string) {
	mc.t.Helper()
	for i := range count {
		payload := shape(fmt.Sprintf("%s-%04d", label, i))
		conf, err := mc.c.SendMessages(mc.ctx, wire.NamedID("s"), wire.NamedID("t"),
			wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
			[]wire.BatchMessageInput{{Payload: []byte(payload)}})
		if err != nil {
			mc.t.Fatalf("send %s: %v", payload, err)
		}
		mc.acked = append(mc.acked, ackedSend{offset: conf[0].BaseOffset, payload: payload})
	}
}

// holdsEveryAcked waits until node i serves every acknowledged message at
// its offset.
func (mc *memCluster) holdsEveryAcked(i int) {
	mc.t.Helper()
	direct := loggedIn(mc.ctx, mc.t, mc.addrs[i])
	defer direct.Close()
	lastErr := ""
	waitFor(mc.t, fmt.Sprintf("node %d to hold every acknowledged message", i), 30*time.Second, func() bool {
		// A follower that has not applied the CreateTopic yet answers
		// TopicIdNotFound: that is lag, not loss, so poll again.
		stored, err := tryPollAll(mc.ctx, direct)
		if err != nil {
			if err.Error() != lastErr {
				mc.t.Logf("node %d not serving yet: %v", i, err)
				lastErr = err.Error()
			}
			return false
		}
		for _, a := range mc.acked {
			if stored[a.offset] != a.payload {
				return false
			}
		}
		return true
	})
}

// partitionDir is node i's directory of the topic's partition 0.
func (mc *memCluster) partitionDir(i int) string {
	mc.t.Helper()
	dirs, err := partitionDirsUnder(mc.mems[i], filepath.Join(mc.dirs[i], "streams"))
	if err != nil || len(dirs) != 1 {
		mc.t.Fatalf("node %d partition directories: %v, %v", i, dirs, err)
	}
	return dirs[0]
}

// lockedLog is a log sink safe for concurrent writers and readers.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor polls cond every 100 ms until it holds or within ends (fatal).
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// failureLogLines is how much of each node's log a failed memCluster test
// prints: enough to see its view changes and what it refused.
const failureLogLines = 150

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
