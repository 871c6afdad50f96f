package bus

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/lodestream/lodestream/consensus"
)

// Refusal says why a handshake did not complete; the bus counts each.
type Refusal uint8

const (
	RefusedUnknownCommand  Refusal = iota // wrong frame for its position (either side)
	RefusedClusterMismatch                // hello for another cluster
	RefusedDirection                      // dialer id not below the acceptor's, or outside the roster
	RefusedAuthRequired                   // auth on here, the dialer sent no nonce
	RefusedMACMismatch                    // a MAC verified under neither key
	RefusedByPeer                         // dialer: the acceptor answered a nonzero status
	RefusedTLS                            // TLS handshake, version, ALPN or exporter failure
	RefusedTimeout                        // handshake_grace elapsed
	RefusedIO                             // connection error or EOF mid-handshake
	refusalCount
)

var refusalNames = [refusalCount]string{
	"unknown_command", "cluster_mismatch", "directional_rule", "auth_required", "mac_mismatch",
	"refused_by_peer", "tls", "timeout", "io",
}

// String is the stable label used in logs and metrics.
func (r Refusal) String() string {
	if r < refusalCount {
		return refusalNames[r]
	}
	return fmt.Sprintf("refusal_%d", uint8(r))
}

// HandshakeError is a failed handshake. It never carries key material,
// nonces or MACs.
type HandshakeError struct {
	Reason Refusal
	Peer   uint8  // announced or dialed peer id (as far as known)
	Status Status // RefusedByPeer: the status the acceptor sent
	Err    error  // underlying I/O or TLS error, if any
}

func (e *HandshakeError) Error() string {
	msg := fmt.Sprintf("replica handshake with replica %d refused: %s", e.Peer, e.Reason)
	if e.Reason == RefusedByPeer {
		msg += " (" + e.Status.String() + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// handshaker holds one node's identity for both handshake halves.
type handshaker struct {
	cluster      consensus.Uint128
	selfID       uint8
	replicaCount uint8
	auth         *Auth // nil: auth off (the hello's id is trusted)
}

func statusRefusal(s Status) Refusal {
	switch s {
	case StatusClusterMismatch:
		return RefusedClusterMismatch
	case StatusDirectionalRule:
		return RefusedDirection
	case StatusAuthRequired:
		return RefusedAuthRequired
	case StatusMACMismatch:
		return RefusedMACMismatch
	}
	return RefusedUnknownCommand
}

// handshakeFrame builds a header-only handshake frame (unsealed: checksum
// and checksum_body zero, view and release zero).
func (hs *handshaker) handshakeFrame(cmd Command) []byte {
	f := make([]byte, HeaderBytes)
	putU128(f[offCluster:], hs.cluster)
	le.PutUint32(f[offSize:], HeaderBytes)
	f[offCommand] = byte(cmd)
	f[offReplica] = hs.selfID
	return f
}

func ioRefusal(peer uint8, err error) *HandshakeError {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &HandshakeError{Reason: RefusedTimeout, Peer: peer, Err: err}
	}
	return &HandshakeError{Reason: RefusedIO, Peer: peer, Err: err}
}

// readHandshakeFrame reads one 256-byte handshake frame. A frame that
// declares a body is not a handshake frame.
func readHandshakeFrame(conn net.Conn, peer uint8) ([]byte, *HandshakeError) {
	f := make([]byte, HeaderBytes)
	if _, err := io.ReadFull(conn, f); err != nil {
		return nil, ioRefusal(peer, err)
	}
	if FrameSize(f) != HeaderBytes {
		// Read as a wrong command: nothing after it is parsed.
		f[offCommand] = 0
	}
	return f, nil
}

// accept runs the acceptor half on conn (deadline set by the caller) and
// returns the verified peer id. On refusal of a dialer that speaks the
// authenticated protocol it answers a ReplicaChallenge with the status, so
// the dialer logs the cause; other refusals are log-only.
func (hs *handshaker) accept(conn net.Conn, binding Binding) (uint8, *HandshakeError) {
	hello, herr := readHandshakeFrame(conn, 0)
	if herr != nil {
		return 0, herr
	}
	peer := hello[offReplica]
	hasNonce := !allZero(hello[offHsNonce : offHsNonce+NonceBytes])
	nackable := hs.auth != nil && hasNonce
	refuse := func(s Status, nack bool) (uint8, *HandshakeError) {
		if nack {
			f := hs.handshakeFrame(CommandReplicaChallenge)
			f[offHsStatus] = byte(s)
			_, _ = conn.Write(f) // best effort: the connection closes next
		}
		return peer, &HandshakeError{Reason: statusRefusal(s), Peer: peer}
	}
	if FrameCommand(hello) != CommandReplicaHello {
		return refuse(StatusUnknownCommand, nackable)
	}
	if getU128(hello[offCluster:]) != hs.cluster {
		return refuse(StatusClusterMismatch, nackable)
	}
	if peer >= hs.replicaCount || peer >= hs.selfID {
		return refuse(StatusDirectionalRule, nackable)
	}
	if hs.auth == nil {
		return peer, nil
	}
	if !hasNonce {
		return refuse(StatusAuthRequired, false)
	}
	t := Transcript{Cluster: hs.cluster, DialerID: peer, AcceptorID: hs.selfID, Binding: binding}
	copy(t.NonceD[:], hello[offHsNonce:])
	nonceA, err := newNonce()
	if err != nil {
		return peer, &HandshakeError{Reason: RefusedIO, Peer: peer, Err: err}
	}
	t.NonceA = nonceA
	macA := hs.auth.AcceptorMAC(&t)
	challenge := hs.handshakeFrame(CommandReplicaChallenge)
	copy(challenge[offHsNonce:], nonceA[:])
	copy(challenge[offHsMAC:], macA[:])
	if _, err := conn.Write(challenge); err != nil {
		return peer, ioRefusal(peer, err)
	}
	finish, herr := readHandshakeFrame(conn, peer)
	if herr != nil {
		return peer, herr
	}
	// The dialer no longer reads handshake frames: refusals are log-only.
	if FrameCommand(finish) != CommandReplicaFinish {
		return refuse(StatusUnknownCommand, false)
	}
	if !hs.auth.VerifyDialerMAC(&t, finish[offHsMAC:offHsMAC+MACBytes]) {
		return refuse(StatusMACMismatch, false)
	}
	return peer, nil
}

// dial runs the dialer half on conn towards peer (deadline set by the
// caller). With auth off it only announces itself.
func (hs *handshaker) dial(conn net.Conn, peer uint8, binding Binding) *HandshakeError {
	hello := hs.handshakeFrame(CommandReplicaHello)
	if hs.auth == nil {
		if _, err := conn.Write(hello); err != nil {
			return ioRefusal(peer, err)
		}
		return nil
	}
	nonceD, err := newNonce()
	if err != nil {
		return &HandshakeError{Reason: RefusedIO, Peer: peer, Err: err}
	}
	copy(hello[offHsNonce:], nonceD[:])
	if _, err := conn.Write(hello); err != nil {
		return ioRefusal(peer, err)
	}
	challenge, herr := readHandshakeFrame(conn, peer)
	if herr != nil {
		return herr
	}
	if FrameCommand(challenge) != CommandReplicaChallenge {
		return &HandshakeError{Reason: RefusedUnknownCommand, Peer: peer}
	}
	if s := readStatus(challenge[offHsStatus]); s != StatusOK {
		return &HandshakeError{Reason: RefusedByPeer, Peer: peer, Status: s}
	}
	t := Transcript{Cluster: hs.cluster, DialerID: hs.selfID, AcceptorID: peer, NonceD: nonceD, Binding: binding}
	copy(t.NonceA[:], challenge[offHsNonce:])
	if !hs.auth.VerifyAcceptorMAC(&t, challenge[offHsMAC:offHsMAC+MACBytes]) {
		return &HandshakeError{Reason: RefusedMACMismatch, Peer: peer}
	}
	macD := hs.auth.DialerMAC(&t)
	finish := hs.handshakeFrame(CommandReplicaFinish)
	copy(finish[offHsMAC:], macD[:])
	if _, err := conn.Write(finish); err != nil {
		return ioRefusal(peer, err)
	}
	return nil
}
