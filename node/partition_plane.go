package node

import (
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// The partition plane (message logs, consumer offsets) arrives with the
// messages issue. Until then its commands get every answer that metadata
// alone decides — body errors, unresolvable targets, authorization — and
// FeatureUnavailable (5) for the rest. Answers that follow from "nothing
// can have been stored" are given as such: GetConsumerOffset answers "no
// offset" and DeleteConsumerOffset answers ConsumerOffsetNotFound.

// handlePartitionWrite serves SendMessages, StoreConsumerOffset and
// DeleteConsumerOffset (status channel answers, wire-protocol §4.4.5).
func (n *Node) handlePartitionWrite(c *transport.Conn, s *session, hdr wire.RequestHeader, body []byte) {
	v := s.view()
	if !v.bound {
		n.evict(c, s, hdr.Client, wire.EvictNoSession)
		return
	}
	n.sendStatus(c, hdr, n.partitionWriteStatus(v, hdr.Operation, body))
}

func (n *Node) partitionWriteStatus(v sessionView, op wire.Operation, body []byte) wire.ErrorCode {
	switch op {
	case wire.OpSendMessages:
		req, err := wire.DecodeSendMessagesMetadata(body)
		if err != nil {
			return bodyErrorCode(err)
		}
		t, code := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
		if code != metadata.CodeOK || len(t.Partitions) == 0 {
			return wire.ErrResourceNotFound // every unresolvable target collapses to 20
		}
		if req.Partitioning.Kind == wire.PartitioningPartitionID && int(req.Partitioning.PartitionID) >= len(t.Partitions) {
			return wire.ErrResourceNotFound
		}
		if !n.state.Authorize(v.userID, metadata.PermSend, t.StreamID, t.ID) {
			return wire.ErrUnauthorized
		}
		return wire.ErrFeatureUnavailable
	case wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		code, _ := wire.CodeForOperation(op)
		decoded, err := wire.DecodeRequestBody(code, body)
		if err != nil {
			return bodyErrorCode(err)
		}
		req := decoded.(wire.ConsumerOffsetRequest)
		t, ok := n.offsetTarget(req.Consumer, req.Stream, req.Topic, req.Partition)
		if !ok {
			return wire.ErrResourceNotFound
		}
		if !n.state.Authorize(v.userID, metadata.PermPoll, t.StreamID, t.ID) {
			return wire.ErrUnauthorized
		}
		if op == wire.OpDeleteConsumerOffset {
			return wire.ErrConsumerOffsetNotFound
		}
		return wire.ErrFeatureUnavailable
	}
	return wire.ErrInvalidCommand
}

// offsetTarget resolves a consumer-offset target: topic, partition (if
// given) and, for a group consumer, the group.
func (n *Node) offsetTarget(consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptPartition) (metadata.Topic, bool) {
	t, code := n.state.GetTopic(wireIdent(stream), wireIdent(topic))
	if code != metadata.CodeOK {
		return t, false
	}
	if partition.Present && int(partition.ID) >= len(t.Partitions) {
		return t, false
	}
	if consumer.Kind == wire.ConsumerKindGroup {
		if _, code := n.state.GetConsumerGroup(wireIdent(stream), wireIdent(topic), wireIdent(consumer.ID)); code != metadata.CodeOK {
			return t, false
		}
	}
	return t, true
}

// readConsumerOffset answers GetConsumerOffset: no offset can have been
// stored yet, so the answer is "none" (empty body) for every target the
// user may read.
func (n *Node) readConsumerOffset(v sessionView, r wire.ConsumerOffsetRequest) ([]byte, wire.ErrorCode) {
	if t, ok := n.offsetTarget(r.Consumer, r.Stream, r.Topic, r.Partition); ok &&
		!n.state.Authorize(v.userID, metadata.PermPoll, t.StreamID, t.ID) {
		return nil, wire.ErrUnauthorized
	}
	return nil, wire.OK
}

// pollStatus answers PollMessages with the addressing errors of §4.5
// (1009/2010/3007), authorization, or FeatureUnavailable.
func (n *Node) pollStatus(v sessionView, body []byte) wire.ErrorCode {
	req, err := wire.DecodePollMessages(body)
	if err != nil {
		return bodyErrorCode(err)
	}
	t, code := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
	if code != metadata.CodeOK {
		return wire.ErrorCode(code)
	}
	if req.Partition.Present && int(req.Partition.ID) >= len(t.Partitions) {
		return wire.ErrPartitionNotFound
	}
	if !n.state.Authorize(v.userID, metadata.PermPoll, t.StreamID, t.ID) {
		return wire.ErrUnauthorized
	}
	return wire.ErrFeatureUnavailable
}
