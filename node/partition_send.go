package node

import (
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

// handleSendMessages: decode + verify every checksum (status = the batch
// error's code), resolve (every resolution error is 20, §4.4.5), authorize
// (41), pick the partition, propose and wait. Reply: one confirmation.
// Unless a proposal may still be queued (its wait timed out), the request
// frame is handed back to the transport for reuse: consensus copied the
// batch at Propose and nothing else keeps a sub-slice of it.
func (n *Node) handleSendMessages(c *transport.Conn, v sessionView, hdr wire.RequestHeader, body []byte) {
	frameInUse := false
	defer func() {
		if !frameInUse {
			c.FrameConsumed()
		}
	}()
	req, err := wire.DecodeSendMessages(body)
	if err != nil {
		n.sendStatus(c, hdr, sendErrorCode(err))
		return
	}
	t, code := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
	if code != metadata.CodeOK || len(t.Partitions) == 0 {
		n.sendStatus(c, hdr, wire.ErrResourceNotFound)
		return
	}
	if !n.state.Authorize(v.userID, metadata.PermSend, t.StreamID, t.ID) {
		n.sendStatus(c, hdr, wire.ErrUnauthorized)
		return
	}
	pid, err := wire.ResolvePartition(req.Partitioning, uint32(len(t.Partitions)),
		n.plane.cursor(topicKey{t.StreamID, t.ID}))
	if err != nil {
		code := wire.ErrorCodeOf(err)
		if code == wire.ErrPartitionNotFound || code == wire.ErrNoPartitions {
			code = wire.ErrResourceNotFound
		}
		n.sendStatus(c, hdr, code)
		return
	}
	e, opening := n.plane.awaitEntry(n.lifetime, partitionKey{t.StreamID, t.ID, pid})
	if e == nil {
		n.sendStatus(c, hdr, notServedCode(opening, wire.ErrResourceNotFound))
		return
	}
	if e.log == nil {
		n.sendStatus(c, hdr, wire.ErrCannotReadPartitions)
		return
	}
	if !e.acceptsWrites() {
		// A backup of this partition's group: the primary's node takes it.
		n.partitionWritesRefused.Add(1)
		n.sendStatus(c, hdr, wire.ErrTransientNotAccepted)
		return
	}
	batch := req.Batch
	// Retry recognition keys on the batch as the client sent it (before
	// encryption and stamping): partition_dedup.go.
	sum := req.Header.BatchChecksum
	if n.cipher != nil {
		// Encrypted once, here on the primary: the ciphertext is what is
		// replicated, checksummed and stored; the request frame is free.
		if err := encryption.CheckSealedLimits(batch); err != nil {
			n.sendStatus(c, hdr, sendErrorCode(err))
			return
		}
		if batch, err = n.cipher.EncryptBatch(make([]byte, 0, len(batch)+int(req.Header.MessageCount)*2*encryption.Overhead), batch); err != nil {
			n.log.Error("encrypting a batch", "conn", c.ID(), "err", err)
			n.sendStatus(c, hdr, wire.ErrCannotEncryptData)
			return
		}
	}
	p := &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch}
	if hdr.Request&dedupRequestFlag != 0 {
		p.user, p.client, p.request, p.sum = v.userID, toConsensus(hdr.Client), hdr.Request, sum
	}
	out := e.shard.propose(n.lifetime, p)
	frameInUse = !out.bodyReleased && n.cipher == nil
	if out.code != wire.OK {
		n.sendStatus(c, hdr, out.code)
		return
	}
	// Written inline when nothing is queued ahead (no writer hand-off).
	c.Reply(wire.EncodeReply(nil, hdr, wire.OK, wire.AppendSendMessagesReply(nil, &wire.SendConfirmation{
		StreamID: t.StreamID, TopicID: t.ID, PartitionID: pid, BaseOffset: out.baseOffset,
	})), false)
}

// sendErrorCode is the status for a SendMessages body that failed decoding
// or verification: the specific code when there is one.
func sendErrorCode(err error) wire.ErrorCode {
	if code := wire.ErrorCodeOf(err); code != wire.OK {
		return code
	}
	return bodyErrorCode(err)
}
