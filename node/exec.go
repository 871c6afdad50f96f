package node

import (
	"context"
	"errors"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// Execute runs one command for a principal (the HTTP API) through the same
// command layer as a binary frame: reads through read, metadata writes
// through submitMetadataWrite and the metadata group, partition writes
// through sendMessages / offsetWrite and the partition's group, polls
// through poll. body is the command's binary request body; the answer is
// the binary reply body (result section removed) or the error code a
// binary client would get.
func (n *Node) Execute(ctx context.Context, p Principal, code wire.CommandCode, body []byte) ([]byte, wire.ErrorCode) {
	op, ok := code.Operation()
	if !ok {
		return nil, wire.ErrInvalidCommand
	}
	switch op.Class() {
	case wire.ClassNonReplicated:
		return n.executeRead(p, code, body)
	case wire.ClassMetadata:
		return n.executeMetadata(ctx, p, code, body)
	case wire.ClassPartition:
		return n.executePartition(ctx, p, op, body, true)
	}
	return nil, wire.ErrInvalidCommand
}

// SendMessagesNoWait admits a SendMessages body like Execute but only
// queues the proposal (HTTP ack=none): it is validated, authorised and
// dispatched, and commits asynchronously.
func (n *Node) SendMessagesNoWait(ctx context.Context, p Principal, body []byte) wire.ErrorCode {
	_, code := n.executePartition(ctx, p, wire.OpSendMessages, body, false)
	return code
}

func (n *Node) executeRead(p Principal, code wire.CommandCode, body []byte) ([]byte, wire.ErrorCode) {
	v := principalView(p, nil)
	if code == wire.CodePollMessages {
		a := n.poll(v, body)
		if a.code != wire.OK {
			return nil, a.code
		}
		if a.frame == nil {
			return a.body, wire.OK
		}
		out := append([]byte(nil), a.frame[wire.HeaderSize:]...)
		transport.ReleaseFrame(a.frame)
		return out, wire.OK
	}
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return nil, bodyErrorCode(err)
	}
	return n.read(origin{remote: p.Remote}, v, req)
}

// Control writes of a principal are replayed in place while the metadata
// primary answers a transient (spec §12.3: HTTP callers have no SDK retry
// loop): the same session, request number and bytes, so consensus
// deduplicates a replay of a write that did commit.
const (
	controlReplayWindow = 30 * time.Second
	controlReplayPause  = 50 * time.Millisecond
)

// executeMetadata proposes a metadata write in the principal's session,
// registered on first use and again after an eviction (an evicted request
// was never applied, so proposing it again cannot apply it twice).
func (n *Node) executeMetadata(ctx context.Context, p Principal, code wire.CommandCode, body []byte) ([]byte, wire.ErrorCode) {
	s, idle, ok := n.principals.acquire(p, time.Now())
	n.logoutPrincipals(idle)
	if !ok {
		return nil, wire.ErrCannotEstablishConnection
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fence == 0 {
		if out := n.registerPrincipal(ctx, s); out.kind != consensus.ReplyCommitted {
			return nil, transientCode(out)
		}
	}
	s.request++
	req, cmd, extra, status := n.prepareMetadataWrite(principalView(p, s), metadataSlot{
		session: s.fence, request: s.request, checksum: xxh3.Hash(body) ^ uint64(code),
	}, code, body)
	if status != wire.OK {
		return nil, status
	}
	deadline := time.Now().Add(controlReplayWindow)
	evicted, notCommitted := false, false
	for {
		out := n.proposeMetadataWrite(ctx, req, cmd, extra)
		switch out.kind {
		case consensus.ReplyCommitted:
			result, payload, err := wire.DecodeResult(out.body)
			if err != nil {
				n.log.Error("BUG: committed metadata reply without a result section", "code", code, "err", err)
				return nil, wire.ErrError
			}
			return payload, result
		case consensus.ReplyEvictNoSession, consensus.ReplyEvictSessionTooLow:
			s.fence = 0
			if evicted {
				return nil, wire.ErrCannotEstablishConnection
			}
			evicted = true
			if out := n.registerPrincipal(ctx, s); out.kind != consensus.ReplyCommitted {
				return nil, transientCode(out)
			}
			s.request++
			req.Session, req.Request = s.fence, s.request
			continue
		case consensus.ReplyNotCommitted:
			notCommitted = true // sticky: an earlier attempt may still commit
		case consensus.ReplyNotAccepted, consensus.ReplyDropped:
		default:
			return nil, transientCode(out)
		}
		if !n.isMetadataPrimary() || ctx.Err() != nil || errors.Is(out.err, errDriverStopped) ||
			time.Now().Add(controlReplayPause).After(deadline) {
			if notCommitted {
				return nil, wire.ErrTransientNotCommitted
			}
			return nil, transientCode(out)
		}
		select {
		case <-ctx.Done():
		case <-time.After(controlReplayPause):
		}
	}
}

// transientCode maps an outcome that is not a commit to its error code, as
// answerTransient does for a connection.
func transientCode(out outcome) wire.ErrorCode {
	switch out.kind {
	case consensus.ReplyNotAccepted, consensus.ReplyDropped:
		return wire.ErrTransientNotAccepted
	case consensus.ReplyAlreadyApplied:
		return wire.ErrRequestAlreadyApplied
	case consensus.ReplyEvictNoSession, consensus.ReplyEvictSessionTooLow:
		return wire.ErrCannotEstablishConnection
	}
	if errors.Is(out.err, errDriverStopped) {
		return wire.ErrTransientNotAccepted
	}
	return wire.ErrTransientNotCommitted
}

// executePartition runs SendMessages or a consumer-offset write. Partition
// writes need no client session (the partition groups do not keep one); a
// node that is a backup of the partition's group answers 58.
func (n *Node) executePartition(ctx context.Context, p Principal, op wire.Operation, body []byte, await bool) ([]byte, wire.ErrorCode) {
	v := principalView(p, nil)
	switch op {
	case wire.OpSendMessages:
		// The body is ours: whether the proposal still references it does
		// not matter (it is never reused).
		conf, code, _ := n.sendMessages(ctx, v, sendIdentity{}, body, await)
		if code != wire.OK {
			return nil, code
		}
		return wire.AppendSendMessagesReply(nil, &conf), wire.OK
	case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		result, status := n.offsetWrite(ctx, v, op, body)
		if status != wire.OK {
			return nil, status
		}
		code, payload, err := wire.DecodeResult(result)
		if err != nil {
			return nil, wire.ErrError
		}
		return payload, code
	}
	return nil, wire.ErrInvalidCommand
}

// CheckPassword verifies a username and password as a binary login does:
// the failed-login limiter first, argon2 in a hashing slot off the event
// loop. Every failure (unknown user, wrong password, inactive user, bad
// lengths, limited) is InvalidCredentials, indistinguishable on purpose.
func (n *Node) CheckPassword(ctx context.Context, remote, username, password string) (uint32, wire.ErrorCode) {
	address := sourceIP(remote)
	if !n.logins.allow(address, username) {
		if n.loginRefusalLog.allow() {
			n.log.Warn("http login refused: too many failed attempts from this address or for this user (logged at most once a second)",
				"remote", remote, "username", username)
		}
		return 0, wire.ErrInvalidCredentials
	}
	var uid, code uint32
	if !n.credentials.run(ctx.Done(), func() { uid, code = n.state.VerifyPassword(username, password) }) {
		return 0, wire.ErrTransientNotAccepted
	}
	if code != metadata.CodeOK {
		n.logins.failed(address, username)
		return 0, wire.ErrInvalidCredentials
	}
	return uid, wire.OK
}

// CheckPAT resolves a raw personal access token to its owner: 53 for an
// unknown or expired token, 47 for an inactive owner.
func (n *Node) CheckPAT(token string) (uint32, wire.ErrorCode) {
	uid, code := n.state.VerifyPAT(token, nowMicros())
	switch code {
	case metadata.CodeOK:
		return uid, wire.OK
	case metadata.CodeUserInactive:
		return 0, wire.ErrUserInactive
	}
	return 0, wire.ErrInvalidPersonalAccessToken
}
