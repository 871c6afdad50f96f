package node

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/zeebo/xxh3"
)

// metaSimClient is a client with a stable identity (the leader-aware
// client): it registers a session, then proposes one request at a time,
// retrying an ambiguous outcome under the same request number (the
// group's client table deduplicates it), so each request applies at most
// once and an acknowledged one exactly once.
type metaSimClient struct {
	id      consensus.Uint128
	session uint64 // the Register's op; 0: not registered
	request uint64 // the last request number used
	pending *metaSimPending
	// target: the node the client takes for the metadata primary; it
	// moves on to the next node when refused.
	target uint8
}

// metaSimPending is a request waiting for its outcome.
type metaSimPending struct {
	req      consensus.Request
	cmd      metadata.Command // nil for a Register or a Logout
	proposal *proposal        // the attempt in flight (nil: waiting to retry)
	node     uint8
	sentAt   uint64
	retryAt  uint64
	attempts int
}

const (
	// metaSimOutcomeWaitMicros: an attempt without an outcome this long
	// (its node crashed, or the group lost it) is retried elsewhere.
	metaSimOutcomeWaitMicros = 3_000_000
	metaSimRetryMicros       = 50_000
)

// drive moves every client on: outcomes first, then retries and new
// requests.
func (w *metaSimWorld) driveClients(propose bool) {
	for _, c := range w.clients {
		w.collect(c)
		switch {
		case c.pending != nil:
			p := c.pending
			if p.proposal == nil && w.now >= p.retryAt {
				w.attempt(c)
			}
		case c.session == 0:
			c.pending = &metaSimPending{req: consensus.Request{Client: c.id, Operation: consensus.OperationRegister, UserID: rootUserID}}
			w.stats.Registers++
			w.attempt(c)
		case propose && w.rng.Float64() < w.sc.proposeRate:
			w.newRequest(c)
			w.attempt(c)
		}
	}
}

// rootUserID: the simulated clients act as root.
const rootUserID = metadata.RootUserID

// collect takes the outcome of a client's attempt in flight, if any.
func (w *metaSimWorld) collect(c *metaSimClient) {
	p := c.pending
	if p == nil || p.proposal == nil {
		return
	}
	var out outcome
	select {
	case out = <-p.proposal.done:
	default:
		if w.now-p.sentAt >= metaSimOutcomeWaitMicros {
			w.retryLater(c, true)
		}
		return
	}
	w.trace.add("outcome", c.id.Lo, p.req.Request, uint64(out.kind), out.op)
	switch out.kind {
	case consensus.ReplyCommitted:
		w.acknowledged(c, p.req.Request, out.op, out.body)
		w.stats.Committed++
		if p.req.Operation == consensus.OperationRegister {
			c.session = out.op
		} else if p.req.Operation == consensus.OperationLogout {
			c.session = 0
		}
		w.learn(p.cmd, out.body)
		c.pending = nil
	case consensus.ReplyNotAccepted, consensus.ReplyDropped:
		w.retryLater(c, false)
	case consensus.ReplyNotCommitted:
		w.retryLater(c, true)
	case consensus.ReplyAlreadyApplied:
		// Applied, its reply aged out of the ring: done, result unknown.
		w.stats.Ambiguous++
		c.pending = nil
	case consensus.ReplyEvictNoSession, consensus.ReplyEvictSessionTooLow:
		// The session is gone: what it had pending is ambiguous, and the
		// client registers again.
		w.stats.Evictions++
		w.stats.Ambiguous++
		c.session, c.pending = 0, nil
	default:
		w.fail(fmt.Errorf("client %x request %d: unexpected outcome %d", c.id.Lo, p.req.Request, out.kind))
		c.pending = nil
	}
}

// retryLater abandons the attempt in flight; the next goes to another
// node. ambiguous: the attempt may still commit.
func (w *metaSimWorld) retryLater(c *metaSimClient, ambiguous bool) {
	p := c.pending
	p.proposal = nil
	p.retryAt = w.now + metaSimRetryMicros
	c.target = uint8((int(c.target) + 1) % len(w.nodes))
	w.stats.Retries++
	if ambiguous {
		w.stats.Ambiguous++
	}
}

// attempt hands the pending request to the client's target node's driver
// (as a connection's handler does), unless that node is down.
func (w *metaSimWorld) attempt(c *metaSimClient) {
	p := c.pending
	n := w.nodes[c.target]
	if !n.up {
		w.retryLater(c, false)
		return
	}
	p.attempts++
	p.node, p.sentAt = n.id, w.now
	if w.msgs != nil && p.cmd != nil && changesPartitions(p.cmd) {
		w.msgs.events++ // an epoch may move under the sends in flight
	}
	p.proposal = &proposal{req: p.req, done: make(chan outcome, 1)}
	w.stats.Proposals++
	w.trace.add("propose", c.id.Lo, p.req.Request, uint64(n.id))
	w.guard(n, func() {
		n.driver.admitOrRefuse(p.proposal)
		w.ready(n)
	})
}

// newRequest draws the client's next command.
func (w *metaSimWorld) newRequest(c *metaSimClient) {
	c.request++
	req := consensus.Request{Client: c.id, Session: c.session, Request: c.request, UserID: rootUserID}
	var cmd metadata.Command
	if w.rng.IntN(100) == 0 {
		req.Operation = consensus.OperationLogout
	} else {
		cmd = w.drawCommand(c)
		req.Operation = consensus.Operation(cmd.Kind())
		req.Body = metadata.EncodeCommand(cmd)
	}
	req.Checksum = xxh3.Hash(req.Body)
	c.pending = &metaSimPending{req: req, cmd: cmd}
}

// drawCommand draws a command over the streams and users the workload
// knows of (an unknown one is refused by the state machine, committed
// all the same).
func (w *metaSimWorld) drawCommand(c *metaSimClient) metadata.Command {
	w.names++
	name := fmt.Sprintf("n%d", w.names)
	stream := metadata.ByName("missing")
	if len(w.streams) > 0 {
		stream = metadata.ByName(w.streams[w.rng.IntN(len(w.streams))])
	}
	topic := metadata.ByName(fmt.Sprintf("t%d", w.rng.IntN(3)))
	group := metadata.ByName(fmt.Sprintf("g%d", w.rng.IntN(2)))
	switch r := w.rng.IntN(100); {
	case r < 25 || len(w.streams) == 0:
		return metadata.CreateStream{Name: name}
	case r < 45 && w.sc.partitions && w.partitionCount() >= metaSimPartitionsMax:
		return metadata.DeleteTopic{Stream: stream, Topic: topic}
	case r < 45:
		segment := uint64(metadata.SegmentSizeMin) << w.rng.IntN(4)
		expiry, maxSize := w.drawRetention(segment)
		return metadata.CreateTopic{Stream: stream, Name: topic.Name, PartitionsCount: 1 + uint32(w.rng.IntN(3)),
			MessageExpiry: expiry, Compression: metadata.CompressionNone, MaxTopicSize: maxSize,
			Options: metadata.TopicOptions{SegmentSize: segment, MessagesRequiredToSave: metadata.DefaultMessagesRequiredToSave,
				Durability: w.drawDurability(), ConsumerOffsetDurability: metadata.DurabilityReplicated}}
	case r < 50:
		return metadata.DeleteTopic{Stream: stream, Topic: topic}
	case r < 53:
		return metadata.DeleteStream{Stream: stream}
	case r < 56:
		return metadata.PurgeTopic{Stream: stream, Topic: topic}
	case r < 62 && (!w.sc.partitions || w.partitionCount() < metaSimPartitionsMax):
		return metadata.CreatePartitions{Stream: stream, Topic: topic, Count: 1}
	case r < 62:
		return metadata.DeletePartitions{Stream: stream, Topic: topic, Count: 1}
	case r < 72:
		hash, _ := metaSimRootHash()
		return metadata.CreateUser{Username: name, PasswordHash: hash, Status: metadata.UserActive}
	case r < 76 && len(w.users) > 0:
		return metadata.DeleteUser{User: metadata.ByName(w.users[w.rng.IntN(len(w.users))])}
	case r < 84:
		return metadata.CreateConsumerGroup{Stream: stream, Topic: topic, Name: group.Name}
	case r < 94:
		return metadata.JoinConsumerGroup{Stream: stream, Topic: topic, Group: group, Client: metadata.ClientID(c.id)}
	case r < 97:
		return metadata.LeaveConsumerGroup{Stream: stream, Topic: topic, Group: group, Client: metadata.ClientID(c.id)}
	default:
		return metadata.UpdateStream{Stream: stream, Name: name}
	}
}

// learn notes what an acknowledged command created (or removed) for the
// commands drawn after it.
func (w *metaSimWorld) learn(cmd metadata.Command, reply []byte) {
	// A committed OK reply opens with a zero result count (wire/result.go).
	if len(reply) < 4 || binary.LittleEndian.Uint32(reply) != 0 {
		return
	}
	switch c := cmd.(type) {
	case metadata.CreateStream:
		w.streams = append(w.streams, c.Name)
	case metadata.UpdateStream:
		w.streams = removeName(w.streams, c.Stream.Name)
		w.streams = append(w.streams, c.Name)
	case metadata.DeleteStream:
		w.streams = removeName(w.streams, c.Stream.Name)
	case metadata.CreateUser:
		w.users = append(w.users, c.Username)
	case metadata.DeleteUser:
		w.users = removeName(w.users, c.User.Name)
	}
}

func removeName(names []string, name string) []string {
	for i, n := range names {
		if n == name {
			return append(names[:i:i], names[i+1:]...)
		}
	}
	return names
}

// drawDurability: half the topics are persisted (an acknowledged message
// survives any power loss), half replicated (a majority's power loss may
// take it: metasim_messages_test.go checks those only in seeds without).
func (w *metaSimWorld) drawDurability() metadata.Durability {
	if w.rng.IntN(2) == 0 {
		return metadata.DurabilityPersisted
	}
	return metadata.DurabilityReplicated
}

// drawRetention: a quarter of the topics keep at most 2-8 segments, a
// quarter expire messages after 5-35 s, the rest keep everything; the
// retention job (metaSimWorld.retention) cuts them.
func (w *metaSimWorld) drawRetention(segment uint64) (expiryMicros, maxTopicBytes uint64) {
	switch w.rng.IntN(4) {
	case 0:
		return metadata.Never, segment << (1 + w.rng.IntN(3))
	case 1:
		return uint64(5+w.rng.IntN(30)) * 1_000_000, metadata.Never
	}
	return metadata.Never, metadata.Never
}
