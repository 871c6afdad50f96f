package client

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// fakeCluster is several scripted fake servers on 127.0.0.1:0. Every node answers Register with a
// session of its own (1000 + index), GetClusterMetadata with the roster and whatever leader(i)
// names (-1: nobody), and every other request through write(i, h) (nil: OK, empty payload).
type fakeCluster struct {
	t     *testing.T
	nodes []*fakeServer

	mu     sync.Mutex
	leader func(from int) int
	write  func(node int, h wire.RequestHeader) [][]byte
}

func newFakeCluster(t *testing.T, n int) *fakeCluster {
	fc := &fakeCluster{t: t, leader: func(int) int { return 0 }}
	for i := 0; i < n; i++ {
		fc.nodes = append(fc.nodes, newFakeServer(t, nil))
	}
	for i, s := range fc.nodes {
		i, s := i, s
		s.handle = func(f wire.Frame) [][]byte {
			h := s.header(f)
			fc.mu.Lock()
			leader, write := fc.leader, fc.write
			fc.mu.Unlock()
			switch {
			case h.Operation == wire.OpRegister:
				return [][]byte{registerReply(h, uint64(1000+i))}
			case h.Operation == wire.OpNonReplicated && h.Code == wire.CodeGetClusterMetadata:
				md := fc.metadata(leader(i))
				return [][]byte{replyOK(h, md.Append(nil))}
			case write != nil:
				return write(i, h)
			default:
				return [][]byte{replyOK(h, nil)}
			}
		}
	}
	return fc
}

func (fc *fakeCluster) script(leader func(from int) int, write func(node int, h wire.RequestHeader) [][]byte) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if leader != nil {
		fc.leader = leader
	}
	fc.write = write
}

func (fc *fakeCluster) metadata(leader int) wire.ClusterMetadata {
	md := wire.ClusterMetadata{Name: "fake"}
	for i, s := range fc.nodes {
		host, port, _ := net.SplitHostPort(s.addr())
		p, _ := strconv.Atoi(port)
		role := wire.RoleFollower
		if i == leader {
			role = wire.RoleLeader
		}
		md.Nodes = append(md.Nodes, wire.ClusterNode{Name: "n" + strconv.Itoa(i), IP: host, TCP: uint16(p), Role: role, Status: wire.NodeHealthy})
	}
	return md
}

// count returns how many requests node i received with operation op (and, for non-replicated
// ones, command code code).
func (fc *fakeCluster) count(i int, op wire.Operation, code wire.CommandCode) int {
	n := 0
	for _, f := range fc.nodes[i].received() {
		h, _ := wire.DecodeRequestHeader(f.Header[:])
		if h.Operation == op && (op != wire.OpNonReplicated || h.Code == code) {
			n++
		}
	}
	return n
}

func (fc *fakeCluster) frames(i int, op wire.Operation) []wire.Frame {
	var out []wire.Frame
	for _, f := range fc.nodes[i].received() {
		if h, _ := wire.DecodeRequestHeader(f.Header[:]); h.Operation == op {
			out = append(out, f)
		}
	}
	return out
}

func (fc *fakeCluster) dial(seeds []int, opts ...Option) (*Client, error) {
	var addrs []string
	for _, i := range seeds {
		addrs = append(addrs, fc.nodes[i].addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialCluster(ctx, addrs, append([]Option{WithCredentials("iggy", "secret-pw")}, opts...)...)
	if err == nil {
		fc.t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func (fc *fakeCluster) mustDial(seeds []int, opts ...Option) *Client {
	fc.t.Helper()
	c, err := fc.dial(seeds, opts...)
	if err != nil {
		fc.t.Fatal(err)
	}
	return c
}

const getMetadata = wire.CodeGetClusterMetadata

// Given only a follower, the client signs in there, reads the metadata, and ends on the leader
// signed in with the same credentials; writes go to the leader.
func TestClusterRedirectsToLeader(t *testing.T) {
	fc := newFakeCluster(t, 3)
	fc.script(func(int) int { return 2 }, nil)
	c := fc.mustDial([]int{0})
	if c.Addr() != fc.nodes[2].addr() || c.Session() != 1002 {
		t.Fatalf("settled on %s session %d, want leader %s session 1002", c.Addr(), c.Session(), fc.nodes[2].addr())
	}
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	if got := fc.count(2, wire.OpDeleteStream, 0); got != 1 {
		t.Fatalf("leader got %d CreateStream, want 1", got)
	}
	r0, r2 := fc.frames(0, wire.OpRegister), fc.frames(2, wire.OpRegister)
	if len(r0) != 1 || len(r2) != 1 || !bytes.Equal(r0[0].Body, r2[0].Body) {
		t.Fatalf("registers: follower %d, leader %d (bodies must match: same credentials)", len(r0), len(r2))
	}
	if !bytes.Contains(r2[0].Body, []byte("secret-pw")) {
		t.Fatal("the leader sign-in does not carry the given credentials")
	}
	if fc.count(0, wire.OpNonReplicated, getMetadata) != 1 || fc.count(1, wire.OpRegister, 0) != 0 {
		t.Fatal("metadata read once at the follower; node 1 untouched")
	}
	// The leader confirms itself: one metadata read there too.
	if fc.count(2, wire.OpNonReplicated, getMetadata) != 1 {
		t.Fatal("no leader re-check after the redirect")
	}
}

// A leaderless window shorter than 5 s: the client polls every 250 ms, then redirects.
func TestClusterLeaderlessShortWindowThenRedirect(t *testing.T) {
	fc := newFakeCluster(t, 2)
	start := time.Now()
	fc.script(func(int) int {
		if time.Since(start) < 700*time.Millisecond {
			return -1
		}
		return 1
	}, nil)
	c := fc.mustDial([]int{0})
	elapsed := time.Since(start)
	if c.Addr() != fc.nodes[1].addr() {
		t.Fatalf("settled on %s, want %s", c.Addr(), fc.nodes[1].addr())
	}
	polls := fc.count(0, wire.OpNonReplicated, getMetadata)
	if elapsed < 700*time.Millisecond || elapsed > 2*time.Second || polls < 3 || polls > 5 {
		t.Fatalf("elapsed %s, %d polls (want ≈ 0.75 s, 4 polls at 250 ms)", elapsed, polls)
	}
}

// A leaderless window longer than 5 s: after 5 s of polling the client continues on the contacted
// node, and its requests report their own outcome there.
func TestClusterLeaderlessLongWindowStaysOnContactedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("5 s window")
	}
	fc := newFakeCluster(t, 2)
	fc.script(func(int) int { return -1 }, nil)
	start := time.Now()
	c := fc.mustDial([]int{0})
	elapsed := time.Since(start)
	if c.Addr() != fc.nodes[0].addr() || c.Session() != 1000 {
		t.Fatalf("settled on %s, want the contacted node", c.Addr())
	}
	polls := fc.count(0, wire.OpNonReplicated, getMetadata)
	if elapsed < 4500*time.Millisecond || elapsed > 6500*time.Millisecond || polls < 17 || polls > 22 {
		t.Fatalf("elapsed %s, %d polls (want ≈ 5 s, 20 polls)", elapsed, polls)
	}
	if fc.count(1, wire.OpRegister, 0) != 0 {
		t.Fatal("contacted the other node")
	}
}

// A roster where every node names the next as leader: the client follows 3 redirects and stops.
func TestClusterRedirectLoopCappedAtThree(t *testing.T) {
	fc := newFakeCluster(t, 3)
	fc.script(func(from int) int { return (from + 1) % 3 }, nil)
	start := time.Now()
	c := fc.mustDial([]int{0})
	registers := fc.count(0, wire.OpRegister, 0) + fc.count(1, wire.OpRegister, 0) + fc.count(2, wire.OpRegister, 0)
	if registers != 1+3 {
		t.Fatalf("%d sign-ins, want 1 + 3 redirects", registers)
	}
	// 0 → 1 → 2 → 0: the third redirect lands back on node 0.
	if c.Addr() != fc.nodes[0].addr() || time.Since(start) > 2*time.Second {
		t.Fatalf("ended on %s after %s", c.Addr(), time.Since(start))
	}
	if _, err := c.GetStreams(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// 58 makes the client re-check the metadata leader and follow it.
func TestClusterNotAcceptedRechecksLeader(t *testing.T) {
	fc := newFakeCluster(t, 3)
	var moved atomic.Bool
	c := fc.mustDial([]int{0})
	fc.script(func(int) int {
		if moved.Load() {
			return 1
		}
		return 0
	}, func(node int, h wire.RequestHeader) [][]byte {
		if node == 0 {
			moved.Store(true) // node 0 lost leadership
			return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
		}
		return [][]byte{replyOK(h, nil)}
	})
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	if c.Addr() != fc.nodes[1].addr() || fc.count(1, wire.OpDeleteStream, 0) != 1 || fc.count(2, wire.OpRegister, 0) != 0 {
		t.Fatalf("ended on %s; the new leader must take the resend and node 2 stay untouched", c.Addr())
	}
}

// 58 where the metadata leader is the node that refused: the client walks the other advertised
// endpoints, each once; when every node refuses it returns 58 without looping.
func TestClusterNotAcceptedWalksEndpoints(t *testing.T) {
	fc := newFakeCluster(t, 3)
	c := fc.mustDial([]int{0}, WithMaxRedirects(0)) // the walk does not draw on the redirect cap
	fc.script(nil, func(node int, h wire.RequestHeader) [][]byte {
		if node == 2 {
			return [][]byte{replyOK(h, nil)}
		}
		return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
	})
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 1, 1} {
		if got := fc.count(i, wire.OpDeleteStream, 0); got != want {
			t.Fatalf("node %d got %d DeleteStream, want %d", i, got, want)
		}
	}
	if c.Addr() != fc.nodes[2].addr() {
		t.Fatalf("ended on %s", c.Addr())
	}

	// Everyone refuses: bounded walk, then 58.
	fc.script(nil, func(_ int, h wire.RequestHeader) [][]byte {
		return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
	})
	start := time.Now()
	err := c.DeleteStream(testCtx(t), wire.NumericID(1))
	if CodeOf(err) != wire.ErrTransientNotAccepted || time.Since(start) > 2*time.Second {
		t.Fatalf("got %v after %s, want 58 promptly", err, time.Since(start))
	}
	for i, want := range []int{2, 2, 2} {
		if got := fc.count(i, wire.OpDeleteStream, 0); got != want {
			t.Fatalf("node %d got %d DeleteStream in total, want %d (each node once per request)", i, got, want)
		}
	}
}

// 57 is replayed with the same bytes (client id, session, request id) within the budget; when it
// succeeds the call succeeds, and when the budget ends the 57 is returned.
func TestClusterNotCommittedReplayedSameIdentityThenReturned(t *testing.T) {
	fc := newFakeCluster(t, 2)
	c := fc.mustDial([]int{0}, WithResponseTimeout(500*time.Millisecond), WithReplayInterval(20*time.Millisecond))
	var n atomic.Int32
	fc.script(nil, func(_ int, h wire.RequestHeader) [][]byte {
		if h.Request == 1 && n.Add(1) > 2 {
			return [][]byte{replyOK(h, nil)}
		}
		return [][]byte{replyStatus(h, wire.ErrTransientNotCommitted)}
	})
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	err := c.DeleteStream(testCtx(t), wire.NumericID(2))
	if CodeOf(err) != wire.ErrTransientNotCommitted {
		t.Fatalf("got %v, want 57 after the budget", err)
	}
	frames := fc.frames(0, wire.OpDeleteStream)
	if len(frames) < 3+5 {
		t.Fatalf("%d DeleteStream frames", len(frames))
	}
	first, second := frames[0], frames[3]
	for i, f := range frames {
		want := first
		if i >= 3 {
			want = second
		}
		if f.Header != want.Header || !bytes.Equal(f.Body, want.Body) {
			t.Fatalf("replay %d differs from the original request", i)
		}
	}
	h1, _ := wire.DecodeRequestHeader(first.Header[:])
	h2, _ := wire.DecodeRequestHeader(second.Header[:])
	if h1.Request != 1 || h2.Request != 2 || h1.Session != 1000 || h1.Client != h2.Client {
		t.Fatalf("identities %+v / %+v", h1, h2)
	}
	if fc.count(1, wire.OpRegister, 0) != 0 {
		t.Fatal("57 must not fail over")
	}
}

// Validation and permission errors are returned at once: no replay, no leader check, no walk.
func TestClusterDefinitiveErrorsNotReplayed(t *testing.T) {
	for _, code := range []wire.ErrorCode{wire.ErrInvalidStreamName, wire.ErrUnauthorized} {
		fc := newFakeCluster(t, 3)
		c := fc.mustDial([]int{0})
		before := fc.count(0, wire.OpNonReplicated, getMetadata)
		fc.script(nil, func(_ int, h wire.RequestHeader) [][]byte {
			return [][]byte{replyStatus(h, code)}
		})
		if _, err := c.CreateStream(testCtx(t), "s"); CodeOf(err) != code {
			t.Fatalf("got %v, want %s", err, code)
		}
		if fc.count(0, wire.OpCreateStream, 0) != 1 || fc.count(0, wire.OpNonReplicated, getMetadata) != before ||
			fc.count(1, wire.OpRegister, 0)+fc.count(2, wire.OpRegister, 0) != 0 {
			t.Fatalf("%s was replayed or failed over", code)
		}
	}
}

// A reply that never comes is a *TimeoutError (outcome unknown), not an *Error; the next call
// reconnects and signs in again.
func TestClusterLostReplyIsTimeout(t *testing.T) {
	fc := newFakeCluster(t, 2)
	c := fc.mustDial([]int{0}, WithResponseTimeout(300*time.Millisecond))
	var lost atomic.Bool
	lost.Store(true)
	fc.script(nil, func(_ int, h wire.RequestHeader) [][]byte {
		if lost.Swap(false) {
			return nil
		}
		return [][]byte{replyOK(h, nil)}
	})
	err := c.DeleteStream(testCtx(t), wire.NumericID(1))
	var te *TimeoutError
	var ce *Error
	if !errors.As(err, &te) || !IsTimeout(err) || errors.As(err, &ce) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %T %v, want *TimeoutError", err, err)
	}
	if te.Command != wire.CodeDeleteStream || te.Addr != fc.nodes[0].addr() {
		t.Fatalf("timeout error %+v", te)
	}
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
	if fc.count(0, wire.OpRegister, 0) != 2 {
		t.Fatal("the reconnect did not sign in again")
	}
}

// The seed list is walked at dial time: a dead first seed is skipped.
func TestClusterDialSkipsDeadSeed(t *testing.T) {
	fc := newFakeCluster(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	ctx := testCtx(t)
	c, err := DialCluster(ctx, []string{dead, fc.nodes[1].addr()}, WithCredentials("iggy", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Addr() != fc.nodes[0].addr() {
		t.Fatalf("ended on %s, want the leader", c.Addr())
	}
	if _, err := DialCluster(ctx, nil); CodeOf(err) != wire.ErrCannotEstablishConnection {
		t.Fatalf("no seeds: %v", err)
	}
}

// A seed that dies mid-login (it accepted the connection, then hung up on the sign-in) is skipped
// like an unreachable one; a sign-in the server refuses is returned, with no other seed tried.
func TestClusterDialSkipsSeedLostDuringLogin(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.script(func(int) int { return 1 }, nil)
	dying := newFakeServer(t, nil)
	dying.handle = func(f wire.Frame) [][]byte {
		if dying.header(f).Operation == wire.OpRegister {
			return [][]byte{hangUp}
		}
		return [][]byte{replyOK(dying.header(f), nil)}
	}
	ctx := testCtx(t)
	c, err := DialCluster(ctx, []string{dying.addr(), fc.nodes[0].addr()}, WithCredentials("iggy", "pw"))
	if err != nil {
		t.Fatalf("a seed lost during login should be skipped: %v", err)
	}
	defer c.Close()
	if c.Addr() != fc.nodes[1].addr() {
		t.Fatalf("ended on %s, want the leader %s", c.Addr(), fc.nodes[1].addr())
	}

	refusing := newFakeServer(t, nil)
	refusing.handle = func(f wire.Frame) [][]byte {
		return [][]byte{replyStatus(refusing.header(f), wire.ErrInvalidCredentials)}
	}
	before := len(fc.nodes[0].received())
	_, err = DialCluster(ctx, []string{refusing.addr(), fc.nodes[0].addr()}, WithCredentials("iggy", "wrong"))
	if CodeOf(err) != wire.ErrInvalidCredentials {
		t.Fatalf("refused sign-in: got %v, want InvalidCredentials", err)
	}
	if got := len(fc.nodes[0].received()); got != before {
		t.Fatalf("a refused sign-in went on to the next seed (%d frames)", got-before)
	}
}
