package node

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// TestSingleNodeMetadataReportsEveryServedPort: each transport's bound port
// flows into the single-node answer; 0 only for a disabled transport.
func TestSingleNodeMetadataReportsEveryServedPort(t *testing.T) {
	md := singleNodeMetadata("127.0.0.1", servedPorts{tcp: 41001, quic: 41002, http: 41003, websocket: 41004})
	n := md.Nodes[0]
	if md.Name != "single-node" || n.TCP != 41001 || n.QUIC != 41002 || n.HTTP != 41003 || n.WebSocket != 41004 {
		t.Fatalf("metadata %+v", md)
	}
	md = singleNodeMetadata("127.0.0.1", servedPorts{tcp: 41001})
	if n := md.Nodes[0]; n.TCP != 41001 || n.QUIC != 0 || n.HTTP != 0 || n.WebSocket != 0 {
		t.Fatalf("disabled transports must report 0: %+v", n)
	}
	if portOf(&net.UDPAddr{Port: 8080}) != 8080 || portOf(nil) != 0 {
		t.Fatal("portOf")
	}
}

// TestClusterMetadataReportsTheBoundTCPPort: configured with port 0, the
// node reports the port the kernel chose for each transport it serves
// (TCP, QUIC, WebSocket), and 0 for HTTP, which this build does not serve.
func TestClusterMetadataReportsTheBoundTCPPort(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startNode(t, dir)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	md, err := c.GetClusterMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := md.Nodes[0]
	quic, ws := publishedPort(t, dir, "quic.addr"), publishedPort(t, dir, "websocket.addr")
	if port == 0 || int(n.TCP) != port || n.QUIC != quic || n.HTTP != 0 || n.WebSocket != ws ||
		n.Role != wire.RoleLeader || n.IP != "127.0.0.1" {
		t.Fatalf("cluster node %+v, bound ports tcp %d quic %d websocket %d", n, port, quic, ws)
	}
}

// publishedPort is the port a listener published under dir/runtime.
func publishedPort(t *testing.T, dir, file string) uint16 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runtime", file))
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := net.SplitHostPort(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		t.Fatalf("%s: port %q", file, p)
	}
	return uint16(n)
}
