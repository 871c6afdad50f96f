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
	const n, victim = 3, 2
	ports := pickLoopbackPorts(t, 3*n)
	mems := make([]*vfs.Mem, n)
	dirs := make([]string, n)
	for i := range mems {
		mems[i] = vfs.NewMem(uint64(7_300 + i))
		writeBootID(t, mems[i], 1)
		dirs[i] = t.TempDir()
	}
	logs := make([]*lockedLog, n)
	start := func(i int) (string, func() error) {
		logs[i] = &lockedLog{}
		var out io.Writer = logs[i]
		if os.Getenv("LODESTREAM_TEST_LOGS") != "" {
			out = io.MultiWriter(out, os.Stderr)
		}
		return runNodeLogged(t, clusterNodeConfig(t, dirs[i], n, ports), uint8(i), mems[i], slog.New(slog.NewTextHandler(out, nil)))
	}
	addrs := make([]string, n)
	stops := make([]func() error, n)
	var wg sync.WaitGroup
	for i := range n { // a node waits for a quorum before it serves: boot them together
		wg.Add(1)
		go func() {
			defer wg.Done()
			addrs[i], stops[i] = start(i)
		}()
	}
	wg.Wait()
	defer func() {
		for i, stop := range stops {
			if stop != nil {
				if err := stop(); err != nil {
					t.Logf("node %d: Run: %v", i, err)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := clusterClient(ctx, t, addrs)
	defer c.Close()
	if _, err := c.CreateStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.NamedID("s"), "t", 1); err != nil { // durability = replicated
		t.Fatal(err)
	}
	var acked []ackedSend
	send := func(label string, count int) {
		t.Helper()
		for i := range count {
			payload := fmt.Sprintf("%s-%04d", label, i)
			conf, err := c.SendMessages(ctx, wire.NamedID("s"), wire.NamedID("t"),
				wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
				[]wire.BatchMessageInput{{Payload: []byte(payload)}})
			if err != nil {
				t.Fatalf("send %s: %v", payload, err)
			}
			acked = append(acked, ackedSend{offset: conf[0].BaseOffset, payload: payload})
		}
	}
	holdsEveryAcked := func(i int) {
		t.Helper()
		direct := loggedIn(ctx, t, addrs[i])
		waitFor(t, fmt.Sprintf("node %d to hold every acknowledged message", i), 30*time.Second, func() bool {
			stored := pollAll(ctx, t, direct)
			for _, a := range acked {
				if stored[a.offset] != a.payload {
					return false
				}
			}
			return true
		})
	}
	send("before", 100)
	// The victim must have run the group (its superblock written) for the
	// reboot to find something to be amnesiac about: a replica cut off
	// before its group ever spoke rejoins Recovering instead.
	holdsEveryAcked(victim)

	// Power loss of one node: its unsynced writes are lost, the machine reboots.
	mems[victim].PowerOffAfter(0)
	if err := stops[victim](); err != nil {
		t.Logf("node %d stopped by the power loss: %v", victim, err)
	}
	stops[victim] = nil
	mems[victim].Crash()
	writeBootID(t, mems[victim], 2)
	addrs[victim], stops[victim] = start(victim)
	waitFor(t, "the rebooted node's partition group to rejoin amnesiac", 30*time.Second, func() bool {
		return strings.Contains(logs[victim].String(), "partition group rejoins amnesiac")
	})
	send("after-power-loss", 50)
	holdsEveryAcked(victim)

	// A clean stop syncs and records it: the reboot after it marks nothing.
	if err := stops[victim](); err != nil {
		t.Fatalf("clean stop of node %d: %v", victim, err)
	}
	stops[victim] = nil
	b, err := mems[victim].ReadFile(filepath.Join(dirs[victim], bootRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := decodeBootRecord(b); err != nil || !r.clean {
		t.Fatalf("boot record after a clean stop: %+v, %v", r, err)
	}
	mems[victim].Crash() // the machine then loses power: a clean stop left nothing unsynced
	writeBootID(t, mems[victim], 3)
	addrs[victim], stops[victim] = start(victim)
	send("after-clean-stop", 20)
	holdsEveryAcked(victim)
	if l := logs[victim].String(); strings.Contains(l, "rejoins amnesiac") || !strings.Contains(l, "the last stop was clean") {
		t.Fatalf("after a clean stop the node rejoined amnesiac, or did not say why not:\n%s", l)
	}
	t.Logf("%d messages acknowledged; node %d rejoined amnesiac after its power loss, not after its clean stop", len(acked), victim)
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
