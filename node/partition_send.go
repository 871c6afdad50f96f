package node

import (
	"context"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/encryption"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// handlePartitionWrite serves SendMessages, StoreConsumerOffset and
// DeleteConsumerOffset: admission on the connection goroutine, then the
// partition's group commits and the shard loop applies.
func (n *Node) handlePartitionWrite(c *transport.Conn, s *session, hdr wire.RequestHeader, body []byte) {
	v := s.view()
	if !v.bound {
		n.evict(c, s, hdr.Client, wire.EvictNoSession)
		return
	}
	switch hdr.Operation {
	case wire.OpSendMessages:
		n.handleSendMessages(c, v, hdr, body)
	case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		n.handleOffsetWrite(c, v, hdr, body)
	default:
		n.sendStatus(c, hdr, wire.ErrInvalidCommand)
	}
}

// handleSendMessages answers SendMessages on a connection: one
// confirmation. Unless a proposal may still be queued (its wait timed out),
// the request frame is handed back to the transport for reuse: consensus
// copied the batch at Propose and nothing else keeps a sub-slice of it.
func (n *Node) handleSendMessages(c *transport.Conn, v sessionView, hdr wire.RequestHeader, body []byte) {
	conf, code, bodyInUse := n.sendMessages(n.lifetime, v, sendIdentity{client: toConsensus(hdr.Client), request: hdr.Request}, body, true)
	if !bodyInUse {
		c.FrameConsumed()
	}
	if code != wire.OK {
		n.sendStatus(c, hdr, code)
		return
	}
	// Written inline when nothing is queued ahead (no writer hand-off).
	c.Reply(wire.EncodeReply(nil, hdr, wire.OK, wire.AppendSendMessagesReply(nil, &conf)), false)
}

// sendMessages is the one SendMessages path (binary frames and HTTP):
// decode + verify every checksum (status = the batch error's code),
// resolve (every resolution error is 20, §4.4.5), authorize (41), pick the
// partition, propose and (await) wait. Without await the proposal is only
// queued (HTTP ack=none): the confirmation carries no offset. bodyInUse:
// the proposal may still reference body.
func (n *Node) sendMessages(ctx context.Context, v sessionView, id sendIdentity, body []byte, await bool) (conf wire.SendConfirmation, code wire.ErrorCode, bodyInUse bool) {
	req, err := wire.DecodeSendMessages(body)
	if err != nil {
		return conf, sendErrorCode(err), false
	}
	t, mcode := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
	if mcode != metadata.CodeOK || len(t.Partitions) == 0 {
		return conf, wire.ErrResourceNotFound, false
	}
	if !n.state.Authorize(v.userID, metadata.PermSend, t.StreamID, t.ID) {
		return conf, wire.ErrUnauthorized, false
	}
	pid, err := wire.ResolvePartition(req.Partitioning, uint32(len(t.Partitions)),
		n.plane.cursor(topicKey{t.StreamID, t.ID}))
	if err != nil {
		code := wire.ErrorCodeOf(err)
		if code == wire.ErrPartitionNotFound || code == wire.ErrNoPartitions {
			code = wire.ErrResourceNotFound
		}
		return conf, code, false
	}
	e, opening := n.plane.awaitEntry(n.lifetime, partitionKey{t.StreamID, t.ID, pid})
	if e == nil {
		return conf, notServedCode(opening, wire.ErrResourceNotFound), false
	}
	if e.log == nil {
		return conf, wire.ErrCannotReadPartitions, false
	}
	if !e.acceptsWrites() {
		// A backup of this partition's group: the primary's node takes it.
		n.partitionWritesRefused.Add(1)
		return conf, wire.ErrTransientNotAccepted, false
	}
	batch := req.Batch
	// Retry recognition keys on the batch as the client sent it (before
	// encryption and stamping): partition_dedup.go.
	sum := req.Header.BatchChecksum
	if n.cipher != nil {
		// Encrypted once, here on the primary: the ciphertext is what is
		// replicated, checksummed and stored; the request frame is free.
		if err := encryption.CheckSealedLimits(batch); err != nil {
			return conf, sendErrorCode(err), false
		}
		if batch, err = n.cipher.EncryptBatch(make([]byte, 0, len(batch)+int(req.Header.MessageCount)*2*encryption.Overhead), batch); err != nil {
			n.log.Error("encrypting a batch", "err", err)
			return conf, wire.ErrCannotEncryptData, false
		}
	}
	conf = wire.SendConfirmation{StreamID: t.StreamID, TopicID: t.ID, PartitionID: pid}
	// The batch is the request frame's (or the ciphertext's) own: consensus
	// keeps it as the prepare body without a copy, and the frame is then
	// never recycled (bodyInUse). Not when the buffer behind it is much
	// larger (frame pools round up to powers of two): the journal would pin
	// memory its byte bounds do not count, so consensus copies it.
	owned := cap(batch)-len(batch) <= len(batch)/4
	p := &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch, bodyOwned: owned}
	if id.request&dedupRequestFlag != 0 {
		p.user, p.client, p.request, p.sum = v.userID, id.client, id.request, sum
	}
	if !await {
		if !e.shard.submit(p) {
			return conf, wire.ErrTransientNotAccepted, false
		}
		return conf, wire.OK, n.cipher == nil
	}
	out := e.shard.propose(ctx, p)
	bodyInUse = !out.bodyReleased && n.cipher == nil
	if out.code != wire.OK {
		return conf, out.code, bodyInUse
	}
	conf.BaseOffset = out.baseOffset
	return conf, wire.OK, bodyInUse
}

// sendIdentity is what retry recognition keys a send by
// (partition_dedup.go): the client id and request id of a binary frame,
// recognised only when the request id asks for it (dedupRequestFlag).
// Zero for HTTP, which has no request identity: its sends are never taken
// for replays.
type sendIdentity struct {
	client  consensus.Uint128
	request uint64
}

// sendErrorCode is the status for a SendMessages body that failed decoding
// or verification: the specific code when there is one.
func sendErrorCode(err error) wire.ErrorCode {
	if code := wire.ErrorCodeOf(err); code != wire.OK {
		return code
	}
	return bodyErrorCode(err)
}
