package node

import (
	"context"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
)

// Ghost memberships (cluster mode): a consumer-group membership records
// the node that held the member's connection (the metadata primary when
// it joined). When that connection is gone without a logout — its node
// crashed, restarted or is unreachable — the membership would keep its
// partitions assigned to a dead member. Two sweeps release them:
//
//   - every node releases the memberships bound to itself whose client has
//     no live session here (after a restart: all of them), with a Logout
//     proposed through the primary (forwarded from a follower);
//   - the metadata primary releases the memberships bound to a peer whose
//     replica-bus connection has been down for ghostAfter (two heartbeat
//     timeouts: the peer is dead or cut off, and its clients with it).
const (
	ghostSweepInterval = time.Second
	ghostSweepMax      = 64               // releases proposed per sweep
	ghostRetryAfter    = 10 * time.Second // before the same client is tried again
)

type ghostSweeper struct {
	downSince map[uint8]time.Time
	tried     map[metadata.ClientID]time.Time
	// suspects are this node's bindings without a live session at the
	// previous sweep: one is released only if it is still one now, since
	// a Register is applied before its connection binds the session.
	suspects map[metadata.ClientID]uint64
}

func newGhostSweeper() *ghostSweeper {
	return &ghostSweeper{downSince: map[uint8]time.Time{}, tried: map[metadata.ClientID]time.Time{},
		suspects: map[metadata.ClientID]uint64{}}
}

func (n *Node) sweepGhosts(ctx context.Context, g *ghostSweeper, now time.Time, ghostAfter time.Duration) {
	for c, at := range g.tried {
		if now.Sub(at) > ghostRetryAfter {
			delete(g.tried, c)
		}
	}
	primary := n.isMetadataPrimary()
	for p := uint8(0); p < n.topo.count; p++ {
		if p == n.topo.self || n.bus == nil || n.bus.Connected(p) {
			delete(g.downSince, p)
			continue
		}
		if _, ok := g.downSince[p]; !ok {
			g.downSince[p] = now
		}
	}
	st := n.driver.status.Load()
	if st == nil || st.status != statusNormal || st.commitMin != st.commitMax {
		return // not caught up: the state may not show the latest joins and leaves
	}
	budget := ghostSweepMax
	// Own connections: a membership bound here whose client has no live
	// session here was left by an earlier boot or a lost connection. The
	// memberships are read before the sessions: a join needs a bound
	// session, so every member listed was bound before the session scan.
	own := n.boundAt(n.topo.self)
	live := map[metadata.ClientID]bool{}
	for _, s := range n.sessions.all() {
		if v := s.view(); v.bound {
			live[metadata.ClientID(v.client)] = true
		}
	}
	suspects := make(map[metadata.ClientID]uint64)
	for _, m := range own {
		if live[m.Client] {
			continue
		}
		suspects[m.Client] = m.Session
		if epoch, ok := g.suspects[m.Client]; !ok || epoch != m.Session {
			continue // first seen without a session: wait one sweep
		}
		if budget == 0 || !g.attempt(m.Client, now) {
			continue
		}
		budget--
		n.releaseGhost(ctx, m, n.topo.self, primary)
	}
	g.suspects = suspects
	if !primary {
		return
	}
	for p, since := range g.downSince {
		if now.Sub(since) < ghostAfter {
			continue
		}
		for _, m := range n.boundAt(p) {
			if budget == 0 {
				return
			}
			if !g.attempt(m.Client, now) {
				continue
			}
			budget--
			n.releaseGhost(ctx, m, p, true)
		}
	}
}

// boundAt lists the sessions registered through node and the clients with
// group memberships joined through it (one entry per client; the
// session's epoch when both know it).
func (n *Node) boundAt(node uint8) []metadata.BoundMember {
	sessions := n.state.SessionsBoundAt(node)
	seen := make(map[metadata.ClientID]bool, len(sessions))
	for _, s := range sessions {
		seen[s.Client] = true
	}
	for _, m := range n.state.MembersBoundAt(node) {
		if !seen[m.Client] {
			sessions = append(sessions, m)
		}
	}
	return sessions
}

func (g *ghostSweeper) attempt(c metadata.ClientID, now time.Time) bool {
	if _, ok := g.tried[c]; ok {
		return false
	}
	g.tried[c] = now
	return true
}

// releaseGhost logs the member's session out (its Logout releases every
// membership of the client); on the primary, a client the client table no
// longer knows has its memberships removed directly.
func (n *Node) releaseGhost(ctx context.Context, m metadata.BoundMember, node uint8, primary bool) {
	rctx, cancel := context.WithTimeout(ctx, forwardWait)
	defer cancel()
	out := n.sessionPropose(rctx, consensus.Request{
		Client: consensus.Uint128(m.Client), Session: m.Session, Request: disconnectRequestID,
		Operation: consensus.OperationLogout,
	})
	switch {
	case out.kind == consensus.ReplyCommitted:
		n.log.Info("logged out the session of a vanished connection", "bound_at", node, "session", m.Session)
	case primary && out.kind == consensus.ReplyEvictNoSession:
		if _, err := n.proposeInternal(rctx, metadata.RemoveConsumerGroupMember{Client: m.Client}); err != nil {
			n.log.Warn("releasing a vanished member's groups not committed", "bound_at", node, "err", err)
			return
		}
		n.log.Info("released the group memberships of a vanished client", "bound_at", node)
	default:
		n.log.Debug("ghost membership release not committed; retried later", "bound_at", node, "outcome", out.kind)
	}
}
