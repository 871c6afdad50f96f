package node

import (
	"net"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// handleRegister binds a session (LoginRegister / LoginRegisterWithPat):
// version gate, credentials checked here (argon2 runs on this connection's
// goroutine, never on the event loop), then a replicated Register whose
// commit op is the session fence (wire-protocol §2.3–§2.5).
func (n *Node) handleRegister(c *transport.Conn, s *session, hdr wire.RequestHeader, body []byte) {
	version, _, err := wire.DecodeClientVersionInfo(body)
	if err != nil {
		n.evict(c, s, hdr.Client, wire.EvictMalformedLogin)
		return
	}
	if !wire.VersionAccepted(version.ProtocolVersion) {
		n.evict(c, s, hdr.Client, wire.EvictIncompatibleProtocol)
		return
	}
	shapes, err := wire.DecodeRegisterShapes(body)
	if err != nil {
		n.evict(c, s, hdr.Client, wire.EvictMalformedLogin)
		return
	}
	if v := s.view(); v.bound {
		// Already bound: replay the existing session, no new commit.
		n.sendOK(c, hdr, n.registerReplyBody(v.userID, v.fence))
		return
	}
	// Failed logins are limited per source address and per username; a
	// refused attempt is answered like a wrong password without running
	// argon2 (or the token lookup).
	address := sourceIP(c.RemoteAddr())
	limitUser := ""
	if shapes.Password != nil {
		limitUser = shapes.Password.Username
	}
	if !n.logins.allow(address, limitUser) {
		if n.loginRefusalLog.allow() {
			n.log.Warn("login refused: too many failed attempts from this address or for this user (logged at most once a second)",
				"conn", c.ID(), "remote", c.RemoteAddr(), "username", limitUser)
		}
		n.failLogin(c, s, hdr.Client, wire.EvictInvalidCredentials)
		return
	}
	userID, reason, ok := n.registerCredentials(c, shapes)
	if !ok {
		if reason == 0 {
			return // closed while waiting for a hashing slot (login deadline)
		}
		n.logins.failed(address, limitUser)
		n.failLogin(c, s, hdr.Client, reason)
		return
	}
	out := n.sessionPropose(n.lifetime, consensus.Request{
		Client: toConsensus(hdr.Client), Operation: consensus.OperationRegister, UserID: userID,
		Body: []byte{n.topo.self}, // the node holding the connection (ghost-session release)
	})
	if out.kind != consensus.ReplyCommitted {
		n.answerTransient(c, s, hdr, out)
		return
	}
	if out.body == nil {
		// Forwarded: the primary committed it; the reply is built from
		// committed data alone, so it is the one the primary would send.
		out.body = n.registerReplyBody(userID, out.op)
	}
	s.bind(toConsensus(hdr.Client), out.op, userID)
	c.SetAuthenticated(true)
	n.log.Info("session bound", "conn", c.ID(), "remote", c.RemoteAddr(), "user_id", userID, "session", out.op,
		"sdk", version.SDKName, "sdk_version", version.SDKVersion)
	n.sendOK(c, hdr, out.body)
}

// registerCredentials checks a Register body's credentials in upstream's
// order (docs/wire.md): the password reading first; when it does not parse
// or its credentials are rejected, the token reading. A body whose password
// reading was rejected and whose token reading does not parse is answered
// InvalidCredentials (an inactive user answers like a wrong password).
// One refinement: a body that is exactly a password body (what every SDK
// sends) is a password login only, so a wrong password is always
// InvalidCredentials (spec §2.3); upstream would also try such a body as a
// token when it happens to parse as one (e.g. an empty password).
//
// Reason 0 with ok false: the connection closed while waiting for a
// password-hashing slot.
func (n *Node) registerCredentials(c *transport.Conn, shapes wire.RegisterShapes) (uint32, wire.EvictionReason, bool) {
	credentialsRejected := false
	if pw := shapes.Password; pw != nil {
		var uid, code uint32
		if !n.credentials.run(c.Done(), func() { uid, code = n.state.VerifyPassword(pw.Username, pw.Password) }) {
			return 0, 0, false
		}
		if code == metadata.CodeOK {
			return uid, 0, true
		}
		if shapes.PasswordExact {
			return 0, wire.EvictInvalidCredentials, false
		}
		credentialsRejected = true
	}
	if pat := shapes.Token; pat != nil {
		uid, code := n.state.VerifyPAT(pat.Token, nowMicros())
		switch code {
		case metadata.CodeOK:
			return uid, 0, true
		case metadata.CodeUserInactive:
			return 0, wire.EvictUserInactive, false
		default:
			return 0, wire.EvictInvalidToken, false
		}
	}
	if credentialsRejected {
		return 0, wire.EvictInvalidCredentials, false
	}
	return 0, wire.EvictMalformedLogin, false
}

// failedLoginAnswerDelay holds back the eviction that answers a failed or
// refused login (on that connection's goroutine only), so a client looping
// on bad credentials makes about one attempt per second per connection
// instead of thousands of cheap refusals, each a connection set-up and
// teardown that costs every other client CPU.
const failedLoginAnswerDelay = time.Second

// failLogin answers a failed or refused login after failedLoginAnswerDelay
// (sooner if the connection closes meanwhile).
func (n *Node) failLogin(c *transport.Conn, s *session, client wire.Uint128, reason wire.EvictionReason) {
	t := time.NewTimer(failedLoginAnswerDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.Done():
		return
	case <-n.lifetime.Done():
	}
	n.evict(c, s, client, reason)
}

// sourceIP is the IP part of a connection's "ip:port".
func sourceIP(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// registerReplyBody is the result-framed Register reply (§2.4). It is built
// from committed data only, so a replayed copy is byte-identical.
func (n *Node) registerReplyBody(userID uint32, session uint64) []byte {
	return wire.RegisterReply{
		UserID: userID, Session: session,
		ProtocolVersion: wire.ProtocolVersion, ServerVersion: ServerVersion,
	}.Append(wire.AppendResultOK(nil))
}

// handleLogout releases the session (§2.7). On an unbound connection it
// still answers OK.
func (n *Node) handleLogout(c *transport.Conn, s *session, hdr wire.RequestHeader) {
	v := s.view()
	if !v.bound {
		n.sendOK(c, hdr, nil)
		return
	}
	out := n.sessionPropose(n.lifetime, consensus.Request{
		Client: v.client, Session: hdr.Session, Request: hdr.Request,
		Checksum: hdr.RequestChecksum.Lo, Operation: consensus.OperationLogout, UserID: v.userID,
	})
	switch out.kind {
	case consensus.ReplyCommitted:
		s.unbind()
		c.SetAuthenticated(false) // pre-login frame bound and login deadline again
		n.sendOK(c, hdr, nil)
	case consensus.ReplyEvictNoSession:
		n.evict(c, s, hdr.Client, wire.EvictNoSession)
	case consensus.ReplyEvictSessionTooLow:
		n.evict(c, s, hdr.Client, wire.EvictSessionTooLow)
	case consensus.ReplyNotCommitted:
		n.sendStatus(c, hdr, wire.ErrTransientNotCommitted)
	default:
		n.sendStatus(c, hdr, wire.ErrTransientNotAccepted)
	}
}
