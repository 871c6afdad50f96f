package node

import (
	"sync"

	"github.com/lodestream/lodestream/consensus"
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
	steps.send(rd.Messages)
	if rd.Snapshot != nil {
		if err := steps.install(*rd.Snapshot); err != nil {
			return err
		}
	}
	if err := steps.apply(rd.Committed); err != nil {
		return err
	}
	steps.reply(rd.Replies)
	g.Advance(rd)
	return nil
}

// batchedSteps splits persist for a loop that carries out many groups'
// Readys together (the partition shards): prepareWrite does the cheap part
// in group order and returns the durable write the Ready needs (nil when
// none); carryOutBatch runs every group's write concurrently, so their
// fsyncs share the file system's journal commits, then each group's
// remaining steps in the one order.
type batchedSteps interface {
	readySteps
	prepareWrite(rd *consensus.Ready) (write func() error, err error)
}

// batchWritesMax bounds the concurrent durable writes of one batch.
const batchWritesMax = 64

// batchItem is one group of a batch.
type batchItem struct {
	g     consensus.Group
	steps batchedSteps
}

// carryOutBatch takes one Ready of each group through the steps and
// advances it; errs[i] is group i's error (its Ready left un-advanced:
// nothing it holds was sent, applied or answered).
func carryOutBatch(items []batchItem) (errs []error) {
	errs = make([]error, len(items))
	rds := make([]consensus.Ready, len(items))
	writes := make([]func() error, len(items))
	for i, it := range items {
		rds[i] = it.g.Ready()
		writes[i], errs[i] = it.steps.prepareWrite(&rds[i])
	}
	runWrites(writes, errs)
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		rd := &rds[i]
		it.steps.send(rd.Messages)
		if rd.Snapshot != nil {
			if err := it.steps.install(*rd.Snapshot); err != nil {
				errs[i] = err
				continue
			}
		}
		if err := it.steps.apply(rd.Committed); err != nil {
			errs[i] = err
			continue
		}
		it.steps.reply(rd.Replies)
		it.g.Advance(*rd)
	}
	return errs
}

// runWrites runs the non-nil writes (of groups without an error yet),
// at most batchWritesMax at once, and records their errors.
func runWrites(writes []func() error, errs []error) {
	sem := make(chan struct{}, batchWritesMax)
	var wg sync.WaitGroup
	single := countNonNil(writes) == 1
	for i, w := range writes {
		if w == nil || errs[i] != nil {
			continue
		}
		if single {
			errs[i] = w() // one write: no goroutine
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = w()
		}()
	}
	wg.Wait()
}

func countNonNil(writes []func() error) int {
	n := 0
	for _, w := range writes {
		if w != nil {
			n++
		}
	}
	return n
}
