package integration

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Cluster timings for tests (config keys, shortened): a dead primary is
// replaced within a few seconds, and the bounds the tests assert are
// generous multiples so they hold under -race on 2 cores.
const (
	clusterHeartbeatTimeout = 2 * time.Second
	// failoverBound is what a test allows for a new primary to accept
	// writes: 5 × heartbeat_timeout (the measured figure is in docs/).
	failoverBound = 5 * clusterHeartbeatTimeout
)

// clusterLoopback hands each cluster test its own loopback address
// (127.0.0.20, .21, ...), so parallel packages and tests never collide on
// the pre-picked roster ports.
var clusterLoopback atomic.Uint32

type testCluster struct {
	t        *testing.T
	ip       string
	nodes    []*server
	tcpPorts []int
	// quicPorts and wsPorts are the roster's QUIC and WebSocket ports.
	quicPorts []int
	wsPorts   []int
	env       [][]string
}

// pickUDPPorts reserves count free UDP ports on ip (QUIC roster ports).
func pickUDPPorts(t *testing.T, ip string, count int) []int {
	t.Helper()
	var ports []int
	var ls []net.PacketConn
	for attempts := 0; len(ports) < count; attempts++ {
		if attempts > 100*count {
			t.Fatalf("reserve %d distinct UDP ports on %s", count, ip)
		}
		l, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatalf("reserve a UDP port on %s: %v", ip, err)
		}
		ls = append(ls, l)
		// Claimed with the TCP picks: config validation refuses a number
		// used twice on one ip, whatever the transport.
		if port := l.LocalAddr().(*net.UDPAddr).Port; claimPort(ip, port) {
			ports = append(ports, port)
		}
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

var (
	claimedMu    sync.Mutex
	claimedPorts = map[string]bool{}
)

// claimPort records ip:port as handed out; false if it already was.
func claimPort(ip string, port int) bool {
	claimedMu.Lock()
	defer claimedMu.Unlock()
	key := net.JoinHostPort(ip, fmt.Sprint(port))
	if claimedPorts[key] {
		return false
	}
	claimedPorts[key] = true
	return true
}

// pickPorts reserves count free TCP ports on ip (bound, then closed just
// before the servers start: roster ports must be known before boot).
// A port is never handed out twice in one test process (the kernel may
// offer a port again once its reservation closed, and two picks for one
// cluster would then collide).
func pickPorts(t *testing.T, ip string, count int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for attempts := 0; len(ports) < count; attempts++ {
		if attempts > 100*count {
			t.Fatalf("reserve %d distinct ports on %s: the kernel keeps offering used ones", count, ip)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatalf("reserve a port on %s: %v", ip, err)
		}
		ls = append(ls, l) // held until all are picked: no repeat within this call
		port := l.Addr().(*net.TCPAddr).Port
		if !claimPort(ip, port) {
			continue
		}
		ports = append(ports, port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// startCluster boots n nodes (replica ids 0..n-1) on one loopback address
// with a roster of pre-picked tcp and tcp_replica ports.
func startCluster(t *testing.T, n int, extraEnv ...string) *testCluster {
	t.Helper()
	return startClusterOn(t, nextClusterIP(), n, extraEnv...)
}

// nextClusterIP is a loopback address no other cluster test uses.
func nextClusterIP() string { return fmt.Sprintf("127.0.0.%d", 20+clusterLoopback.Add(1)) }

// startClusterOn is startCluster on a given loopback address (for tests
// that pick more roster ports on it first).
func startClusterOn(t *testing.T, ip string, n int, extraEnv ...string) *testCluster {
	t.Helper()
	ports := pickPorts(t, ip, 3*n)
	c := &testCluster{t: t, ip: ip, quicPorts: pickUDPPorts(t, ip, n), wsPorts: ports[2*n:]}
	var roster []string
	for i := 0; i < n; i++ {
		c.tcpPorts = append(c.tcpPorts, ports[i])
		roster = append(roster,
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_NAME=node-%d", i, i),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_IP=%s", i, ip),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_REPLICA_ID=%d", i, i),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_TCP=%d", i, ports[i]),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_TCP_REPLICA=%d", i, ports[n+i]),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_QUIC=%d", i, c.quicPorts[i]),
			fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_WEBSOCKET=%d", i, c.wsPorts[i]),
		)
	}
	base := append([]string{
		"IGGY_CLUSTER_ENABLED=true",
		"IGGY_CLUSTER_NAME=it-cluster",
		"IGGY_TCP_ADDRESS=" + ip + ":0",
		"IGGY_QUIC_ADDRESS=" + ip + ":0",
		"IGGY_WEBSOCKET_ADDRESS=" + ip + ":0",
		"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=" + clusterHeartbeatTimeout.String(),
		"IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL=100ms",
		"IGGY_CLUSTER_PREPARE_RETRANSMIT_INTERVAL=100ms",
		"IGGY_CLUSTER_VIEW_CHANGE_RETRANSMIT_INTERVAL=100ms",
		"IGGY_CLUSTER_VIEW_CHANGE_STATUS_TIMEOUT=1s",
		"IGGY_CLUSTER_REQUEST_START_VIEW_RETRANSMIT_INTERVAL=200ms",
		"IGGY_CLUSTER_REPAIR_RETRY_INTERVAL=200ms",
		"IGGY_MESSAGE_BUS_RECONNECT_PERIOD=100ms",
	}, roster...)
	base = append(base, extraEnv...)
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		env := append([]string(nil), base...)
		c.env = append(c.env, env)
		c.nodes = append(c.nodes, startServerArgs(t, filepath.Join(dir, fmt.Sprintf("node-%d", i)),
			[]string{"--replica-id", fmt.Sprint(i)}, env...))
	}
	// Formed: every node caught up (a node that joined after the others
	// committed something rejoins through the primary first, and until
	// then does not count for a quorum).
	for i := range c.nodes {
		c.waitCaughtUp(i, clusterFormTimeout)
	}
	return c
}

// clusterFormTimeout bounds how long a new cluster's nodes take to catch up.
const clusterFormTimeout = 30 * time.Second

// waitCaughtUp waits until node i reports itself Healthy in its cluster
// metadata (it is Starting until its metadata group caught up after boot).
func (c *testCluster) waitCaughtUp(i int, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	last := "no answer"
	for time.Now().Before(deadline) {
		if status, err := c.selfStatus(i); err != nil {
			last = err.Error()
		} else if status == wire.NodeHealthy {
			return
		} else {
			last = fmt.Sprintf("status %d", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("node %d did not catch up within %s (%s)", i, within, last)
}

// selfStatus is node i's status of itself in its cluster metadata.
func (c *testCluster) selfStatus(i int) (uint8, error) {
	cl, err := client.Dial(testCtx(c.t), c.addr(i), client.WithResponseTimeout(2*time.Second))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if _, err := cl.LoginUser(testCtx(c.t), "iggy", "iggy"); err != nil {
		return 0, err
	}
	md, err := cl.GetClusterMetadata(testCtx(c.t))
	if err != nil {
		return 0, err
	}
	name := fmt.Sprintf("node-%d", i)
	for _, n := range md.Nodes {
		if n.Name == name {
			return n.Status, nil
		}
	}
	return 0, fmt.Errorf("%s not in the cluster metadata", name)
}

func (c *testCluster) addr(i int) string {
	return net.JoinHostPort(c.ip, fmt.Sprint(c.tcpPorts[i]))
}

// addrOn is node i's roster endpoint for a client transport.
func (c *testCluster) addrOn(i int, t client.Transport) string {
	port := c.tcpPorts[i]
	switch t {
	case client.TransportQUIC:
		port = c.quicPorts[i]
	case client.TransportWebSocket:
		port = c.wsPorts[i]
	}
	return net.JoinHostPort(c.ip, fmt.Sprint(port))
}

// waitLeader polls cluster metadata through node via until some node is
// named Leader (and, when want >= 0, that it is node want), returning its
// replica index.
func (c *testCluster) waitLeader(via int, want int, within time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		if idx, ok := c.leaderVia(via); ok && (want < 0 || idx == want) {
			return idx
		} else if ok {
			last = fmt.Sprintf("leader is node %d", idx)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader (want %d) seen via node %d within %s (%s)", want, via, within, last)
	return -1
}

// leaderVia asks node via (logged in as root) who the Leader is.
func (c *testCluster) leaderVia(via int) (int, bool) {
	cl, err := client.Dial(testCtx(c.t), c.addr(via), client.WithResponseTimeout(2*time.Second))
	if err != nil {
		return 0, false
	}
	defer cl.Close()
	if _, err := cl.LoginUser(testCtx(c.t), "iggy", "iggy"); err != nil {
		return 0, false
	}
	md, err := cl.GetClusterMetadata(testCtx(c.t))
	if err != nil {
		return 0, false
	}
	for i, node := range md.Nodes {
		if node.Role == wire.RoleLeader {
			return i, true
		}
	}
	return 0, false
}
