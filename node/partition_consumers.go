package node

import (
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
	code, _ := wire.CodeForOperation(hdr.Operation)
	decoded, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		n.sendStatus(c, hdr, bodyErrorCode(err))
		return
	}
	req := decoded.(wire.ConsumerOffsetRequest)
	t, mcode := n.state.GetTopic(wireIdent(req.Stream), wireIdent(req.Topic))
	if mcode != metadata.CodeOK || (req.Partition.Present && int(req.Partition.ID) >= len(t.Partitions)) {
		n.sendStatus(c, hdr, wire.ErrResourceNotFound)
		return
	}
	if !n.state.Authorize(v.userID, metadata.PermPoll, t.StreamID, t.ID) {
		n.sendStatus(c, hdr, wire.ErrUnauthorized)
		return
	}
	target, res := n.resolveConsumer(v, t, req.Consumer, req.Partition)
	switch res {
	case memberNoGroup:
		n.sendStatus(c, hdr, wire.ErrResourceNotFound)
		return
	case memberNotJoined:
		n.sendStatus(c, hdr, wire.ErrConsumerGroupMemberNotFound)
		return
	case memberNotAssigned:
		n.sendStatus(c, hdr, wire.ErrConsumerGroupPartitionNotOwned)
		return
	}
	e, opening := n.plane.awaitEntry(n.lifetime, partitionKey{t.StreamID, t.ID, target.partition})
	if e == nil {
		n.sendStatus(c, hdr, notServedCode(opening, wire.ErrResourceNotFound))
		return
	}
	if e.log == nil {
		n.sendStatus(c, hdr, wire.ErrCannotReadPartitions)
		return
	}
	if !e.acceptsWrites() {
		n.partitionWritesRefused.Add(1)
		n.sendStatus(c, hdr, wire.ErrTransientNotAccepted)
		return
	}
	store := hdr.Operation == wire.OpStoreConsumerOffset
	if !store {
		// Answered without a commit when nothing is stored (nothing to replicate).
		if _, ok := e.log.ConsumerOffset(target.kind, target.id); !ok {
			n.sendResultRejection(c, hdr, wire.ErrConsumerOffsetNotFound)
			return
		}
	}
	out := e.shard.propose(n.lifetime, &partitionProposal{
		entry: e, op: hdr.Operation, body: encodeOffsetOp(target.kind, target.id, req.Offset, store),
	})
	switch out.code {
	case wire.OK:
		n.sendOK(c, hdr, wire.AppendResultOK(nil))
	case wire.ErrTransientNotAccepted, wire.ErrTransientNotCommitted, wire.ErrResourceNotFound:
		n.sendStatus(c, hdr, out.code)
	default:
		n.sendResultRejection(c, hdr, out.code)
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
