package node

import (
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
	userID, reason, ok := n.registerCredentials(shapes)
	if !ok {
		n.evict(c, s, hdr.Client, reason)
		return
	}
	out := n.sessionPropose(n.lifetime, consensus.Request{
		Client: toConsensus(hdr.Client), Operation: consensus.OperationRegister, UserID: userID,
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
func (n *Node) registerCredentials(shapes wire.RegisterShapes) (uint32, wire.EvictionReason, bool) {
	credentialsRejected := false
	if pw := shapes.Password; pw != nil {
		var uid, code uint32
		n.credentials.run(func() { uid, code = n.state.VerifyPassword(pw.Username, pw.Password) })
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
