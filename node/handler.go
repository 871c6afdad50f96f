package node

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// disconnectLogoutTimeout bounds the replicated Logout a closed connection
// submits for its session.
const disconnectLogoutTimeout = 5 * time.Second

// disconnectRequestID is the request id of the Logout a disconnect submits
// (u64::MAX: above any watermark, never reused by a client).
const disconnectRequestID = ^uint64(0)

// Opened registers a session for a new connection.
func (n *Node) Opened(c *transport.Conn) { n.sessions.add(c) }

// Closed releases the connection's session: a replicated Logout, which also
// releases its consumer-group memberships when applied.
func (n *Node) Closed(c *transport.Conn) {
	s, ok := n.sessions.get(c.ID())
	n.sessions.remove(c.ID())
	if !ok {
		return
	}
	if v, was := s.unbind(); was {
		n.logoutReplicated(v, disconnectRequestID)
	}
}

func (n *Node) logoutReplicated(v sessionView, request uint64) {
	ctx, cancel := context.WithTimeout(n.lifetime, disconnectLogoutTimeout)
	defer cancel()
	out := n.sessionPropose(ctx, consensus.Request{
		Client: v.client, Session: v.fence, Request: request,
		Operation: consensus.OperationLogout, UserID: v.userID,
	})
	switch {
	case out.kind == consensus.ReplyCommitted || errors.Is(out.err, errDriverStopped):
	case out.err == nil && (out.kind == consensus.ReplyEvictSessionTooLow || out.kind == consensus.ReplyEvictNoSession):
		// The client re-registered under its client id (the leader-aware
		// client keeps it across reconnects): the newer session superseded
		// this one, nothing is left to log out.
		n.log.Debug("session logout superseded by a newer session", "conn", v.connID, "kind", out.kind)
	default:
		n.log.Warn("session logout not committed", "conn", v.connID, "kind", out.kind, "err", out.err)
	}
}

// HandleFrame answers one request frame. Every frame gets an answer: a
// reply, an eviction, or (for sizes outside the frame bounds, handled by
// transport) a close.
func (n *Node) HandleFrame(c *transport.Conn, frame []byte) {
	defer func() {
		// A panic here is a bug in decoding or dispatch (state changes only
		// happen on the driver goroutine): keep the server and every other
		// connection alive, answer with a generic error and drop this one.
		if r := recover(); r != nil {
			n.log.Error("BUG: panic while handling a frame", "conn", c.ID(), "remote", c.RemoteAddr(),
				"panic", r, "stack", string(debug.Stack()))
			if hdr, err := wire.DecodeRequestHeader(frame); err == nil {
				c.Send(wire.EncodeReply(nil, hdr, wire.ErrError, nil))
			}
			c.CloseAfterFlush()
		}
	}()
	s, ok := n.sessions.get(c.ID())
	if !ok || s.view().evicted {
		return
	}
	hdr, err := wire.DecodeRequestHeader(frame)
	if err != nil {
		n.log.Debug("request header refused", "conn", c.ID(), "err", err)
		n.replyHeaderError(c, hdr)
		return
	}
	if n.requests != nil {
		defer n.requests.ObserveBinaryRequest(hdr.Operation, hdr.Code, len(frame), time.Now())
	}
	body := frame[wire.HeaderSize:]
	if !wire.RequestChecksumValid(hdr, body) {
		n.sendStatus(c, hdr, wire.ErrInvalidFormat)
		return
	}
	switch hdr.Operation.Class() {
	case wire.ClassRegister:
		n.handleRegister(c, s, hdr, body)
	case wire.ClassLogout:
		n.handleLogout(c, s, hdr)
	case wire.ClassNonReplicated:
		n.handleNonReplicated(c, s, hdr, body)
	case wire.ClassMetadata:
		n.handleMetadataWrite(c, s, hdr, body)
	case wire.ClassPartition:
		n.handlePartitionWrite(c, s, hdr, body)
	default:
		n.sendStatus(c, hdr, wire.ErrInvalidCommand)
	}
}

// replyHeaderError answers a header that broke a §1.2 rule with status
// InvalidCommand, echoing the request id (upstream drops such frames
// silently; we never leave a client waiting). An undeclared operation is
// answered as NonReplicated so the reply itself stays decodable.
func (n *Node) replyHeaderError(c *transport.Conn, hdr wire.RequestHeader) {
	if !hdr.Operation.ClientSendable() {
		hdr.Operation = wire.OpNonReplicated
	}
	n.sendStatus(c, hdr, wire.ErrInvalidCommand)
}

func (n *Node) sendStatus(c *transport.Conn, hdr wire.RequestHeader, code wire.ErrorCode) {
	c.Send(wire.EncodeReply(nil, hdr, code, nil))
}

func (n *Node) sendOK(c *transport.Conn, hdr wire.RequestHeader, body []byte) {
	c.Send(wire.EncodeReply(nil, hdr, wire.OK, body))
}

// sendResultRejection answers a result-framed operation with a rejection in
// its result section (status 0): committed rejections and metadata-plane
// transients.
func (n *Node) sendResultRejection(c *transport.Conn, hdr wire.RequestHeader, code wire.ErrorCode) {
	n.sendOK(c, hdr, wire.AppendResultRejection(nil, code))
}

// evict sends a session-terminal eviction and closes the connection once it
// is written; the session is released by Closed.
func (n *Node) evict(c *transport.Conn, s *session, client wire.Uint128, reason wire.EvictionReason) {
	if !s.markEvicted() {
		return
	}
	var version, versionMin uint32
	if reason == wire.EvictIncompatibleProtocol {
		version, versionMin = wire.ProtocolVersion, wire.ProtocolVersionMin
	}
	f := wire.EncodeEviction(client, reason, version, versionMin)
	n.log.Info("evicting client", "conn", c.ID(), "remote", c.RemoteAddr(), "reason", reason.String())
	c.SendThenClose(f[:])
}

// answerTransient maps the consensus outcomes that are not a commit to the
// wire answer of a result-framed metadata-plane request. It reports whether
// it answered.
func (n *Node) answerTransient(c *transport.Conn, s *session, hdr wire.RequestHeader, out outcome) bool {
	switch out.kind {
	case consensus.ReplyCommitted:
		return false
	case consensus.ReplyNotAccepted, consensus.ReplyDropped:
		// Dropped (future session, reused id with other bytes) is answered
		// rather than left silent: never admitted, so NotAccepted is exact.
		n.sendResultRejection(c, hdr, wire.ErrTransientNotAccepted)
	case consensus.ReplyNotCommitted:
		n.sendResultRejection(c, hdr, wire.ErrTransientNotCommitted)
	case consensus.ReplyAlreadyApplied:
		n.sendResultRejection(c, hdr, wire.ErrRequestAlreadyApplied)
	case consensus.ReplyEvictNoSession:
		n.evict(c, s, hdr.Client, wire.EvictNoSession)
	case consensus.ReplyEvictSessionTooLow:
		n.evict(c, s, hdr.Client, wire.EvictSessionTooLow)
	default:
		n.sendResultRejection(c, hdr, wire.ErrTransientNotCommitted)
	}
	return true
}
