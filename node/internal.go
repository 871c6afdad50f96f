package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
)

// internalSession lets the node itself submit metadata commands (the PAT
// cleaner) through the same client table as every client: it registers a
// session of its own (acting as root) on first use and numbers its requests.
type internalSession struct {
	mu      sync.Mutex
	client  consensus.Uint128
	fence   uint64
	request uint64
}

func newInternalSession() *internalSession {
	// Top bit set: never collides with an SDK's random id in practice, and a
	// fresh id per boot keeps it ephemeral like every other session.
	return &internalSession{client: consensus.Uint128{Lo: randomUint64() | 1, Hi: randomUint64() | 1<<63}}
}

// proposeInternal submits cmd as the node's own session.
func (n *Node) proposeInternal(ctx context.Context, cmd metadata.Command) (outcome, error) {
	s := n.internal
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fence == 0 {
		out := n.driver.propose(ctx, consensus.Request{
			Client: s.client, Operation: consensus.OperationRegister, UserID: metadata.RootUserID,
		}, nil)
		if out.kind != consensus.ReplyCommitted {
			return out, fmt.Errorf("register the node's internal session: outcome %d: %v", out.kind, out.err)
		}
		s.fence = out.op
	}
	s.request++
	out := n.driver.propose(ctx, consensus.Request{
		Client: s.client, Session: s.fence, Request: s.request,
		Operation: consensus.Operation(cmd.Kind()), UserID: metadata.RootUserID, Body: metadata.EncodeCommand(cmd),
	}, nil)
	if out.kind == consensus.ReplyEvictNoSession || out.kind == consensus.ReplyEvictSessionTooLow {
		s.fence = 0 // evicted from the table (capacity): register again next time
	}
	if out.kind != consensus.ReplyCommitted {
		return out, fmt.Errorf("internal %T: outcome %d: %v", cmd, out.kind, out.err)
	}
	return out, nil
}

// cleanExpiredTokens deletes expired personal access tokens through
// consensus (the token-cleaner job, every
// personal_access_token.cleaner.interval; login already refuses an expired
// token, this keeps lists and the state small). One cleaner per cluster:
// the metadata primary's.
func (n *Node) cleanExpiredTokens(ctx context.Context, _ time.Time) {
	if !n.isMetadataPrimary() || !n.state.HasExpiredTokens(nowMicros()) {
		return
	}
	if _, err := n.proposeInternal(ctx, metadata.DeleteExpiredTokens{}); err != nil {
		n.log.Warn("expired token cleanup not committed", "err", err)
		return
	}
	n.log.Info("expired personal access tokens deleted")
}
