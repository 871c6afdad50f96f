package sim

import (
	"encoding/binary"
	"math"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// Operation codes the workload proposes (opaque to consensus).
const (
	opMetadataWrite  consensus.Operation = 20 // e.g. CreateStream
	opPartitionWrite consensus.Operation = 30 // e.g. SendMessages
)

const (
	clientReplayTicks       = 5  // SDK replays 57/58 after 50 ms
	clientDroppedRetryTicks = 20 // a silently dropped request is retried later
	clientNotCommittedMax   = 3  // 57s in a row before looking for the primary again
	clientLogoutProbability = 0.02
	// clientResponseBudgetTicks is the SDK's 30 s response budget: past it
	// the application gets an error and reconnects (logs in again). The
	// request's outcome is unknown and its id is never reused.
	clientResponseBudgetTicks = 3000
)

// simClient is one workload client bound to one group. It has at most one
// request outstanding, like an Iggy session.
type simClient struct {
	idx   int
	group int
	id    consensus.Uint128
	dedup bool // metadata plane: sessions, Register, request dedup

	session     uint64
	nextRequest uint64
	nextIssue   uint64

	cur       *consensus.Request
	curSum    uint64
	curIssued uint64
	tag       uint64
	target    int
	deadline  uint64
	retryAt   uint64 // 0: no send scheduled
	streak57  int

	acks           uint64
	abandoned      uint64
	doneAfterHeal  bool
	lastAckedOp    uint64
	attemptsOfThis int
}

// step issues, sends and times out requests.
func (c *simClient) step(w *world) {
	if c.cur == nil {
		if c.doneAfterHeal || w.now < c.nextIssue {
			return
		}
		c.issue(w)
	}
	if w.now >= c.curIssued+clientResponseBudgetTicks {
		c.abandon(w)
		return
	}
	if c.retryAt != 0 && w.now >= c.retryAt {
		c.send(w)
		return
	}
	if c.retryAt == 0 && w.now >= c.deadline {
		c.target = w.findPrimary(c.group)
		c.retryAt = w.now
		c.send(w)
	}
}

func (c *simClient) issue(w *world) {
	req := consensus.Request{Client: c.id}
	switch {
	case c.dedup && c.session == 0:
		req.Operation = consensus.OperationRegister
	case c.dedup && w.rng.chance(clientLogoutProbability):
		// What the node submits when a client's connection closes.
		req.Operation, req.Session, req.Request = consensus.OperationLogout, c.session, math.MaxUint64
	case c.dedup:
		c.nextRequest++
		req.Operation, req.Session, req.Request = opMetadataWrite, c.session, c.nextRequest
	default:
		c.nextRequest++
		req.Operation, req.Request = opPartitionWrite, c.nextRequest
	}
	body := make([]byte, 24, 24+w.rng.intn(64))
	binary.LittleEndian.PutUint64(body[0:], c.id.Lo)
	binary.LittleEndian.PutUint64(body[8:], req.Request)
	binary.LittleEndian.PutUint64(body[16:], w.now)
	for len(body) < cap(body) {
		body = append(body, byte(w.rng.intn(256)))
	}
	req.Body = body
	c.curSum = xxh3.Hash(body)
	if req.Operation != consensus.OperationRegister {
		req.Checksum = c.curSum
	}
	c.cur = &req
	c.curIssued = w.now
	c.retryAt = w.now
	c.streak57 = 0
	c.attemptsOfThis = 0
}

func (c *simClient) send(w *world) {
	w.tagSeq++
	c.tag = w.tagSeq
	c.retryAt = 0
	c.deadline = w.now + uint64(w.scn.ClientTimeoutTicks)
	c.attemptsOfThis++
	req := *c.cur
	req.Tag = c.tag
	w.sendRequest(c, c.target, req)
}

// onReply reacts to the outcome of the current attempt as the SDK does.
func (c *simClient) onReply(w *world, rep consensus.Reply) {
	if c.cur == nil || rep.Tag != c.tag {
		return // an earlier attempt's answer
	}
	switch rep.Kind {
	case consensus.ReplyCommitted:
		switch c.cur.Operation {
		case consensus.OperationRegister:
			c.session = rep.Op
		case consensus.OperationLogout:
			c.session = 0
		}
		c.acks++
		c.lastAckedOp = rep.Op
		w.trace(evClientAck, c.idx, c.group, c.cur.Request, rep.Op)
		c.finish(w)
	case consensus.ReplyAlreadyApplied:
		c.finish(w) // committed long ago; its reply aged out
	case consensus.ReplyNotAccepted:
		c.target = w.findPrimary(c.group)
		c.retryAt = w.now + clientReplayTicks
	case consensus.ReplyNotCommitted:
		c.streak57++
		if c.streak57 >= clientNotCommittedMax {
			c.streak57 = 0
			c.target = w.findPrimary(c.group)
		}
		c.retryAt = w.now + clientReplayTicks
	case consensus.ReplyEvictNoSession, consensus.ReplyEvictSessionTooLow:
		if c.cur.Operation == consensus.OperationLogout {
			c.session = 0 // already gone: the logout (or an eviction) won
			c.finish(w)
			return
		}
		// The session is gone. The outcome of the current request is
		// unknown and its id is burnt: never re-send it under a new
		// session (that could execute it twice). Register again.
		c.abandon(w)
	case consensus.ReplyDropped:
		c.target = w.findPrimary(c.group)
		c.retryAt = w.now + clientDroppedRetryTicks
	default:
		w.fail(c.group, -1, checkContract, "client %d got reply kind %d", c.idx, rep.Kind)
	}
}

func (c *simClient) finish(w *world) {
	op := c.cur.Operation
	if w.healed && c.curIssued >= w.healTick && op != consensus.OperationRegister && op != consensus.OperationLogout {
		c.doneAfterHeal = true
	}
	c.cur = nil
	c.nextIssue = w.now + uint64(w.rng.intn(w.scn.ThinkTicksMax+1))
}

// abandon gives up on the current request (outcome unknown, id burnt) and
// starts a new session, as an application does after an eviction or once
// the response budget is spent.
func (c *simClient) abandon(w *world) {
	w.logf("client %d abandons request %d (operation %d) after %d attempts", c.idx, c.cur.Request, c.cur.Operation, c.attemptsOfThis)
	c.session = 0
	c.abandoned++
	c.cur = nil
	c.nextIssue = w.now + clientReplayTicks
}
