package node

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// TestClusterPowerLossOfEveryNode runs three nodes in-process, each on its
// own simulated disk (its own machine), produces to a persisted topic,
// cuts the power of all three at once (a rack), reboots them on what their
// disks kept and checks what `durability = persisted` promises in a
// cluster: every acknowledged message is at its acknowledged offset, no
// offset is handed out again, and every acknowledged user exists. A
// replicated topic beside it may lose acknowledged messages (a quorum's
// page caches are gone), but never hands their offsets out again (its
// offset reservations, partition_reserve.go).
func TestClusterPowerLossOfEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a 3-node cluster twice")
	}
	for i := range *flagClusterPowerLossSeeds {
		seed := uint64(9_100_001 + i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runClusterPowerLoss(t, seed) })
	}
}

var flagClusterPowerLossSeeds = flag.Int("node.powerloss.cluster.seeds", 1,
	"TestClusterPowerLossOfEveryNode: rack power cuts to run (each one seed, about 25 s)")

func runClusterPowerLoss(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xc1a5))
	const n = 3
	ports := pickLoopbackPorts(t, 3*n)
	mems := make([]*vfs.Mem, n)
	dirs := make([]string, n)
	for i := range mems {
		mems[i] = vfs.NewMem(seed*16 + uint64(i))
		writeBootID(t, mems[i], 1)
		dirs[i] = t.TempDir()
	}
	boot := func() (seeds []string, stop func()) {
		stops := make([]func() error, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() { // a node waits for a quorum before it serves: boot them together
				defer wg.Done()
				addr, s := startClusterNodeOn(t, dirs[i], mems[i], uint8(i), n, ports)
				mu.Lock()
				defer mu.Unlock()
				stops[i] = s
				seeds = append(seeds, addr)
			}()
		}
		wg.Wait()
		return seeds, func() {
			var wg sync.WaitGroup
			for i, s := range stops {
				if s == nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s(); err != nil {
						t.Logf("node %d: Run: %v", i, err)
					}
				}()
			}
			wg.Wait()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds, stop := boot()
	c := clusterClient(ctx, t, seeds)
	if _, err := c.CreateStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.NamedID("s"), "t", 1,
		wire.Option{Key: "durability", Kind: wire.KindString, Value: []byte("persisted")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.NamedID("s"), "r", 1); err != nil { // durability = replicated
		t.Fatal(err)
	}
	if _, err := c.CreateUser(ctx, "before-the-cut", "secret-password", wire.UserActive, nil); err != nil {
		t.Fatal(err)
	}
	var acked []ackedSend
	replicatedAcked := uint64(0) // 1 + the highest offset acknowledged on the replicated topic
	for i, sends := 0, 50+rng.IntN(300); i < sends; i++ {
		payload := fmt.Sprintf("m-%06d", i)
		conf, err := c.SendMessages(ctx, wire.NamedID("s"), wire.NamedID("t"),
			wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
			[]wire.BatchMessageInput{{Payload: []byte(payload)}})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		acked = append(acked, ackedSend{offset: conf[0].BaseOffset, payload: payload})
		for range 1 + rng.IntN(4) {
			conf, err := c.SendMessages(ctx, wire.NamedID("s"), wire.NamedID("r"),
				wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
				[]wire.BatchMessageInput{{Payload: []byte(payload)}, {Payload: []byte(payload)}})
			if err != nil {
				t.Fatalf("send %d to the replicated topic: %v", i, err)
			}
			replicatedAcked = max(replicatedAcked, conf[0].BaseOffset+2)
		}
	}
	// A few more in flight when the power goes: their outcome is unknown.
	inflight := make(chan struct{})
	go func() {
		defer close(inflight)
		for i := 0; ; i++ {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := c.SendMessages(sctx, wire.NamedID("s"), wire.NamedID("t"),
				wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
				[]wire.BatchMessageInput{{Payload: []byte(fmt.Sprintf("late-%06d", i))}})
			scancel()
			if err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	for _, m := range mems {
		m.PowerOffAfter(0)
	}
	<-inflight
	_ = c.Close()
	stop()
	for i, m := range mems {
		m.Crash()
		writeBootID(t, m, 2) // every machine rebooted
		_ = i
	}

	seeds, stop = boot()
	defer stop()
	c = clusterClient(ctx, t, seeds)
	defer c.Close()
	// A node that answers may still be catching up (a backup serves what
	// it applied): poll until every acknowledged message is there, or the
	// bound runs out and the first one missing is reported.
	var stored map[uint64]string
	var missing *ackedSend
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		stored, err = tryPollAll(ctx, c)
		missing = nil
		if err != nil { // a node still replaying metadata may not know the topic yet
			if time.Now().After(deadline) {
				t.Fatalf("after the reboot: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for i := range acked {
			if stored[acked[i].offset] != acked[i].payload {
				missing = &acked[i]
				break
			}
		}
		if missing == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged %q at offset %d, after the rack's power loss %q (%d messages stored)",
				missing.payload, missing.offset, stored[missing.offset], len(stored))
		}
		time.Sleep(200 * time.Millisecond)
	}
	conf, err := c.SendMessages(ctx, wire.NamedID("s"), wire.NamedID("t"),
		wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
		[]wire.BatchMessageInput{{Payload: []byte("after-reboot")}})
	if err != nil {
		t.Fatalf("send after the reboot: %v", err)
	}
	if last := acked[len(acked)-1].offset; conf[0].BaseOffset <= last {
		t.Fatalf("offset %d handed out again (highest acknowledged %d)", conf[0].BaseOffset, last)
	}
	// The replicated topic's group may still be electing: retry until it takes the send.
	var replicatedNext uint64
	for deadline := time.Now().Add(30 * time.Second); ; {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		rconf, err := c.SendMessages(sctx, wire.NamedID("s"), wire.NamedID("r"),
			wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 0},
			[]wire.BatchMessageInput{{Payload: []byte("after-reboot")}})
		scancel()
		if err == nil {
			replicatedNext = rconf[0].BaseOffset
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicated topic takes no send after the reboot: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if replicatedNext < replicatedAcked {
		t.Fatalf("replicated topic: offset %d handed out again (offsets up to %d were acknowledged before the power loss)",
			replicatedNext, replicatedAcked-1)
	}
	t.Logf("replicated topic: %d offsets acknowledged before the power loss, the next send took offset %d",
		replicatedAcked, replicatedNext)
	if _, err := c.GetUser(ctx, wire.NamedID("before-the-cut")); err != nil {
		t.Fatalf("acknowledged user lost: %v", err)
	}
	t.Logf("%d acknowledged, %d polled after the rack's power loss (the node answering may lag), next offset %d",
		len(acked), len(stored), conf[0].BaseOffset)
}

// tryPollAll polls partition 0 of s/t from offset 0 to its end.
func tryPollAll(ctx context.Context, c *client.Client) (map[uint64]string, error) {
	stored := map[uint64]string{}
	for next := uint64(0); ; {
		r, err := c.PollMessages(ctx, wire.PollMessagesRequest{
			Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)},
			Stream:   wire.NamedID("s"), Topic: wire.NamedID("t"), Partition: wire.SomePartition(0),
			Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: next}, Count: 1000})
		if err != nil {
			return stored, fmt.Errorf("poll from %d: %w", next, err)
		}
		if len(r.Messages) == 0 {
			return stored, nil
		}
		for _, m := range r.Messages {
			stored[m.Offset] = string(m.Payload)
			next = m.Offset + 1
		}
	}
}

func clusterClient(ctx context.Context, t *testing.T, seeds []string) *client.Client {
	t.Helper()
	// A cluster that just booted may still be electing its metadata
	// primary (the login answers 58): dial again until it serves, within
	// clusterDialMax (a slow machine, -race).
	deadline := time.Now().Add(clusterDialMax)
	for {
		c, err := client.DialCluster(ctx, seeds, client.WithCredentials("iggy", "iggy"))
		if err == nil {
			return c
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("dial the cluster %v: %v", seeds, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clusterDialMax bounds how long clusterClient dials a booting cluster.
const clusterDialMax = 30 * time.Second

// loopbackRoster is an in-process cluster's roster address: a loopback
// address of its own and the ports picked free on it.
type loopbackRoster struct {
	ip    string
	ports []int
}

// clusterLoopbacks numbers the in-process clusters of this test process.
var clusterLoopbacks atomic.Uint32

// pickLoopbackPorts reserves count free TCP ports on a loopback address of
// the cluster's own (127.0.3.2, .3, ...): the ports are closed again
// before the nodes bind them, and on 127.0.0.1 another test's outgoing
// connection could take one as its source port meanwhile (CI: "bind:
// address already in use" for a roster port). Connections to 127.0.0.1
// never use this address as their source.
// The ports are held until all are picked, then released for the nodes to
// bind.
func pickLoopbackPorts(t *testing.T, count int) loopbackRoster {
	t.Helper()
	r := loopbackRoster{ip: fmt.Sprintf("127.0.3.%d", 1+clusterLoopbacks.Add(1)%250)}
	var ls []net.Listener
	for len(r.ports) < count {
		l, err := net.Listen("tcp", net.JoinHostPort(r.ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		r.ports = append(r.ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return r
}

// startClusterNodeOn boots replica id of an n-node loopback cluster whose
// roster is (client TCP, replica bus, WebSocket per node; QUIC and HTTP
// off), its data on fsys.
func startClusterNodeOn(t *testing.T, dir string, fsys vfs.FS, id uint8, n int, roster loopbackRoster) (string, func() error) {
	t.Helper()
	return runNodeLogged(t, clusterNodeConfig(t, dir, n, roster), id, fsys, powerLossLogger())
}

// clusterNodeConfig is the configuration of one of n in-process cluster
// nodes on loopback (ports: n client, n replica, n websocket ports).
func clusterNodeConfig(t *testing.T, dir string, n int, roster loopbackRoster) *config.Config {
	t.Helper()
	ports := roster.ports
	env := config.Env{
		"IGGY_CLUSTER_ENABLED":                                "true",
		"IGGY_CLUSTER_NAME":                                   "powerloss",
		"IGGY_QUIC_ENABLED":                                   "false",
		"IGGY_HTTP_ENABLED":                                   "false",
		"IGGY_TCP_ADDRESS":                                    roster.ip + ":0",
		"IGGY_WEBSOCKET_ADDRESS":                              roster.ip + ":0",
		"IGGY_CLUSTER_HEARTBEAT_TIMEOUT":                      "2s",
		"IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL":              "100ms",
		"IGGY_CLUSTER_PREPARE_RETRANSMIT_INTERVAL":            "100ms",
		"IGGY_CLUSTER_VIEW_CHANGE_RETRANSMIT_INTERVAL":        "100ms",
		"IGGY_CLUSTER_VIEW_CHANGE_STATUS_TIMEOUT":             "1s",
		"IGGY_CLUSTER_REQUEST_START_VIEW_RETRANSMIT_INTERVAL": "200ms",
		"IGGY_CLUSTER_REPAIR_RETRY_INTERVAL":                  "200ms",
		"IGGY_MESSAGE_BUS_RECONNECT_PERIOD":                   "100ms",
	}
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("IGGY_CLUSTER_NODES_%d_", i)
		env[p+"NAME"] = fmt.Sprintf("node-%d", i)
		env[p+"IP"] = roster.ip
		env[p+"REPLICA_ID"] = strconv.Itoa(i)
		env[p+"PORTS_TCP"] = strconv.Itoa(ports[i])
		env[p+"PORTS_TCP_REPLICA"] = strconv.Itoa(ports[n+i])
		env[p+"PORTS_WEBSOCKET"] = strconv.Itoa(ports[2*n+i])
	}
	cfg, _, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	cfg.System.Path = dir
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}
