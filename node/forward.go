package node

import (
	"context"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport/bus"
)

// Forwarded login (server-design §3.11): a follower verifies a login's
// credentials against its own applied user table, then forwards the
// Register (or a Logout) to the metadata primary over the replica bus and
// parks the connection for at most forwardWait. The primary proposes it
// as if it were local and answers with the outcome.
const (
	forwardWait        = 5 * time.Second
	forwardPendingMax  = 4096 // parked forwards on a follower
	forwardServingsMax = 256  // forwards a primary proposes at once
)

// forwarder holds the follower's parked forwards (by nonce) and bounds the
// primary's concurrent servings.
type forwarder struct {
	mu      sync.Mutex
	pending map[consensus.Uint128]chan bus.Forward
	serving chan struct{}
}

func newForwarder() *forwarder {
	return &forwarder{pending: make(map[consensus.Uint128]chan bus.Forward), serving: make(chan struct{}, forwardServingsMax)}
}

// sessionPropose submits a Register or Logout: locally on a single node,
// on the metadata primary, or when no primary is known (consensus answers
// as it must); forwarded to the primary otherwise.
func (n *Node) sessionPropose(ctx context.Context, req consensus.Request) outcome {
	primary, forward := n.forwardTarget()
	if !forward {
		return n.driver.propose(ctx, req, nil)
	}
	f := bus.Forward{From: n.topo.self, Client: req.Client, Nonce: consensus.Uint128{Lo: randomUint64(), Hi: randomUint64()}}
	if st := n.driver.status.Load(); st != nil {
		f.View = st.view
	}
	switch req.Operation {
	case consensus.OperationRegister:
		f.Kind, f.UserID = bus.ForwardRegister, req.UserID
	case consensus.OperationLogout:
		f.Kind, f.Session, f.Request = bus.ForwardLogout, req.Session, req.Request
	default:
		return n.driver.propose(ctx, req, nil)
	}
	if !n.bus.Connected(primary) {
		// No connection to the primary (it may be dead): the request
		// would be dropped and the client parked for nothing. It never
		// entered a pipeline: 58, and the SDK looks for the leader.
		return outcome{kind: consensus.ReplyNotAccepted}
	}
	result, ok := n.forwardAndWait(ctx, primary, f)
	if !ok {
		// Sent, no answer in time: the primary may have committed it.
		return outcome{kind: consensus.ReplyNotCommitted}
	}
	return forwardOutcome(result)
}

// forwardTarget is the metadata primary to forward to: only from a Normal
// follower that knows it (a node in a view change proposes locally and
// gets its NotAccepted).
func (n *Node) forwardTarget() (uint8, bool) {
	if !n.topo.clustered || n.bus == nil {
		return 0, false
	}
	st := n.driver.status.Load()
	if st == nil || st.status != statusNormal || st.primary {
		return 0, false
	}
	primary := uint8(st.view % uint32(n.topo.count))
	if primary == n.topo.self {
		return 0, false
	}
	return primary, true
}

func (n *Node) forwardAndWait(ctx context.Context, to uint8, f bus.Forward) (bus.Forward, bool) {
	fw := n.forwards
	ch := make(chan bus.Forward, 1)
	fw.mu.Lock()
	if len(fw.pending) >= forwardPendingMax {
		fw.mu.Unlock()
		return bus.Forward{Kind: resultKind(f.Kind), Outcome: bus.RegisterOutcomePipelineFull}, true
	}
	fw.pending[f.Nonce] = ch
	fw.mu.Unlock()
	defer func() {
		fw.mu.Lock()
		delete(fw.pending, f.Nonce)
		fw.mu.Unlock()
	}()
	n.bus.SendForward(to, &f)
	timer := time.NewTimer(forwardWait)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return bus.Forward{}, false
}

func resultKind(k bus.ForwardKind) bus.ForwardKind {
	if k == bus.ForwardLogout {
		return bus.ForwardLogoutResult
	}
	return bus.ForwardRegisterResult
}

// forwardOutcome maps a primary's answer to the outcome a local proposal
// would have had (server-design §3.12: NotPrimary and PipelineFull never
// entered a pipeline, InProgress and Canceled may commit).
func forwardOutcome(r bus.Forward) outcome {
	switch r.Kind {
	case bus.ForwardRegisterResult:
		switch r.Outcome {
		case bus.RegisterOutcomeOk:
			return outcome{kind: consensus.ReplyCommitted, op: r.Epoch}
		case bus.RegisterOutcomeNotPrimary, bus.RegisterOutcomePipelineFull, bus.RegisterOutcomeNotCaughtUp:
			return outcome{kind: consensus.ReplyNotAccepted}
		case bus.RegisterOutcomeClientIDOwnedByAnotherUser:
			return outcome{kind: consensus.ReplyEvictNoSession}
		}
	case bus.ForwardLogoutResult:
		switch r.Outcome {
		case bus.LogoutOutcomeOk:
			return outcome{kind: consensus.ReplyCommitted, op: r.Commit}
		case bus.LogoutOutcomeNotPrimary, bus.LogoutOutcomePipelineFull:
			return outcome{kind: consensus.ReplyNotAccepted}
		}
	}
	return outcome{kind: consensus.ReplyNotCommitted}
}

// onForward runs on a bus reader goroutine: results wake the parked
// connection; requests are served on a goroutine of their own (bounded),
// never blocking the reader.
func (n *Node) onForward(f bus.Forward) {
	switch f.Kind {
	case bus.ForwardRegisterResult, bus.ForwardLogoutResult:
		n.forwards.mu.Lock()
		ch := n.forwards.pending[f.Nonce]
		n.forwards.mu.Unlock()
		if ch != nil {
			select {
			case ch <- f:
			default: // a duplicate result
			}
		}
	case bus.ForwardRegister, bus.ForwardLogout:
		select {
		case n.forwards.serving <- struct{}{}:
			go func() {
				defer func() { <-n.forwards.serving }()
				n.serveForward(f)
			}()
		default:
			n.answerForward(f, outcome{kind: consensus.ReplyNotAccepted})
		}
	}
}

// serveForward proposes a forwarded Register or Logout on this node (the
// primary, or consensus answers NotAccepted) and answers the follower.
func (n *Node) serveForward(f bus.Forward) {
	ctx, cancel := context.WithTimeout(n.lifetime, forwardWait)
	defer cancel()
	req := consensus.Request{Client: f.Client, UserID: f.UserID}
	if f.Kind == bus.ForwardRegister {
		req.Operation = consensus.OperationRegister
		req.Body = []byte{f.From} // the session lives on the forwarding node
	} else {
		req.Operation, req.Session, req.Request = consensus.OperationLogout, f.Session, f.Request
	}
	n.answerForward(f, n.driver.propose(ctx, req, nil))
}

func (n *Node) answerForward(f bus.Forward, out outcome) {
	r := bus.Forward{Kind: resultKind(f.Kind), From: n.topo.self, Client: f.Client, Nonce: f.Nonce}
	if st := n.driver.status.Load(); st != nil {
		r.View = st.view
	}
	if r.Kind == bus.ForwardRegisterResult {
		switch out.kind {
		case consensus.ReplyCommitted:
			r.Outcome, r.Epoch = bus.RegisterOutcomeOk, out.op
		case consensus.ReplyNotAccepted, consensus.ReplyDropped:
			r.Outcome = bus.RegisterOutcomeNotPrimary
		case consensus.ReplyEvictNoSession, consensus.ReplyEvictSessionTooLow:
			r.Outcome = bus.RegisterOutcomeClientIDOwnedByAnotherUser
		default:
			r.Outcome = bus.RegisterOutcomeCanceled
		}
	} else {
		switch out.kind {
		case consensus.ReplyCommitted:
			r.Outcome, r.Commit = bus.LogoutOutcomeOk, out.op
		case consensus.ReplyNotAccepted, consensus.ReplyDropped:
			r.Outcome = bus.LogoutOutcomeNotPrimary
		default:
			r.Outcome = bus.LogoutOutcomeCanceled
		}
	}
	n.bus.SendForward(f.From, &r)
}
