package node

import (
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
)

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
// snapshots; a partition group persists to its prepare WAL and superblock
// (cluster mode) and makes the committed batch durable as it applies it.
//
// apply may fail (a partition replica that cannot append a committed
// batch): the Ready then stays un-advanced although its messages left and
// some of its ops were applied; carrying it out again sends them again
// (the protocol tolerates duplicates) and applies those ops again, which
// the state machine recognises as replays.
type readySteps interface {
	persist(rd *consensus.Ready) error
	send(msgs []consensus.Message)
	install(s consensus.Snapshot) error
	apply(committed []consensus.Prepare) error
	reply(replies []consensus.Reply)
}

// carryOut takes the group's next Ready through the steps and advances it.
// A persist error (storage failed) leaves the Ready un-advanced with
// nothing it holds sent, applied or answered; an apply error leaves it
// un-advanced and unanswered (see readySteps).
func carryOut(g consensus.Group, steps readySteps) error {
	rd := g.Ready()
	if err := steps.persist(&rd); err != nil {
		return err
	}
	return finishReady(g, steps, &rd)
}

// finishReady carries out steps 2-6 of a Ready whose persist step is done.
func finishReady(g consensus.Group, steps readySteps, rd *consensus.Ready) error {
	steps.send(sendable(g, rd.Messages))
	if rd.Snapshot != nil {
		if err := steps.install(*rd.Snapshot); err != nil {
			return err
		}
	}
	if err := steps.apply(rd.Committed); err != nil {
		return err
	}
	steps.reply(rd.Replies)
	g.Advance(*rd)
	return nil
}

// sendable drops the messages the group calls Outdated: a partition
// group keeps being stepped while its Ready is written off the loop, and
// may have moved to a newer view or dropped the prepare a message names
// (consensus/outdated.go). It copies only when it drops something: the
// Ready's slice is shared with the group until Advance.
func sendable(g consensus.Group, msgs []consensus.Message) []consensus.Message {
	for i := range msgs {
		if !g.Outdated(&msgs[i]) {
			continue
		}
		kept := append(make([]consensus.Message, 0, len(msgs)-1), msgs[:i]...)
		for j := i + 1; j < len(msgs); j++ {
			if !g.Outdated(&msgs[j]) {
				kept = append(kept, msgs[j])
			}
		}
		return kept
	}
	return msgs
}

// batchedSteps splits persist for a loop that carries out many groups'
// Readys without waiting for their storage (the partition shards,
// partition_writer.go): prepareWrite does the cheap part on the loop and
// returns the durable write the Ready needs (nil when none), which runs
// off the loop; finishReady then takes the Ready on, back on the loop.
type batchedSteps interface {
	readySteps
	prepareWrite(rd *consensus.Ready) (*durableWrite, error)
}

// durableWrite is the storage work of one group's Ready. run executes off
// the loop and touches only what prepareWrite captured and the group's
// files, which nothing on the loop touches while the write is in flight.
// record (may be nil) is the group's new superblock state: it goes to the
// node's superblock log with the other records of the batch, one sync for
// all, after run and before post (may be nil), which needs it durable.
// done (may be nil) records the effects on the loop, after a success.
type durableWrite struct {
	run    func() error
	record *journal.SuperblockLogEntry
	post   func() error
	done   func()
}
