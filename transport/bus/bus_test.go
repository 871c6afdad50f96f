package bus

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testBusConfig() config.MessageBusConfig {
	return config.MessageBusConfig{
		MaxBatch: 16, MaxMessageSize: config.ByteSize(1 << 20), PeerQueueCapacity: 256, PeerQueueBytesMax: config.ByteSize(64 << 20),
		ReconnectPeriod: config.Dur(20 * time.Millisecond), ClosePeerTimeout: config.Dur(500 * time.Millisecond),
		CloseGrace: config.Dur(200 * time.Millisecond), HandshakeGrace: config.Dur(2 * time.Second),
	}
}

// node is one in-process bus with its inbox and log.
type node struct {
	bus   *TCPBus
	inbox chan consensus.Message
	log   *syncBuffer
	addr  string
}

// cluster runs n buses on loopback ephemeral ports.
type cluster struct {
	t     testing.TB
	addrs []string
	nodes []*node
	opts  func(id uint8, o *Options)
}

func newCluster(t testing.TB, n int, opts func(id uint8, o *Options)) *cluster {
	t.Helper()
	c, listeners := unstartedCluster(t, n, opts)
	for i := range n {
		c.start(uint8(i), listeners[i])
	}
	return c
}

// unstartedCluster binds n loopback listeners (the nodes' addresses) and
// returns the cluster with no node started; every started node's bus is
// closed at cleanup.
func unstartedCluster(t testing.TB, n int, opts func(id uint8, o *Options)) (*cluster, []net.Listener) {
	t.Helper()
	c := &cluster{t: t, opts: opts, nodes: make([]*node, n)}
	listeners := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[i] = ln
		c.addrs = append(c.addrs, ln.Addr().String())
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd != nil {
				_ = nd.bus.Close()
			}
		}
	})
	return c, listeners
}

// start (re)starts node id; ln nil rebinds its address.
func (c *cluster) start(id uint8, ln net.Listener) {
	t := c.t
	t.Helper()
	if ln == nil {
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for {
			ln, err = net.Listen("tcp", c.addrs[id])
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("rebind %s: %v", c.addrs[id], err)
		}
	}
	nd := &node{inbox: make(chan consensus.Message, 4096), log: &syncBuffer{}, addr: c.addrs[id]}
	o := Options{
		Cluster: testCluster, SelfID: id, Peers: PeersFromAddrs(c.addrs...), Listener: ln,
		MessageBus: testBusConfig(),
		Logger:     slog.New(slog.NewTextHandler(nd.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnMessage: func(m consensus.Message) {
			select {
			case nd.inbox <- m:
			default:
			}
		},
	}
	if c.opts != nil {
		c.opts(id, &o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	nd.bus = b
	c.nodes[id] = nd
}

func (c *cluster) stop(id uint8) {
	c.t.Helper()
	if err := c.nodes[id].bus.Close(); err != nil {
		c.t.Fatalf("close node %d: %v", id, err)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) allConnected() bool {
	for i, nd := range c.nodes {
		for j := range c.nodes {
			if i != j && !nd.bus.Connected(uint8(j)) {
				return false
			}
		}
	}
	return true
}

// exchange sends a Commit heartbeat between every ordered pair (retrying,
// a fresh connection can be replaced once) and checks each arrives.
func (c *cluster) exchange(tag uint64) {
	c.t.Helper()
	for i, from := range c.nodes {
		for j, to := range c.nodes {
			if i == j {
				continue
			}
			m := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: uint8(i), View: 1, CommitMin: tag, HeartbeatCounter: uint64(i*100 + j)}
			got := false
			deadline := time.Now().Add(5 * time.Second)
			for !got && time.Now().Before(deadline) {
				from.bus.Send(uint8(j), &m)
				timeout := time.After(100 * time.Millisecond)
			drain:
				for {
					select {
					case r := <-to.inbox:
						if r.CommitMin == tag && r.From == uint8(i) && r.HeartbeatCounter == m.HeartbeatCounter && r.To == uint8(j) {
							got = true
							break drain
						}
					case <-timeout:
						break drain
					}
				}
			}
			if !got {
				c.t.Fatalf("message %d→%d (tag %d) never arrived", i, j, tag)
			}
		}
	}
}

// TestBusDeliversEveryKind: each golden message crosses the bus in both
// directions of one connection and arrives as sent, To set to the receiver.
func TestBusDeliversEveryKind(t *testing.T) {
	c := newCluster(t, 2, nil)
	waitFor(t, "connections", c.allConnected)
	for _, tc := range goldenCases() {
		for _, dir := range [][2]uint8{{0, 1}, {1, 0}} {
			m := tc.msg
			m.From, m.To = dir[0], dir[1]
			c.nodes[dir[0]].bus.Send(dir[1], &m)
			select {
			case got := <-c.nodes[dir[1]].inbox:
				if !reflect.DeepEqual(got, m) {
					t.Fatalf("%s %d→%d: got %+v want %+v", tc.name, dir[0], dir[1], got, m)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s %d→%d: not delivered", tc.name, dir[0], dir[1])
			}
		}
	}
	n := uint64(len(goldenCases()))
	waitFor(t, "send counted", func() bool { return c.nodes[0].bus.Stats().FramesSent == n }) // counted after the write returns
	if st := c.nodes[0].bus.Stats(); st.FramesReceived != n || st.FramesInvalid != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestBusDirection: the lower id dials every higher id; the higher id
// never dials, it accepts.
func TestBusDirection(t *testing.T) {
	c := newCluster(t, 3, nil)
	waitFor(t, "connections", c.allConnected)
	for id, want := range [][2]uint64{{2, 0}, {1, 1}, {0, 2}} { // {dialed, accepted}
		st := c.nodes[id].bus.Stats()
		if st.ConnectionsDialed != want[0] || st.ConnectionsAccepted != want[1] {
			t.Errorf("node %d dialed %d accepted %d, want %v", id, st.ConnectionsDialed, st.ConnectionsAccepted, want)
		}
	}
	c.exchange(1)
}

// rawPeer connects to a bus as replica id self (handshake with auth) and
// returns the raw connection.
func rawPeer(t *testing.T, addr string, self uint8, peer uint8, auth *Auth) (net.Conn, *HandshakeError) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	h := handshaker{cluster: testCluster, selfID: self, replicaCount: 3, auth: auth}
	return nc, h.dial(nc, peer, Binding{})
}

// expectClosed waits until the bus closes nc (read returns EOF or reset).
func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection still open")
		}
		return
	}
}

// TestBusRefusals: wrong direction, wrong cluster, wrong key, missing
// auth and a stalled handshake are each refused, counted by reason and
// logged without any secret.
func TestBusRefusals(t *testing.T) {
	key := NewAuth([]byte(secretOld), nil)
	c := newCluster(t, 3, func(id uint8, o *Options) {
		o.Auth = NewAuth([]byte(secretOld), nil)
		o.MessageBus.HandshakeGrace = config.Dur(300 * time.Millisecond)
		o.MessageBus.ReconnectPeriod = config.Dur(time.Hour) // keep the real peers quiet after the first dials
	})
	waitFor(t, "connections", c.allConnected)
	target := c.nodes[1]
	refusedBy := func(r Refusal) func() bool {
		return func() bool { return target.bus.Stats().Refused(r) >= 1 }
	}

	// Higher id dials lower: refused with a status the dialer reads.
	nc, herr := rawPeer(t, target.addr, 2, 1, key)
	if herr == nil || herr.Reason != RefusedByPeer || herr.Status != StatusDirectionalRule {
		t.Fatalf("direction: dialer got %v", herr)
	}
	expectClosed(t, nc)
	waitFor(t, "directional refusal", refusedBy(RefusedDirection))

	// Wrong key: the dialer rejects the acceptor's MAC; a finish with a
	// wrong MAC is refused by the acceptor (see the handshake tests).
	_, herr = rawPeer(t, target.addr, 0, 1, NewAuth([]byte(secretBad), nil))
	if herr == nil || herr.Reason != RefusedMACMismatch {
		t.Fatalf("wrong key: dialer got %v", herr)
	}

	// Auth required: a plaintext hello is refused (log-only).
	nc, herr = rawPeer(t, target.addr, 0, 1, nil)
	if herr != nil {
		t.Fatalf("plain hello write: %v", herr)
	}
	expectClosed(t, nc)
	waitFor(t, "auth_required refusal", refusedBy(RefusedAuthRequired))

	// Wrong cluster.
	nc, err := net.Dial("tcp", target.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	other := handshaker{cluster: consensus.Uint128{Lo: 1}, selfID: 0, replicaCount: 3, auth: key}
	if herr := other.dial(nc, 1, Binding{}); herr == nil || herr.Status != StatusClusterMismatch {
		t.Fatalf("cluster: dialer got %v", herr)
	}
	waitFor(t, "cluster refusal", refusedBy(RefusedClusterMismatch))

	// A stalled handshake is cut at handshake_grace.
	stall, err := net.Dial("tcp", target.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	start := time.Now()
	expectClosed(t, stall)
	if el := time.Since(start); el < 250*time.Millisecond || el > 3*time.Second {
		t.Fatalf("stalled handshake cut after %v (handshake_grace 300ms)", el)
	}
	waitFor(t, "timeout refusal", refusedBy(RefusedTimeout))

	// The real peers stay connected and no secret reaches the logs.
	if !c.allConnected() {
		t.Fatal("a refusal disturbed the established connections")
	}
	c.exchange(7)
	for i, nd := range c.nodes {
		logs := nd.log.String()
		for _, secret := range []string{secretOld, secretBad} {
			if strings.Contains(logs, secret) {
				t.Fatalf("node %d logged a secret", i)
			}
		}
	}
	if !strings.Contains(target.log.String(), "reason=directional_rule") {
		t.Fatalf("refusal not logged with its reason:\n%s", target.log.String())
	}
}

// TestBusWrongKeyNeverConnects: nodes holding different PSKs refuse each
// other on every retry.
func TestBusWrongKeyNeverConnects(t *testing.T) {
	c := newCluster(t, 2, func(id uint8, o *Options) {
		s := secretOld
		if id == 1 {
			s = secretBad
		}
		o.Auth = NewAuth([]byte(s), nil)
	})
	waitFor(t, "refusals", func() bool { return c.nodes[0].bus.Stats().Refused(RefusedMACMismatch) >= 3 })
	if c.nodes[0].bus.Connected(1) || c.nodes[1].bus.Connected(0) {
		t.Fatal("connected with different keys")
	}
}

// TestBusInvalidFrameDroppedPeerStays: a garbage frame is counted and
// dropped; the next valid frame on the same connection is delivered. A
// frame claiming another sender is invalid too.
func TestBusInvalidFrameDroppedPeerStays(t *testing.T) {
	c := newCluster(t, 3, nil)
	waitFor(t, "connections", c.allConnected)
	c.stop(0) // replaced by the raw peer below
	target := c.nodes[1]
	nc, herr := rawPeer(t, target.addr, 0, 1, nil)
	if herr != nil {
		t.Fatal(herr)
	}
	waitFor(t, "raw peer installed", func() bool { return target.bus.Connected(0) })
	codec := NewCodec(testCluster)
	good := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 0, View: 3, CommitMin: 9}
	frame, _ := codec.Encode(nil, &good)
	bad := bytes.Clone(frame)
	bad[152] ^= 1 // breaks the seal
	spoof := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 2, View: 3, CommitMin: 10}
	spoofed, _ := codec.Encode(nil, &spoof)
	unknown := bytes.Clone(frame)
	unknown[offCommand] = 99
	for _, f := range [][]byte{bad, spoofed, unknown, frame} {
		if _, err := nc.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-target.inbox:
		want := good
		want.To = 1
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("valid frame after invalid ones not delivered")
	}
	if st := target.bus.Stats(); st.FramesInvalid != 3 || st.FramesReceived != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !target.bus.Connected(0) {
		t.Fatal("invalid frames closed the connection")
	}
}

// TestBusOversizeFrameClosesConnection: a frame declaring more than
// max_message_size (or less than a header) closes that connection only.
func TestBusOversizeFrameClosesConnection(t *testing.T) {
	for name, size := range map[string]uint32{"above max": 1<<20 + 1, "below header": 255} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 3, nil)
			waitFor(t, "connections", c.allConnected)
			c.stop(0)
			target := c.nodes[1]
			nc, herr := rawPeer(t, target.addr, 0, 1, nil)
			if herr != nil {
				t.Fatal(herr)
			}
			waitFor(t, "raw peer installed", func() bool { return target.bus.Connected(0) })
			h := make([]byte, HeaderBytes)
			le.PutUint32(h[offSize:], size)
			if _, err := nc.Write(h); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, nc)
			waitFor(t, "oversize counted", func() bool { return target.bus.Stats().ConnectionsClosedOversize == 1 })
			waitFor(t, "peer forgotten", func() bool { return !target.bus.Connected(0) })
			if !target.bus.Connected(2) {
				t.Fatal("another peer's connection was closed")
			}
		})
	}
}

// TestBusSendDropsOversize: a message above max_message_size is never sent.
func TestBusSendDropsOversize(t *testing.T) {
	c := newCluster(t, 2, nil)
	waitFor(t, "connections", c.allConnected)
	p := samplePrepare()
	p.Body = make([]byte, 1<<20)
	c.nodes[0].bus.Send(1, &consensus.Message{Kind: consensus.MsgPrepare, From: 0, View: 1, Prepare: &p})
	if st := c.nodes[0].bus.Stats(); st.FramesDroppedOversize != 1 || st.FramesSent != 0 {
		t.Fatalf("stats %+v", st)
	}
	c.nodes[0].bus.Send(0, &consensus.Message{Kind: consensus.MsgCommit})  // self
	c.nodes[0].bus.Send(9, &consensus.Message{Kind: consensus.MsgCommit})  // not in the roster
	c.nodes[0].bus.Send(1, &consensus.Message{Kind: consensus.MsgPrepare}) // does not encode
	if st := c.nodes[0].bus.Stats(); st.FramesDroppedNotConnected != 2 || st.FramesDroppedEncode != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// pipeBus is a bus with one peer (1) installed on a net.Pipe, so the test
// controls when the writer can make progress.
func pipeBus(t *testing.T, mb config.MessageBusConfig) (*TCPBus, net.Conn) {
	t.Helper()
	b, err := New(Options{Cluster: testCluster, SelfID: 0, Peers: PeersFromAddrs("127.0.0.1:1", "127.0.0.1:2"),
		MessageBus: mb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnMessage: func(consensus.Message) {}})
	if err != nil {
		t.Fatal(err)
	}
	local, remote := net.Pipe()
	b.install(1, local, "pipe", "dialer")
	t.Cleanup(func() { _ = remote.Close(); _ = b.Close() })
	return b, remote
}

// TestBusQueueOverflowDropsAndCounts: with the peer not reading, the
// writer holds one batch and the queue peer_queue_capacity frames; every
// further Send is dropped and counted, without blocking.
func TestBusQueueOverflowDropsAndCounts(t *testing.T) {
	mb := testBusConfig()
	mb.PeerQueueCapacity, mb.MaxBatch = 4, 1
	b, remote := pipeBus(t, mb)
	m := consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1}
	const sends = 50
	start := time.Now()
	for range sends {
		b.Send(1, &m)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("Send blocked for %v", el)
	}
	dropped := b.Stats().FramesDroppedQueueFull
	if dropped < sends-5 || dropped > sends-4 {
		t.Fatalf("dropped %d of %d with capacity 4", dropped, sends)
	}
	// Once the peer reads, the queued frames (and only those) go out.
	go func() { _, _ = io.Copy(io.Discard, remote) }()
	waitFor(t, "queue drained", func() bool { return b.Stats().FramesSent == sends-dropped })
}

// TestBusWriterCoalesces: frames queued while a write is in progress go
// out together, at most max_batch per write.
func TestBusWriterCoalesces(t *testing.T) {
	mb := testBusConfig()
	mb.MaxBatch = 8
	b, remote := pipeBus(t, mb)
	m := consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1}
	const sends = 41
	for range sends {
		b.Send(1, &m)
	}
	go func() { _, _ = io.Copy(io.Discard, remote) }()
	waitFor(t, "all sent", func() bool { return b.Stats().FramesSent == sends })
	st := b.Stats()
	if st.LargestBatch != 8 || st.WriteBatches >= sends {
		t.Fatalf("largest batch %d, %d writes for %d frames (max_batch 8)", st.LargestBatch, st.WriteBatches, sends)
	}
}

// TestBusCloseBounded: Close returns within close_peer_timeout +
// close_grace even when a peer stopped reading mid-write.
func TestBusCloseBounded(t *testing.T) {
	mb := testBusConfig()
	mb.ClosePeerTimeout, mb.CloseGrace = config.Dur(200*time.Millisecond), config.Dur(100*time.Millisecond)
	b, _ := pipeBus(t, mb)
	m := consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1}
	for range 10 {
		b.Send(1, &m)
	}
	start := time.Now()
	_ = b.Close()
	if el := time.Since(start); el > time.Second {
		t.Fatalf("Close took %v", el)
	}
	if b.Connected(1) {
		t.Fatal("still connected after Close")
	}
}

// TestBusCloseFlushesQueue: a graceful Close delivers what was queued.
func TestBusCloseFlushesQueue(t *testing.T) {
	c := newCluster(t, 2, nil)
	waitFor(t, "connections", c.allConnected)
	for i := range 100 {
		c.nodes[0].bus.Send(1, &consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1, CommitMin: uint64(i)})
	}
	c.stop(0)
	for i := range 100 {
		select {
		case got := <-c.nodes[1].inbox:
			if got.CommitMin != uint64(i) {
				t.Fatalf("frame %d arrived as %d", i, got.CommitMin)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("frame %d lost on close", i)
		}
	}
}

// TestBusReconnects: after either side restarts, the lower id redials
// within reconnect_period and traffic resumes.
func TestBusReconnects(t *testing.T) {
	c := newCluster(t, 3, nil)
	waitFor(t, "connections", c.allConnected)
	for _, id := range []uint8{2, 0, 1} {
		c.stop(id)
		c.start(id, nil)
		waitFor(t, "reconnected", c.allConnected)
		c.exchange(uint64(id) + 100)
	}
}

// TestBusRotationThreeSteps rolls a PSK rotation through three in-process
// nodes, one node restart at a time: (1) shared=old, previous=new;
// (2) shared=new, previous=old; (3) shared=new. After every restart all
// pairs reconnect and exchange messages. Finally a node still on the old
// key alone is refused by the rotated cluster.
func TestBusRotationThreeSteps(t *testing.T) {
	keys := make([]*Auth, 3)
	for i := range keys {
		keys[i] = NewAuth([]byte(secretOld), nil)
	}
	c := newCluster(t, 3, func(id uint8, o *Options) { o.Auth = keys[id] })
	waitFor(t, "connections", c.allConnected)
	c.exchange(1)
	steps := []struct{ shared, previous string }{
		{secretOld, secretNew}, {secretNew, secretOld}, {secretNew, ""},
	}
	tag := uint64(10)
	for s, step := range steps {
		for _, id := range []uint8{1, 0, 2} {
			c.stop(id)
			keys[id] = NewAuth([]byte(step.shared), []byte(step.previous))
			c.start(id, nil)
			waitFor(t, "connections after a rolling restart", c.allConnected)
			tag++
			c.exchange(tag)
		}
		t.Logf("rotation step %d done", s+1)
	}
	refusedBefore := c.nodes[0].bus.Stats().Refused(RefusedMACMismatch) + c.nodes[2].bus.Stats().Refused(RefusedMACMismatch)
	c.stop(1)
	keys[1] = NewAuth([]byte(secretOld), nil)
	c.start(1, nil)
	waitFor(t, "the retired key refused", func() bool {
		return c.nodes[0].bus.Stats().Refused(RefusedMACMismatch)+c.nodes[1].bus.Stats().Refused(RefusedMACMismatch) > refusedBefore
	})
	if c.nodes[1].bus.Connected(0) || c.nodes[1].bus.Connected(2) {
		t.Fatal("a node on the retired key connected")
	}
}

// TestBusTLS: TLS 1.3 with a self-signed certificate and the PSK bound to
// the session exporter connects every pair and carries messages.
func TestBusTLS(t *testing.T) {
	c := newCluster(t, 3, func(id uint8, o *Options) {
		o.Auth = NewAuth([]byte(secretOld), nil)
		tc, err := NewTLSConfig(config.ClusterTLSConfig{Enabled: true, SelfSigned: true}, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		o.TLS = tc
	})
	waitFor(t, "tls connections", c.allConnected)
	c.exchange(5)
	for _, tc := range goldenCases() {
		m := tc.msg
		m.From, m.To = 0, 2
		c.nodes[0].bus.Send(2, &m)
		select {
		case got := <-c.nodes[2].inbox:
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("%s over TLS: got %+v", tc.name, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s over TLS not delivered", tc.name)
		}
	}
}

// TestBusTLSRefusesPlaintextDialer: a plaintext hello to a TLS listener
// fails the TLS handshake and is counted.
func TestBusTLSRefusesPlaintextDialer(t *testing.T) {
	c := newCluster(t, 2, func(id uint8, o *Options) {
		o.Auth = NewAuth([]byte(secretOld), nil)
		tc, err := NewTLSConfig(config.ClusterTLSConfig{Enabled: true, SelfSigned: true}, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		o.TLS = tc
	})
	waitFor(t, "tls connections", c.allConnected)
	nc, _ := rawPeer(t, c.nodes[1].addr, 0, 1, NewAuth([]byte(secretOld), nil))
	expectClosed(t, nc)
	waitFor(t, "tls refusal", func() bool { return c.nodes[1].bus.Stats().Refused(RefusedTLS) >= 1 })
	if !c.allConnected() {
		t.Fatal("the real TLS connection was disturbed")
	}
}

// TestBusRedialsADroppedConnectionAtOnce: a connection dropped under a
// live peer comes back without waiting for reconnect_period (an hour
// here), so a connection that stays down means a gone peer (the metadata
// group's failure detection relies on it, node/primary_watch.go).
func TestBusRedialsADroppedConnectionAtOnce(t *testing.T) {
	c := newCluster(t, 2, func(_ uint8, o *Options) {
		o.MessageBus.ReconnectPeriod = config.Dur(time.Hour)
	})
	waitFor(t, "connections", c.allConnected)
	for round := range 3 {
		dialed := c.nodes[0].bus.Stats().ConnectionsDialed
		// The accepting side drops it: the dialer (node 0) sees it close.
		c.nodes[1].bus.peers[0].conn.Load().close(false)
		waitFor(t, "the dialer to redial", func() bool { return c.nodes[0].bus.Stats().ConnectionsDialed > dialed && c.allConnected() })
		c.exchange(uint64(round) + 200)
	}
}

// TestPeerQueueBoundedInBytes: peer_queue_bytes_max bounds what waits for
// one peer; a frame larger than the budget still goes when nothing else
// waits, and written batches give their bytes back.
func TestPeerQueueBoundedInBytes(t *testing.T) {
	b := &TCPBus{queueCapacity: 64, queueBytesMax: 1000}
	pc := newPeerConn(b, 1, nil)
	frame := func(n int) outFrame { return outFrame{head: make([]byte, 100), body: make([]byte, n-100)} }
	if !pc.enqueue(frame(400)) || !pc.enqueue(frame(400)) {
		t.Fatal("frames within the byte budget refused")
	}
	if pc.enqueue(frame(400)) {
		t.Fatal("a frame beyond the byte budget queued")
	}
	if pc.enqueue(frame(5000)) {
		t.Fatal("a frame larger than the budget queued behind others")
	}
	pc.dequeued(batchBytes(pc.fill(nil, 64)))
	if got := pc.queued.Load(); got != 0 {
		t.Fatalf("queued bytes after the batch was written: %d", got)
	}
	if !pc.enqueue(frame(5000)) {
		t.Fatal("a frame larger than the budget refused with nothing queued")
	}
	if pc.enqueue(frame(200)) {
		t.Fatal("a frame queued behind one that already exceeds the budget")
	}
}

// TestPeerQueueBytesReturnAfterWrites: the bytes of frames the writer sent
// leave the byte budget. The count must be taken before write, which
// clears the batch: taken after it, nothing was released, and once 128 MiB
// had passed (a few seconds of produce load) every frame to the peer was
// dropped and the cluster crawled on retransmits. Here the budget is 1 KiB
// and 40 rounds of 256-byte frames pass it many times over.
func TestPeerQueueBytesReturnAfterWrites(t *testing.T) {
	c := newCluster(t, 2, func(_ uint8, o *Options) {
		o.MessageBus.PeerQueueBytesMax = config.ByteSize(1 << 10)
	})
	waitFor(t, "connections", c.allConnected)
	for round := range 40 {
		c.exchange(uint64(round) + 300)
	}
	waitFor(t, "the budget to drain", func() bool {
		return c.nodes[0].bus.peers[1].conn.Load().queued.Load() == 0 && c.nodes[1].bus.peers[0].conn.Load().queued.Load() == 0
	})
	if d := c.nodes[0].bus.Stats().FramesDroppedQueueFull + c.nodes[1].bus.Stats().FramesDroppedQueueFull; d != 0 {
		t.Fatalf("%d frames dropped at a queue holding nothing", d)
	}
}
