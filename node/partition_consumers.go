package node

import (
	"context"
	"encoding/binary"

	"github.com/lodestream/lodestream/transport"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// consumerTarget is a resolved consumer: the partition it reads or writes
// and the key its offset is stored under.
type consumerTarget struct {
	partition uint32
	kind      wire.ConsumerKind
	id        uint32 // single: numeric id or XXH32(name); group: the group's id
}

// singleConsumerID keys a single consumer: its numeric id, or XXH32 of its
// name (upstream's calculate_32, so named consumers keep their offsets).
func singleConsumerID(id wire.Identifier) uint32 {
	if id.Kind == wire.IdentString {
		return wire.XXH32([]byte(id.Name), 0)
	}
	return id.Numeric
}

// memberResolution says why a group consumer could not be placed.
type memberResolution uint8

const (
	memberOK          memberResolution = iota
	memberNoGroup                      // the group does not exist
	memberNotJoined                    // the client is not a member
	memberNotAssigned                  // the partition is not the member's at this generation
)

// resolveConsumer places a consumer on a partition of t. Single consumers
// read the named partition or 0. A group consumer must be a member and name
// a partition it owns at the current generation; with no partition named it
// gets its first assigned one.
func (n *Node) resolveConsumer(v sessionView, t metadata.Topic, consumer wire.Consumer, partition wire.OptPartition) (consumerTarget, memberResolution) {
	if consumer.Kind != wire.ConsumerKindGroup {
		target := consumerTarget{kind: wire.ConsumerKindSingle, id: singleConsumerID(consumer.ID)}
		if partition.Present {
			target.partition = partition.ID
		}
		return target, memberOK
	}
	g, code := n.state.GetConsumerGroup(metadata.ByID(t.StreamID), metadata.ByID(t.ID), wireIdent(consumer.ID))
	if code != metadata.CodeOK {
		return consumerTarget{}, memberNoGroup
	}
	target := consumerTarget{kind: wire.ConsumerKindGroup, id: g.ID}
	for _, m := range g.Members {
		if m.ClientID != metadata.ClientID(v.client) {
			continue
		}
		if !partition.Present {
			if len(m.Partitions) == 0 {
				return target, memberNotAssigned
			}
			target.partition = m.Partitions[0]
			return target, memberOK
		}
		for _, p := range m.Partitions {
			if p == partition.ID {
				target.partition = p
				return target, memberOK
			}
		}
		return target, memberNotAssigned
	}
	return target, memberNotJoined
}

// handleOffsetWrite serves StoreConsumerOffset and DeleteConsumerOffset
// through the partition's group. Pre-commit denials use the status
// channel; committed outcomes the result section (ops 161/162 are
// result-framed).
func (n *Node) handleOffsetWrite(c *transport.Conn, v sessionView, hdr wire.RequestHeader, body []byte) {
	result, status := n.offsetWrite(n.lifetime, v, hdr.Operation, body)
	if status != wire.OK {
		n.sendStatus(c, hdr, status)
		return
	}
	n.sendOK(c, hdr, result)
}

// offsetWrite is the one consumer-offset write path (binary frames and
// HTTP). A non-OK status is answered on the status channel; otherwise
// result is the result section (OK or a committed rejection).
func (n *Node) offsetWrite(ctx context.Context, v sessionView, op wire.Operation, body []byte) ([]byte, wire.ErrorCode) {
	code, _ := wire.CodeForOperation(op)
	decoded, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return nil, bodyErrorCode(err)
	}
	req := decoded.(wire.ConsumerOffsetRequest)
	t, mcode := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
	if mcode != metadata.CodeOK || (req.Partition.Present && int(req.Partition.ID) >= len(t.Partitions)) {
		return nil, wire.ErrResourceNotFound
	}
	if !n.state.Authorize(v.userID, metadata.PermPoll, t.StreamID, t.ID) {
		return nil, wire.ErrUnauthorized
	}
	target, res := n.resolveConsumer(v, t, req.Consumer, req.Partition)
	switch res {
	case memberNoGroup:
		return nil, wire.ErrResourceNotFound
	case memberNotJoined:
		return nil, wire.ErrConsumerGroupMemberNotFound
	case memberNotAssigned:
		return nil, wire.ErrConsumerGroupPartitionNotOwned
	}
	e, opening := n.plane.awaitEntry(n.lifetime, partitionKey{t.StreamID, t.ID, target.partition})
	if e == nil {
		return nil, notServedCode(opening, wire.ErrResourceNotFound)
	}
	if e.log == nil {
		return nil, wire.ErrCannotReadPartitions
	}
	if !e.acceptsWrites() {
		n.partitionWritesRefused.Add(1)
		return nil, wire.ErrTransientNotAccepted
	}
	store := op == wire.OpStoreConsumerOffset
	if !store {
		// Answered without a commit when nothing is stored (nothing to replicate).
		if _, ok := e.log.ConsumerOffset(target.kind, target.id); !ok {
			return wire.AppendResultRejection(nil, wire.ErrConsumerOffsetNotFound), wire.OK
		}
	}
	out := e.shard.propose(ctx, &partitionProposal{
		entry: e, op: op, body: encodeOffsetOp(target.kind, target.id, req.Offset, store),
	})
	switch out.code {
	case wire.OK:
		return wire.AppendResultOK(nil), wire.OK
	case wire.ErrTransientNotAccepted, wire.ErrTransientNotCommitted, wire.ErrResourceNotFound:
		return nil, out.code
	default:
		return wire.AppendResultRejection(nil, out.code), wire.OK
	}
}

// autoCommit stores the offset a poll reached, best effort: proposed
// through the partition's group without waiting for the outcome.
func (n *Node) autoCommit(e *partitionEntry, target consumerTarget, offset uint64) {
	if !e.acceptsWrites() {
		return // a follower's poll never moves the durable offset (seed 000)
	}
	p := &partitionProposal{entry: e, op: wire.OpStoreConsumerOffset,
		body: encodeOffsetOp(target.kind, target.id, offset, true)}
	if !e.shard.submit(p) {
		n.log.Debug("auto-commit dropped: partition queue full", "dir", e.dir)
	}
}

func leU64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
