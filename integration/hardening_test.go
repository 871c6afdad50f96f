package integration

import (
	"crypto/rand"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Connection hardening (issue 15, points 1–4). Attackers connect from other
// loopback addresses (127.0.0.x) than the healthy clients (127.0.0.1).

// dialRawFrom is dialRaw with the source address local.
func dialRawFrom(t *testing.T, addr, local string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, local, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var id [16]byte
	_, _ = rand.Read(id[:])
	return &rawConn{t: t, c: c, client: wire.Uint128{Lo: binary.LittleEndian.Uint64(id[:]) | 1, Hi: binary.LittleEndian.Uint64(id[8:])}}
}

// registerAs sends a password Register on r.
func (r *rawConn) registerAs(username, password string) {
	r.t.Helper()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(r.t, username, password, wire.ProtocolVersion)))
}

// Point 1: a peer that has not logged in cannot announce a frame larger
// than the largest pre-login request: it is closed from the header, before
// any body byte is budgeted, so four of them announcing 64 MiB no longer
// starve a logged-in client's large frames.
func TestUnauthenticatedLargeFrameClosedFromHeader(t *testing.T) {
	srv := startServer(t, "")
	for range 4 {
		a := dialRawFrom(t, srv.addr, "127.0.0.2")
		h := make([]byte, wire.HeaderSize)
		binary.LittleEndian.PutUint32(h[48:], wire.FrameSizeMax)
		h[60] = 5
		a.write(h)
		a.expectClosed()
	}
	// The largest legal Register still gets through (an eviction for the
	// unknown user, not a close without answer).
	big := dialRaw(t, srv.addr)
	long := strings.Repeat("x", 255)
	body, err := wire.RegisterRequest{Kind: wire.RegisterWithPassword,
		Version:  wire.ClientVersionInfo{ProtocolVersion: wire.ProtocolVersion, SDKName: long, SDKVersion: long},
		Username: long, Password: long, ClientContext: strings.Repeat("c", wire.ClientContextBytesMax)}.Encode()
	must(t, err)
	big.write(big.request(wire.RequestHeader{Operation: wire.OpRegister}, body))
	big.expectEviction(wire.EvictInvalidCredentials)

	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err = c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	start := time.Now()
	sendOK(t, c, id(0), id(0), partitionID(0), makeLargeMessages(1000, 1000))
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 1 MB send took %s", d)
	}
}

func makeLargeMessages(count, size int) []wire.BatchMessageInput {
	msgs := make([]wire.BatchMessageInput, count)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{OriginTimestamp: 1, Payload: make([]byte, size)}
		msgs[i].ID[0], msgs[i].ID[1] = byte(i), byte(i>>8)
	}
	return msgs
}

// Point 3 (and 1): connections that never log in, or that leave a frame
// half sent, are closed; a logged-in idle connection is not.
func TestIdleAndHalfOpenConnectionsClosed(t *testing.T) {
	// login_timeout 3 s: the logins below must finish within it even on a
	// loaded machine (argon2); the silent connections are closed after it.
	srv := startServer(t, "", "IGGY_TCP_LOGIN_TIMEOUT=3s", "IGGY_TCP_FRAME_READ_TIMEOUT=1s")
	idle := dialRaw(t, srv.addr)
	idle.login()

	silent := dialRawFrom(t, srv.addr, "127.0.0.2")
	pinging := dialRawFrom(t, srv.addr, "127.0.0.2")
	pinging.ping()
	loggedTrickle := dialRaw(t, srv.addr)
	loggedTrickle.login()
	ping := loggedTrickle.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, nil)
	trickleDone := make(chan struct{})
	go func() {
		defer close(trickleDone)
		for i := range ping {
			if _, err := loggedTrickle.c.Write(ping[i : i+1]); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	silent.expectClosed()
	pinging.expectClosed()
	loggedTrickle.expectClosed()
	<-trickleDone

	time.Sleep(500 * time.Millisecond) // idle beyond both timeouts by now
	idle.ping()
	if !strings.Contains(srv.logs.String(), "no login within login_timeout") ||
		!strings.Contains(srv.logs.String(), "frame not received within frame_read_timeout") {
		t.Fatal("closes not logged with their reason")
	}
}

// Point 3: one source address holds at most connections_per_address_max
// connections; other addresses still connect.
func TestConnectionsPerAddressCapped(t *testing.T) {
	srv := startServer(t, "", "IGGY_TCP_CONNECTIONS_PER_ADDRESS_MAX=8")
	for range 8 {
		dialRawFrom(t, srv.addr, "127.0.0.2").ping()
	}
	dialRawFrom(t, srv.addr, "127.0.0.2").expectClosed()
	dialRawFrom(t, srv.addr, "127.0.0.3").ping()
	c := rootClient(t, srv.addr)
	_, err := c.GetStreams(testCtx(t))
	must(t, err)
}

// Point 2: a client that pipelines polls and never reads is paused, not
// closed and not served without bound; once it reads, every reply arrives.
func TestNeverReadingPollerPausedNotDropped(t *testing.T) {
	srv := startServer(t, "", "IGGY_TCP_SEND_QUEUE_BYTES_MAX=1MiB")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	sendOK(t, c, id(0), id(0), partitionID(0), makeLargeMessages(1000, 1000))

	p := dialRaw(t, srv.addr)
	session := p.login()
	poll := wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
		Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 1000}
	frame := p.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePollMessages,
		Session: session, Request: 1}, poll.Append(nil))
	const polls = 200 // ~200 MB of replies; the old 64-frame queue overflowed and closed
	go func() {
		for range polls {
			if _, err := p.c.Write(frame); err != nil {
				return
			}
		}
	}()
	time.Sleep(2 * time.Second)
	// The server is still responsive to others meanwhile.
	_, err = c.GetStreams(ctx)
	must(t, err)
	for i := range polls {
		f, err := p.tryRead(20 * time.Second)
		if err != nil {
			t.Fatalf("poll reply %d of %d: %v", i+1, polls, err)
		}
		if h, err := wire.DecodeReplyHeader(f); err != nil || h.Status != wire.OK {
			t.Fatalf("poll reply %d: %v status %d", i+1, err, h.Status)
		}
	}
}

// Point 4: failed logins are limited per source address and per user;
// a refused attempt is answered InvalidCredentials without checking the
// password (even a correct one).
func TestFailedLoginsLimitedPerAddressAndUser(t *testing.T) {
	srv := startServer(t, "", "IGGY_LOGIN_FAILED_ATTEMPTS_PER_ADDRESS_MAX=3",
		"IGGY_LOGIN_FAILED_ATTEMPTS_PER_USER_MAX=3", "IGGY_LOGIN_FAILED_ATTEMPTS_REFILL_INTERVAL=1h")
	root := rootClient(t, srv.addr)
	_, err := root.CreateUser(testCtx(t), "alice", "alice-secret", wire.UserActive, nil)
	must(t, err)

	// Per address: three failures for unknown users from 127.0.0.3, then
	// even root's correct password from there is refused.
	for _, user := range []string{"ghost1", "ghost2", "ghost3"} {
		a := dialRawFrom(t, srv.addr, "127.0.0.3")
		a.registerAs(user, "wrong-password")
		a.expectEviction(wire.EvictInvalidCredentials)
	}
	a := dialRawFrom(t, srv.addr, "127.0.0.3")
	a.registerAs("iggy", "iggy")
	a.expectEviction(wire.EvictInvalidCredentials)

	// Per user: three failures for alice from three addresses, then alice's
	// correct password from a fourth is refused; root is unaffected.
	for _, from := range []string{"127.0.0.4", "127.0.0.5", "127.0.0.6"} {
		b := dialRawFrom(t, srv.addr, from)
		b.registerAs("alice", "not-alice")
		b.expectEviction(wire.EvictInvalidCredentials)
	}
	b := dialRawFrom(t, srv.addr, "127.0.0.7")
	b.registerAs("alice", "alice-secret")
	b.expectEviction(wire.EvictInvalidCredentials)

	ok := dialRawFrom(t, srv.addr, "127.0.0.8")
	ok.login()
	rootClient(t, srv.addr)
	if !strings.Contains(srv.logs.String(), "login refused: too many failed attempts") {
		t.Fatal("refusal not logged")
	}
	if strings.Contains(srv.logs.String(), "alice-secret") || strings.Contains(srv.logs.String(), "wrong-password") {
		t.Fatal("a password reached the log")
	}
}
