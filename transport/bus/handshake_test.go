package bus

import (
	"net"
	"testing"
	"time"
)

// tcpPair returns two ends of a loopback TCP connection (dialer, acceptor)
// with a deadline so no test can hang.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-accepted
	if a == nil {
		t.Fatal("accept failed")
	}
	deadline := time.Now().Add(5 * time.Second)
	_ = d.SetDeadline(deadline)
	_ = a.SetDeadline(deadline)
	t.Cleanup(func() { _ = d.Close(); _ = a.Close() })
	return d, a
}

type hsResult struct {
	peer uint8
	err  *HandshakeError
}

// runHandshake runs dialer.dial(→ peer) and acceptor.accept on a loopback
// pair; the dialer closes its end when done (as the bus does on failure).
func runHandshake(t *testing.T, dialer, acceptor handshaker, peer uint8) (dialErr *HandshakeError, acc hsResult) {
	t.Helper()
	d, a := tcpPair(t)
	done := make(chan hsResult, 1)
	go func() {
		p, err := acceptor.accept(a, Binding{})
		_ = a.Close()
		done <- hsResult{p, err}
	}()
	dialErr = dialer.dial(d, peer, Binding{})
	if dialErr != nil {
		_ = d.Close()
	}
	acc = <-done
	return dialErr, acc
}

func hs(self uint8, auth *Auth) handshaker {
	return handshaker{cluster: testCluster, selfID: self, replicaCount: 3, auth: auth}
}

func TestHandshakeSucceeds(t *testing.T) {
	for name, c := range map[string]struct{ d, a *Auth }{
		"auth off":           {nil, nil},
		"auth on":            {NewAuth([]byte(secretOld), nil), NewAuth([]byte(secretOld), nil)},
		"rotation mid-roll":  {NewAuth([]byte(secretOld), []byte(secretNew)), NewAuth([]byte(secretNew), []byte(secretOld))},
		"rotation step2/new": {NewAuth([]byte(secretNew), []byte(secretOld)), NewAuth([]byte(secretNew), nil)},
	} {
		t.Run(name, func(t *testing.T) {
			dErr, acc := runHandshake(t, hs(0, c.d), hs(2, c.a), 2)
			if dErr != nil || acc.err != nil || acc.peer != 0 {
				t.Fatalf("dial %v, accept %v (peer %d)", dErr, acc.err, acc.peer)
			}
		})
	}
}

// TestHandshakeRefusals: every refusal the acceptor and the dialer make,
// with the reason each side records.
func TestHandshakeRefusals(t *testing.T) {
	key, other := NewAuth([]byte(secretOld), nil), NewAuth([]byte(secretBad), nil)
	otherCluster := hs(0, key)
	otherCluster.cluster.Hi ^= 1
	otherClusterPlain := hs(0, nil)
	otherClusterPlain.cluster.Hi ^= 1
	cases := []struct {
		name             string
		dialer, acceptor handshaker
		peer             uint8
		dialWant         Refusal // refusalCount: dialer succeeds
		acceptWant       Refusal
		peerStatus       Status
	}{
		{"wrong key", hs(0, other), hs(1, key), 1, RefusedMACMismatch, RefusedIO, 0},
		{"cluster mismatch (auth)", otherCluster, hs(1, key), 1, RefusedByPeer, RefusedClusterMismatch, StatusClusterMismatch},
		{"cluster mismatch (plain)", otherClusterPlain, hs(1, nil), 1, refusalCount, RefusedClusterMismatch, 0},
		{"higher id dials lower (auth)", hs(2, key), hs(1, key), 1, RefusedByPeer, RefusedDirection, StatusDirectionalRule},
		{"higher id dials lower (plain)", hs(2, nil), hs(1, nil), 1, refusalCount, RefusedDirection, 0},
		{"equal ids", hs(1, nil), hs(1, nil), 1, refusalCount, RefusedDirection, 0},
		{"id outside the roster", handshaker{cluster: testCluster, selfID: 7, replicaCount: 8}, hs(2, nil), 2, refusalCount, RefusedDirection, 0},
		{"auth required", hs(0, nil), hs(1, key), 1, refusalCount, RefusedAuthRequired, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dErr, acc := runHandshake(t, c.dialer, c.acceptor, c.peer)
			if c.dialWant == refusalCount {
				if dErr != nil {
					t.Fatalf("dialer: %v, want success (auth off: it does not wait for an answer)", dErr)
				}
			} else if dErr == nil || dErr.Reason != c.dialWant || dErr.Status != c.peerStatus {
				t.Fatalf("dialer: %v, want %v (status %v)", dErr, c.dialWant, c.peerStatus)
			}
			if acc.err == nil || acc.err.Reason != c.acceptWant {
				t.Fatalf("acceptor: %v, want %v", acc.err, c.acceptWant)
			}
		})
	}
}

// TestHandshakeAcceptorRefusesBadFinish: a dialer that sends a wrong MAC or
// the wrong command in its finish frame is refused by the acceptor.
func TestHandshakeAcceptorRefusesBadFinish(t *testing.T) {
	key := NewAuth([]byte(secretOld), nil)
	for name, c := range map[string]struct {
		cmd     Command
		corrupt bool
		want    Refusal
	}{
		"mac mismatch":   {CommandReplicaFinish, true, RefusedMACMismatch},
		"wrong command":  {CommandReplicaHello, false, RefusedUnknownCommand},
		"finish correct": {CommandReplicaFinish, false, refusalCount},
	} {
		t.Run(name, func(t *testing.T) {
			d, a := tcpPair(t)
			done := make(chan hsResult, 1)
			acceptor := hs(1, key)
			go func() { p, err := acceptor.accept(a, Binding{}); done <- hsResult{p, err} }()
			dialer := hs(0, key)
			hello := dialer.handshakeFrame(CommandReplicaHello)
			nonceD, _ := newNonce()
			copy(hello[offHsNonce:], nonceD[:])
			if _, err := d.Write(hello); err != nil {
				t.Fatal(err)
			}
			challenge, herr := readHandshakeFrame(d, 1)
			if herr != nil {
				t.Fatal(herr)
			}
			tr := Transcript{Cluster: testCluster, DialerID: 0, AcceptorID: 1, NonceD: nonceD}
			copy(tr.NonceA[:], challenge[offHsNonce:])
			mac := key.DialerMAC(&tr)
			if c.corrupt {
				mac[0] ^= 1
			}
			finish := dialer.handshakeFrame(c.cmd)
			copy(finish[offHsMAC:], mac[:])
			if _, err := d.Write(finish); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if c.want == refusalCount {
				if res.err != nil || res.peer != 0 {
					t.Fatalf("accept: %v", res.err)
				}
				return
			}
			if res.err == nil || res.err.Reason != c.want {
				t.Fatalf("accept: %v, want %v", res.err, c.want)
			}
		})
	}
}

// TestHandshakeUnknownFirstFrame: a first frame that is not a hello (here
// a sealed Commit) is refused; a dialer speaking the authenticated
// protocol gets the status back.
func TestHandshakeUnknownFirstFrame(t *testing.T) {
	d, a := tcpPair(t)
	done := make(chan hsResult, 1)
	acceptor := hs(1, nil)
	go func() { p, err := acceptor.accept(a, Binding{}); done <- hsResult{p, err} }()
	c := NewCodec(testCluster)
	frame, err := c.Encode(nil, &goldenCases()[3].msg) // commit
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Write(frame); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.err == nil || res.err.Reason != RefusedUnknownCommand {
		t.Fatalf("accept: %v", res.err)
	}
}

// TestHandshakeStallCutAtDeadline: a dialer that connects and says nothing
// is refused when the deadline passes.
func TestHandshakeStallCutAtDeadline(t *testing.T) {
	_, a := tcpPair(t)
	_ = a.SetDeadline(time.Now().Add(100 * time.Millisecond))
	start := time.Now()
	acceptor := hs(1, NewAuth([]byte(secretOld), nil))
	_, err := acceptor.accept(a, Binding{})
	if err == nil || err.Reason != RefusedTimeout {
		t.Fatalf("accept: %v, want timeout", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("stall cut after %v", el)
	}
}

// TestHandshakeErrorCarriesNoSecret: the error text names the reason only.
func TestHandshakeErrorCarriesNoSecret(t *testing.T) {
	e := &HandshakeError{Reason: RefusedByPeer, Peer: 2, Status: StatusClusterMismatch}
	if got := e.Error(); got != "replica handshake with replica 2 refused: refused_by_peer (cluster_mismatch)" {
		t.Fatalf("error text %q", got)
	}
}
