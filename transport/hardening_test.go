package transport

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// commandLogin marks a test frame that logs the connection in.
const commandLogin = 77

// authHandler echoes like echoHandler; a frame whose byte 60 is
// commandLogin first marks the connection authenticated.
type authHandler struct{ echoHandler }

func (h *authHandler) HandleFrame(c *Conn, f []byte) {
	if f[60] == commandLogin {
		c.SetAuthenticated(true)
	}
	h.echoHandler.HandleFrame(c, f)
}

// dialFrom dials s from the loopback address local (127.0.0.x).
func dialFrom(t *testing.T, s *TCPServer, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func login(t *testing.T, c net.Conn) {
	t.Helper()
	f := frameOf(0, commandLogin)
	if _, err := c.Write(f); err != nil {
		t.Fatal(err)
	}
	readEcho(t, c, f)
}

// expectClosedWithin fails unless the server closes c (EOF or reset)
// within limit.
func expectClosedWithin(t *testing.T, c net.Conn, limit time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s", limit)
	}
}

func expectOpenFor(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("connection closed or sent %d bytes within %s: %v", n, d, err)
	}
	_ = c.SetReadDeadline(time.Time{})
}

// Issue 15 point 1: before login a frame larger than the largest pre-login
// request is refused from its header, so unauthenticated peers cannot hold
// in-flight budget; after login the full frame size is accepted.
func TestPreLoginFrameBoundClosesBeforeBody(t *testing.T) {
	h := &authHandler{}
	s := startServer(t, TCPConfig{FrameBytesMax: 4 << 20, PreLoginFrameBytesMax: 1024}, h)
	for range 4 {
		bad := dial(t, s)
		f := frameOf(0, 5)
		binary.LittleEndian.PutUint32(f[sizeFieldOffset:], 4<<20)
		if _, err := bad.Write(f); err != nil {
			t.Fatal(err)
		}
		expectClosedWithin(t, bad, 2*time.Second)
	}
	if got := s.budget.inUse(); got != 0 {
		t.Fatalf("unauthenticated peers hold %d budget bytes", got)
	}
	ok := dial(t, s)
	small := frameOf(1024-headerBytes, 5)
	if _, err := ok.Write(small); err != nil {
		t.Fatal(err)
	}
	readEcho(t, ok, small)
	login(t, ok)
	big := frameOf(900<<10, 5)
	if _, err := ok.Write(big); err != nil {
		t.Fatal(err)
	}
	readEcho(t, ok, big)
}

// Issue 15 point 1: one source address holds at most its share of the
// in-flight budget (a quarter, at least one largest frame).
func TestInflightBudgetSharePerAddress(t *testing.T) {
	h := &authHandler{}
	s := startServer(t, TCPConfig{FrameBytesMax: 1 << 20, InflightFrameBytesMax: 4 << 20}, h)
	frame := frameOf(600<<10, 5) // pooled at 1 MiB = this address's share
	var hogs []net.Conn
	for range 2 {
		c := dialFrom(t, s, "127.0.0.2")
		login(t, c)
		if _, err := c.Write(frame[:headerBytes+1000]); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, c)
	}
	waitBudget(t, s, 1<<20)
	other := dial(t, s)
	login(t, other)
	if _, err := other.Write(frame); err != nil {
		t.Fatal(err)
	}
	readEcho(t, other, frame)
	time.Sleep(50 * time.Millisecond)
	if got := s.budget.inUse(); got != 1<<20 {
		t.Fatalf("budget in use %d, want the one trickling frame of 127.0.0.2 (%d)", got, 1<<20)
	}
	// Both hogs complete (whichever holds the share first, the other gets
	// it next).
	for _, c := range hogs {
		if _, err := c.Write(frame[headerBytes+1000:]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range hogs {
		readEcho(t, c, frame)
	}
	waitBudget(t, s, 0)
}

// Issue 15 points 1 and 3: a partially read frame has a deadline — a stalled
// header, a header trickled one byte at a time, a stalled body — while an
// idle authenticated connection with no frame started stays open.
func TestPartialFrameReadDeadline(t *testing.T) {
	h := &authHandler{}
	s := startServer(t, TCPConfig{FrameReadTimeout: 300 * time.Millisecond}, h)

	stalledHeader := dial(t, s)
	login(t, stalledHeader)
	if _, err := stalledHeader.Write(frameOf(0, 5)[:10]); err != nil {
		t.Fatal(err)
	}
	expectClosedWithin(t, stalledHeader, 3*time.Second)

	trickle := dial(t, s)
	login(t, trickle)
	f := frameOf(0, 5)
	start := time.Now()
	for i := 0; i < len(f); i++ {
		if _, err := trickle.Write(f[i : i+1]); err != nil {
			break // closed
		}
		time.Sleep(50 * time.Millisecond)
		if time.Since(start) > 5*time.Second {
			t.Fatal("a header trickled one byte at a time was never closed")
		}
	}
	expectClosedWithin(t, trickle, 3*time.Second)

	stalledBody := dial(t, s)
	login(t, stalledBody)
	if _, err := stalledBody.Write(frameOf(1000, 5)[:headerBytes+10]); err != nil {
		t.Fatal(err)
	}
	expectClosedWithin(t, stalledBody, 3*time.Second)

	idle := dial(t, s)
	login(t, idle)
	expectOpenFor(t, idle, time.Second)
	echo := frameOf(10, 5)
	if _, err := idle.Write(echo); err != nil {
		t.Fatal(err)
	}
	readEcho(t, idle, echo)
}

// Issue 15 point 3: a connection that does not log in within LoginTimeout
// is closed, whether silent or pinging; a logged-in one is not; a logout
// re-arms the deadline.
func TestLoginDeadline(t *testing.T) {
	h := &authHandler{}
	s := startServer(t, TCPConfig{LoginTimeout: 400 * time.Millisecond}, h)
	silent := dial(t, s)
	pinging := dial(t, s)
	authed := dial(t, s)
	login(t, authed)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			f := frameOf(0, 5)
			if _, err := pinging.Write(f); err != nil {
				return
			}
			if _, err := ReadFrame(pinging, 256, 1<<20); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	expectClosedWithin(t, silent, 3*time.Second)
	<-done
	expectClosedWithin(t, pinging, 3*time.Second)
	expectOpenFor(t, authed, time.Second)

	onlyConn(t, s, authed.LocalAddr()).SetAuthenticated(false) // as a logout does
	expectClosedWithin(t, authed, 3*time.Second)
}

// Issue 15 point 3: connections per source address are capped; other
// addresses are unaffected.
func TestConnectionsPerAddressCap(t *testing.T) {
	h := &echoHandler{}
	s := startServer(t, TCPConfig{ConnectionsPerAddressMax: 3}, h)
	for range 3 {
		dialFrom(t, s, "127.0.0.2")
	}
	waitFor(t, func() bool { return s.ConnectionCount() == 3 })
	extra := dialFrom(t, s, "127.0.0.2")
	expectClosedWithin(t, extra, 2*time.Second)
	ok := dial(t, s)
	f := frameOf(5, 5)
	if _, err := ok.Write(f); err != nil {
		t.Fatal(err)
	}
	readEcho(t, ok, f)
}

// bigReplyHandler answers every frame with a queued reply of replyBytes.
type bigReplyHandler struct {
	echoHandler
	replyBytes int
}

func (h *bigReplyHandler) HandleFrame(c *Conn, f []byte) {
	h.mu.Lock()
	h.frames++
	h.mu.Unlock()
	c.Send(frameOf(h.replyBytes-headerBytes, 8))
}

func onlyConn(t *testing.T, s *TCPServer, remote net.Addr) *Conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.RemoteAddr() == remote.String() {
			return c
		}
	}
	t.Fatalf("no connection from %s", remote)
	return nil
}

// waitStable waits until the handler's frame count stops moving.
func waitStable(h *bigReplyHandler) int {
	last := -1
	for {
		time.Sleep(200 * time.Millisecond)
		_, _, n := h.counts()
		if n == last {
			return n
		}
		last = n
	}
}

// Issue 15 point 2: a client that pipelines requests and never reads stops
// being read once its queued reply bytes exceed the cap (the queue is
// bounded in bytes, not only frames); nothing is dropped or closed, and
// every reply arrives once it reads.
func TestSlowReaderPausesReadsWithoutDroppingReplies(t *testing.T) {
	const reply, requests = 1 << 20, 60
	h := &bigReplyHandler{replyBytes: reply}
	s := startServer(t, TCPConfig{SendQueueBytesMax: 2 << 20, WriteTimeout: 20 * time.Second, LoginTimeout: time.Minute}, h)
	c := dial(t, s)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	req := frameOf(0, 5)
	go func() {
		for range requests {
			if _, err := c.Write(req); err != nil {
				return
			}
		}
	}()
	handled := waitStable(h)
	t.Logf("handled %d requests before reads paused", handled)
	if handled >= requests/2 {
		t.Fatalf("handled %d of %d pipelined requests while the client read nothing: reads not paused", handled, requests)
	}
	conn := onlyConn(t, s, c.LocalAddr())
	if q := conn.queuedBytes.Load(); q > (2<<20)+reply {
		t.Fatalf("%d reply bytes queued, cap is 2 MiB + one reply", q)
	}
	for i := range requests {
		if _, err := ReadFrame(c, 256, 2<<20); err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, requests, err)
		}
	}
	if _, closed, _ := h.counts(); closed != 0 {
		t.Fatal("connection closed")
	}
	waitFor(t, func() bool { return s.outbound.inUse() == 0 })
}

// Issue 15 point 2: over the server-wide outbound budget a connection with
// replies queued waits, while a lockstep neighbour keeps being served.
func TestOutboundBudgetHoldsSlowConnectionNotHealthyOne(t *testing.T) {
	const reply = 1 << 20
	h := &bigReplyHandler{replyBytes: reply}
	s := startServer(t, TCPConfig{SendQueueBytesMax: 1 << 30, OutboundBytesMax: 2 << 20, WriteTimeout: 20 * time.Second, LoginTimeout: time.Minute}, h)
	slow := dial(t, s)
	_ = slow.SetDeadline(time.Now().Add(30 * time.Second))
	req := frameOf(0, 5)
	go func() {
		for range 60 {
			if _, err := slow.Write(req); err != nil {
				return
			}
		}
	}()
	handled := waitStable(h)
	t.Logf("handled %d requests before reads paused", handled)
	if handled >= 50 {
		t.Fatalf("slow connection had %d requests handled over the outbound budget", handled)
	}
	healthy := dial(t, s)
	// Liveness, not speed: 20 MiB of replies under -race on a loaded
	// machine can outlast dial's 5 s deadline.
	_ = healthy.SetDeadline(time.Now().Add(30 * time.Second))
	for i := range 20 {
		if _, err := healthy.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFrame(healthy, 256, 2<<20); err != nil {
			t.Fatalf("healthy request %d: %v", i, err)
		}
	}
	if s.outbound.inUse() > (2<<20)+2*reply {
		t.Fatalf("outbound bytes %d, budget 2 MiB", s.outbound.inUse())
	}
}

// Issue 15 point 3: at connections_max, idle connections that never log in
// cannot lock new clients out: the oldest unauthenticated one makes room,
// logged-in ones are never closed for it.
func TestFullServerClosesOldestUnauthenticated(t *testing.T) {
	h := &authHandler{}
	s := startServer(t, TCPConfig{ConnectionsMax: 3}, h)
	authed := dial(t, s)
	login(t, authed)
	oldest := dialFrom(t, s, "127.0.0.2")
	waitFor(t, func() bool { return s.ConnectionCount() == 2 })
	newer := dialFrom(t, s, "127.0.0.3")
	waitFor(t, func() bool { return s.ConnectionCount() == 3 })
	arriving := dial(t, s)
	expectClosedWithin(t, oldest, 2*time.Second)
	login(t, arriving)
	expectOpenFor(t, newer, 100*time.Millisecond)
	f := frameOf(3, 5)
	if _, err := authed.Write(f); err != nil {
		t.Fatal(err)
	}
	readEcho(t, authed, f)
	waitFor(t, func() bool { return s.ConnectionCount() == 3 })
}
