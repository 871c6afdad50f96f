package client

import (
	"context"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Exactly-once sends (issue 10 point 3; docs/client.md "Exactly-once sends").
//
// The server's partition dedup window (node/partition_dedup.go) recognises a replayed SendMessages
// when its request id has the top bit set, keyed on (user, client id, request id, batch checksum),
// the last 128 per (user, client id) per partition; an id below a full window answers
// RequestAlreadyApplied (59). So every SendMessages gets its own request id with that bit (a counter
// of its own: metadata request ids are untouched), a DialCluster client keeps its client id across
// reconnects and signs in again under it (connectLocked), and a send whose outcome is unknown — no
// reply (timeout, connection lost) or TransientNotCommitted — is replayed with the same client id,
// request id and body on whichever node accepts it, within the request budget. The window answers
// the original confirmation when the first copy committed, so the messages are stored once.
//
// Where that cannot hold, the caller gets an *ExactlyOnceError, never a silent duplicate.

// sendRequestFlag is the request id bit that asks the server to recognise replays
// (node/partition_dedup.go dedupRequestFlag).
const sendRequestFlag = uint64(1) << 63

// DefaultSendAttemptTimeout bounds one attempt of a DialCluster send: a reply that does not come
// within it is treated as lost, the connection is dropped and the send is replayed (same request
// id) on a fresh one while the request budget lasts.
const DefaultSendAttemptTimeout = 10 * time.Second

// WithSendAttemptTimeout sets how long a DialCluster client waits for one SendMessages reply before
// it replays the send on a new connection (default 10 s; the whole budget is WithResponseTimeout).
func WithSendAttemptTimeout(d time.Duration) Option {
	return func(c *config) { c.sendAttemptTimeout = d }
}

// ExactlyOnceError reports a SendMessages whose exactly-once delivery the client cannot assure:
// the messages may be stored once, or not at all (never twice through this client). Sending them
// again as a new send can duplicate them. Err is the cause: a *TimeoutError or a
// TransientNotCommitted (57) *Error when the budget ended with the outcome unknown,
// RequestAlreadyApplied (59) when a replay fell below the server's dedup window, or the connection
// failure on a node that keeps no replicated dedup state. client.CodeOf and IsTimeout see through
// it.
type ExactlyOnceError struct {
	RequestID uint64 // the send's request id (top bit set)
	Addr      string // the node of the last attempt
	Attempts  int    // frames sent for this send
	Reason    string
	Err       error
}

func (e *ExactlyOnceError) Error() string {
	return fmt.Sprintf("SendMessages request %#x: exactly-once not assured (%s) after %d attempts, last at %s: %v",
		e.RequestID, e.Reason, e.Attempts, e.Addr, e.Err)
}

func (e *ExactlyOnceError) Unwrap() error { return e.Err }

// sendMessages runs one encoded SendMessages body under its own request id: for a DialCluster
// client with the owner map and the exactly-once replays; for a Dial client on its one connection
// (TransientNotCommitted replays only, now recognised by the server).
func (c *Client) sendMessages(ctx context.Context, key ownerKey, body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends++
	request := sendRequestFlag | c.sends
	deadline := time.Now().Add(c.cfg.responseTimeout)
	if c.cluster == nil {
		h, err := c.stampSendLocked(request)
		if err != nil {
			return nil, err
		}
		r, err := c.exchangeWithReplaysLocked(ctx, wire.CodeSendMessages, h, wire.EncodeRequest(nil, h, body), deadline)
		if err != nil {
			return nil, err
		}
		return r.payload, nil
	}
	return c.clusterSendLocked(ctx, key, request, body, deadline)
}

func (c *Client) stampSendLocked(request uint64) (wire.RequestHeader, error) {
	h, err := c.stampLocked(wire.OpSendMessages, wire.CodeSendMessages)
	h.Request = request
	return h, err
}

// sendRun is the state of one DialCluster send.
type sendRun struct {
	key      ownerKey
	request  uint64
	attempts int
	// unknown: some copy may have reached a primary (no reply, or 57), so a new node may only see a
	// replay, never a fresh stamp, and the budget's end is an ExactlyOnceError.
	unknown bool
	cause   error // what made the outcome unknown (the first such error)
	last    error
	refused map[string]bool // nodes that answered 58 in the current walk round
	round   int             // completed walk rounds (every known node refused)
}

// clusterSendLocked is the exactly-once send of a DialCluster client.
func (c *Client) clusterSendLocked(ctx context.Context, key ownerKey, request uint64, body []byte, deadline time.Time) ([]byte, error) {
	const code = wire.CodeSendMessages
	if c.closed {
		return nil, &Error{Code: wire.ErrDisconnected, Command: code, Err: c.broken}
	}
	run := &sendRun{key: key, request: request, refused: map[string]bool{}}
	for {
		if err := ctx.Err(); err != nil {
			return nil, run.giveUp(c, &Error{Code: wire.ErrDisconnected, Command: code, Err: err})
		}
		if !time.Now().Before(deadline) {
			return nil, run.giveUp(c, nil)
		}
		if c.broken != nil {
			if run.unknown && !c.cluster.replicatedDedup() {
				// One node keeps its dedup window in memory only: after a reconnect it may have
				// restarted and forgotten the first copy, so a replay could store it twice.
				return nil, run.fail(c, "the server keeps no replicated dedup window (single node), and the outcome is unknown", run.cause)
			}
			if err := c.recoverLocked(ctx, code, deadline); err != nil {
				run.last = err
				sleepCtx(ctx, min(backoffOf(run.round+1), time.Until(deadline)))
				continue
			}
		}
		c.routeLocked(ctx, run, deadline)
		if c.broken != nil {
			continue
		}
		payload, err := c.sendAttemptLocked(ctx, run, body, deadline)
		if err == nil {
			c.cluster.owners.set(key, c.addr)
			if run.unknown {
				c.cluster.stats.Replayed++
			}
			if run.attempts > 1 {
				c.cluster.stats.Retried++
			}
			return payload, nil
		}
		run.last = err
		switch ec := CodeOf(err); {
		case ec == wire.ErrRequestAlreadyApplied:
			return nil, run.fail(c, "the replay is older than the server's dedup window; the first copy was stored", err)
		case ec == wire.ErrTransientNotCommitted:
			if err := run.becomeUnknown(c, err); err != nil {
				return nil, err
			}
			sleepCtx(ctx, min(c.cfg.replayInterval, time.Until(deadline)))
		case ec == wire.ErrTransientNotAccepted:
			// Not the owner: a routing signal. Forget the entry, pull metadata, walk.
			c.cluster.stats.NotOwner++
			c.cluster.owners.drop(key)
			run.refused[c.addr] = true
			c.notOwnerLocked(ctx, run, deadline)
		case c.broken != nil && ec == wire.ErrDisconnected:
			// No reply: the frame may have been applied.
			if _, evicted := EvictionOf(err); evicted {
				return nil, err
			}
			run.last = c.timeoutOf(code, err)
			if err := run.becomeUnknown(c, run.last); err != nil {
				return nil, err
			}
		default:
			return nil, c.timeoutOf(code, err) // definitive: never replayed
		}
	}
}

// sendAttemptLocked sends the body once on the current connection under run's request id, bounded
// by the attempt timeout.
func (c *Client) sendAttemptLocked(ctx context.Context, run *sendRun, body []byte, deadline time.Time) ([]byte, error) {
	h, err := c.stampSendLocked(run.request)
	if err != nil {
		return nil, err
	}
	attemptEnd := deadline
	if t := c.cfg.sendAttemptTimeout; t > 0 && time.Now().Add(t).Before(deadline) {
		attemptEnd = time.Now().Add(t)
	}
	run.attempts++
	r, err := c.exchangeLocked(ctx, wire.CodeSendMessages, h, wire.EncodeRequest(nil, h, body), attemptEnd)
	if err != nil {
		return nil, err
	}
	return r.payload, nil
}

// routeLocked moves the connection to the owner the map names, or to the metadata leader when it
// names none (partition primaries follow the leader). A failed move keeps the current connection
// (the send then learns the owner by trying).
func (c *Client) routeLocked(ctx context.Context, run *sendRun, deadline time.Time) {
	target, ok := c.cluster.owners.get(run.key)
	if !ok {
		target = c.cluster.leader
	}
	if target == "" || c.isCurrentLocked(target) || run.refused[target] {
		return
	}
	if _, err := c.connectLocked(ctx, target, deadline); err != nil {
		c.cfg.logger.Debug("owner unreachable; sending where connected", "owner", target, "addr", c.addr, "err", err)
		if ok {
			c.cluster.owners.drop(run.key)
		}
	}
}

// notOwnerLocked reacts to a 58: pull cluster metadata on the current connection (the owner map's
// refresh: partition primaries follow the metadata leader), move to the named leader unless it
// refused in this round, else to the next node that has not; when every known node refused, back
// off (exponential, jitter) and start a new round.
func (c *Client) notOwnerLocked(ctx context.Context, run *sendRun, deadline time.Time) {
	md, err := c.metadataLocked(ctx, deadline)
	switch {
	case err == nil:
		c.cluster.remember(md, c.cfg.transport)
	case c.broken != nil:
		return // the loop reconnects
	}
	if l := c.cluster.leader; l != "" && !run.refused[l] && !c.isCurrentLocked(l) {
		if _, err := c.connectLocked(ctx, l, deadline); err == nil {
			return
		}
		run.refused[l] = true
	}
	for {
		next, ok := c.cluster.nextEndpoint(run.refused)
		if !ok {
			break
		}
		run.refused[next] = true // tried in this round, whatever the outcome
		if _, err := c.connectLocked(ctx, next, deadline); err != nil {
			c.cfg.logger.Debug("owner walk: connect failed", "addr", next, "err", err)
			continue
		}
		delete(run.refused, next) // connected: let it answer
		return
	}
	run.round++
	pause := min(backoffOf(run.round), time.Until(deadline))
	c.cfg.logger.Debug("every node refused the send; backing off", "round", run.round, "pause", pause)
	clear(run.refused)
	sleepCtx(ctx, pause)
}

// becomeUnknown records that a copy of the send may have been admitted. It returns the error to
// give the caller when replays would not be recognised: a transport that carries no binary request
// identity (only TCP, QUIC and WebSocket frames carry client id and request id to the server).
func (run *sendRun) becomeUnknown(c *Client, cause error) error {
	if !run.unknown {
		run.unknown, run.cause = true, cause
	}
	switch c.cfg.transport {
	case TransportTCP, TransportQUIC, TransportWebSocket, "":
		return nil
	}
	return run.fail(c, fmt.Sprintf("transport %s carries no request identity, so a replay would not be recognised", c.cfg.transport), cause)
}

// giveUp is the error when the budget or the context ends: the last error when no copy can have
// been admitted (58 or connection failures before any frame), an ExactlyOnceError otherwise.
func (run *sendRun) giveUp(c *Client, cause error) error {
	last := run.last
	if last == nil {
		last = cause
	}
	if last == nil {
		last = &TimeoutError{Command: wire.CodeSendMessages, Addr: c.addr, Err: context.DeadlineExceeded}
	}
	if !run.unknown {
		return last
	}
	// The cause, not the last answer: a 58 after an unknown attempt says nothing of the first copy.
	return run.fail(c, "the request budget ended with the outcome unknown", run.cause)
}

func (run *sendRun) fail(c *Client, reason string, err error) error {
	c.cfg.logger.Warn("exactly-once not assured", "request", run.request, "addr", c.addr, "reason", reason, "err", err)
	return &ExactlyOnceError{RequestID: run.request, Addr: c.addr, Attempts: run.attempts, Reason: reason, Err: err}
}

// SendStats counts what the exactly-once sends of a DialCluster client went through.
type SendStats struct {
	Retried  uint64 // sends that succeeded after more than one attempt
	Replayed uint64 // sends that succeeded after an attempt of unknown outcome (the dedup window's case)
	NotOwner uint64 // not-the-owner refusals (58) seen by sends
}

// SendStats returns the counters of this client's sends (zero for a Dial client).
func (c *Client) SendStats() SendStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cluster == nil {
		return SendStats{}
	}
	return c.cluster.stats
}

// replicatedDedup reports whether the cluster replicates its dedup window (more than one node in
// the last roster): only then can a send of unknown outcome be replayed after a reconnect.
func (s *clusterState) replicatedDedup() bool { return len(s.roster) > 1 }
