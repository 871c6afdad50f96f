package node

import "github.com/lodestream/lodestream/consensus"

// readySteps is what an event loop does with one Ready, for one group.
// carryOut runs them in the one order every group obeys (the consensus
// driver contract, docs/consensus.md "Driving it"):
//
//  1. persist: journal truncate/entries, a transferred snapshot, the
//     superblock — durable before anything that reveals them leaves;
//  2. send: the messages, to the other replicas;
//  3. install: a transferred snapshot into the state machine;
//  4. apply: the committed ops, in op order;
//  5. reply: the outcomes of this node's proposals;
//  6. advance: the group learns the Ready is carried out.
//
// The metadata loop and the partition shards differ only in their steps:
// the metadata group persists to its WAL and superblock and installs
// snapshots; a partition group (one replica until cluster part 2) keeps its
// journal in memory and makes the committed batch durable as it applies it.
type readySteps interface {
	persist(rd *consensus.Ready) error
	send(msgs []consensus.Message)
	install(s consensus.Snapshot) error
	apply(committed []consensus.Prepare)
	reply(replies []consensus.Reply)
}

// carryOut takes the group's next Ready through the steps and advances it.
// An error (storage failed) leaves the Ready un-advanced: nothing it holds
// was sent, applied or answered.
func carryOut(g consensus.Group, steps readySteps) error {
	rd := g.Ready()
	if err := steps.persist(&rd); err != nil {
		return err
	}
	steps.send(rd.Messages)
	if rd.Snapshot != nil {
		if err := steps.install(*rd.Snapshot); err != nil {
			return err
		}
	}
	steps.apply(rd.Committed)
	steps.reply(rd.Replies)
	g.Advance(rd)
	return nil
}
