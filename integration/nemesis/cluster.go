// Package nemesis runs real iggy-server processes on loopback under a
// seeded storm of process and replica-bus faults, drives producers and
// consumers against them, and checks the history at the end
// (docs/nemesis.md). The soak (soak.go) is the same machinery run for
// longer with resource sampling.
//
// Replica-bus faults go through a frame-aware proxy in the test process
// (proxy.go): each node's roster names, for every peer, a proxy port
// instead of the peer's own replica port, so every replica connection
// crosses the proxy, which can drop, delay or black-hole whole frames per
// direction, or sever the link. No server code changes, no root, no
// kernel state to clean up.
package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Timings of the cluster under test (config keys, shortened as in
// integration/cluster_harness_test.go).
const (
	heartbeatTimeout = 2 * time.Second
	bootTimeout      = 90 * time.Second // a loaded 2-core machine, a node replaying a long log
)

// BuildServer builds cmd/iggy-server into dir and returns the binary's path.
// repoRoot is the module root (the directory holding go.mod).
func BuildServer(ctx context.Context, repoRoot, dir string) (string, error) {
	out := filepath.Join(dir, "iggy-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/iggy-server")
	cmd.Dir = repoRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build iggy-server: %w\n%s", err, b)
	}
	return out, nil
}

// Node is one server process of the cluster, restartable on the same data.
type Node struct {
	ID      int
	DataDir string
	LogPath string
	env     []string
	binary  string
	addr    string // client TCP address (roster port)

	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{}
	paused      bool
	incarnation int
	logFile     *os.File
	down        bool // killed on purpose: an exit is expected
	// OnUnexpectedExit is called (from a watcher goroutine) when the
	// process exits without Kill having been called.
	OnUnexpectedExit func(n *Node, err error)
}

// Cluster is n nodes on one loopback address with a proxy on every replica link.
type Cluster struct {
	N      int
	IP     string
	Nodes  []*Node
	Links  *Links
	log    *slog.Logger
	dir    string
	binary string
}

// ClusterConfig says how to start a cluster.
type ClusterConfig struct {
	N      int
	IP     string // a loopback address of its own (127.0.0.x)
	Dir    string // data and logs
	Binary string
	Seed   int64
	Log    *slog.Logger
}

func pickPorts(ip string, count int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < count; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("reserve a port on %s: %w", ip, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StartCluster starts the proxies and boots every node. On error everything
// started is stopped.
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	n := cfg.N
	// Client ports, real replica ports, one proxy port per unordered pair.
	pairs := n * (n - 1) / 2
	ports, err := pickPorts(cfg.IP, 2*n+pairs)
	if err != nil {
		return nil, err
	}
	tcp, replica, proxyPorts := ports[:n], ports[n:2*n], ports[2*n:]
	c := &Cluster{N: n, IP: cfg.IP, log: cfg.Log, dir: cfg.Dir, binary: cfg.Binary}
	c.Links = newLinks(cfg.Log, cfg.Seed)
	k := 0
	proxyOf := map[[2]int]int{}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			listen := net.JoinHostPort(cfg.IP, fmt.Sprint(proxyPorts[k]))
			target := net.JoinHostPort(cfg.IP, fmt.Sprint(replica[b]))
			if err := c.Links.add(a, b, listen, target); err != nil {
				c.Links.Close()
				return nil, err
			}
			proxyOf[[2]int{a, b}] = proxyPorts[k]
			k++
		}
	}
	for i := 0; i < n; i++ {
		env := []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + os.Getenv("HOME"),
			"IGGY_CLUSTER_ENABLED=true",
			"IGGY_CLUSTER_NAME=nemesis",
			"IGGY_TCP_ADDRESS=" + cfg.IP + ":0",
			"IGGY_HTTP_ENABLED=false",
			"IGGY_QUIC_ENABLED=false",
			"IGGY_WEBSOCKET_ENABLED=false",
			"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=" + heartbeatTimeout.String(),
			"IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL=100ms",
			"IGGY_CLUSTER_PREPARE_RETRANSMIT_INTERVAL=100ms",
			"IGGY_CLUSTER_VIEW_CHANGE_RETRANSMIT_INTERVAL=100ms",
			"IGGY_CLUSTER_VIEW_CHANGE_STATUS_TIMEOUT=1s",
			"IGGY_CLUSTER_REQUEST_START_VIEW_RETRANSMIT_INTERVAL=200ms",
			"IGGY_CLUSTER_REPAIR_RETRY_INTERVAL=200ms",
			"IGGY_MESSAGE_BUS_RECONNECT_PERIOD=100ms",
		}
		// Node i's roster: its own real replica port; every peer's entry
		// names the proxy of the pair (only the lower id dials, so the
		// proxy's target is always the higher id's real port).
		for j := 0; j < n; j++ {
			rp := replica[j]
			if j != i {
				a, b := min(i, j), max(i, j)
				rp = proxyOf[[2]int{a, b}]
			}
			env = append(env,
				fmt.Sprintf("IGGY_CLUSTER_NODES_%d_NAME=node-%d", j, j),
				fmt.Sprintf("IGGY_CLUSTER_NODES_%d_IP=%s", j, cfg.IP),
				fmt.Sprintf("IGGY_CLUSTER_NODES_%d_REPLICA_ID=%d", j, j),
				fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_TCP=%d", j, tcp[j]),
				fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_TCP_REPLICA=%d", j, rp),
			)
		}
		node := &Node{ID: i, DataDir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)),
			LogPath: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d.log", i)),
			env:     env, binary: cfg.Binary, addr: net.JoinHostPort(cfg.IP, fmt.Sprint(tcp[i]))}
		env = append(env, "IGGY_SYSTEM_PATH="+node.DataDir)
		node.env = env
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		if err := node.Start(); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Addrs are the client TCP addresses of every node, in replica order.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.addr)
	}
	return out
}

// Close kills every node and stops the proxies.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		n.Kill()
	}
	c.Links.Close()
}

// Addr is the node's client TCP address.
func (n *Node) Addr() string { return n.addr }

// Start boots the process on its data directory and waits until it
// published its client address.
func (n *Node) Start() error {
	n.mu.Lock()
	if n.cmd != nil && !n.exitedLocked() {
		n.mu.Unlock()
		return nil
	}
	addrFile := filepath.Join(n.DataDir, "runtime", "tcp.addr")
	_ = os.Remove(addrFile)
	if n.logFile == nil {
		f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			n.mu.Unlock()
			return fmt.Errorf("node %d: open log: %w", n.ID, err)
		}
		n.logFile = f
	}
	n.incarnation++
	fmt.Fprintf(n.logFile, "\n===== nemesis: start node %d incarnation %d at %s =====\n", n.ID, n.incarnation, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.binary, "--with-default-root-credentials", "--replica-id", fmt.Sprint(n.ID))
	cmd.Env = n.env
	cmd.Stdout, cmd.Stderr = n.logFile, n.logFile
	// Its own process group: a signal to the test's group never reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return fmt.Errorf("node %d: start: %w", n.ID, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		close(exited)
		n.mu.Lock()
		unexpected, cb := !n.down, n.OnUnexpectedExit
		n.mu.Unlock()
		if unexpected && cb != nil {
			cb(n, err)
		}
	}()
	n.cmd, n.exited, n.paused, n.down = cmd, exited, false, false
	n.mu.Unlock()

	deadline := time.Now().Add(bootTimeout)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("node %d exited during boot (log %s)", n.ID, n.LogPath)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d did not publish %s within %s (log %s)", n.ID, addrFile, bootTimeout, n.LogPath)
		}
	}
}

func (n *Node) exitedLocked() bool {
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive (paused counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && !n.exitedLocked()
}

// Pid is the process id (0 when not running).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.exitedLocked() {
		return 0
	}
	return n.cmd.Process.Pid
}

// Incarnation counts the starts of this node.
func (n *Node) Incarnation() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.incarnation
}

// Kill sends SIGKILL (continuing a paused process first is not needed:
// SIGKILL ends a stopped process) and waits for the exit.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.paused, n.down = false, true
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
	}
}

// Stop sends SIGTERM (continuing a paused process first) and waits up to
// 30 s for a clean exit, then kills it. It reports whether the exit was
// clean within the bound.
func (n *Node) Stop() bool {
	n.mu.Lock()
	cmd, exited, paused := n.cmd, n.exited, n.paused
	gone := cmd == nil || n.exitedLocked()
	n.paused, n.down = false, true
	n.mu.Unlock()
	if gone {
		return true // not running (an exit on its own is reported when it happens)
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return cmd.ProcessState != nil && cmd.ProcessState.Success()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return false
	}
}

// Pause sends SIGSTOP.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.exitedLocked() {
		return fmt.Errorf("node %d not running", n.ID)
	}
	n.paused = true
	return n.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume sends SIGCONT to a paused process.
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.exitedLocked() || !n.paused {
		return nil
	}
	n.paused = false
	return n.cmd.Process.Signal(syscall.SIGCONT)
}

// Paused reports whether the node is stopped by SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

// CloseLog closes the node's log file (after the last stop).
func (n *Node) CloseLog() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.logFile != nil {
		n.logFile.Close()
		n.logFile = nil
	}
}
