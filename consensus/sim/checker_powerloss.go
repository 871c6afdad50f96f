package sim

import "github.com/lodestream/lodestream/consensus"

// What the checkers excuse after a quorum-wide power loss (the powerloss
// profile). `durability = replicated` promises that an acknowledged op
// survives process crashes of any number of nodes and a power loss of
// fewer than a replication quorum; the profile power-cycles at most
// Q_repl - 1 fixed nodes one by one, so without a rack power loss every
// committed op must survive, checked as always. A rack power loss (every
// node at once) may lose ops only page caches held: the ops committed
// before it may be replaced, once, by the history the group continues
// with. Divergence stays a violation: after the first contradicting
// commit the record is rebased on it, and any replica that commits the
// old history afterwards (or a third one) fails agreement, as does a
// replica whose state hash carries an op the new history replaced.

// onQuorumPowerLoss excuses every op committed so far, and exempts from
// the quorum audit the ops prepared before it (in a view any replica had
// reached): the group may commit them again after the loss on the word of
// a commit number from before it, when power took most of their copies.
func (c *groupChecker) onQuorumPowerLoss() {
	c.excused = uint64(len(c.log))
	c.quorumLost = true
	for _, rw := range c.replicas {
		c.preLossView = max(c.preLossView, rw.view, rw.durable.View, rw.revealedView)
	}
}

// auditExempt: op was prepared before a quorum-wide power loss.
func (c *groupChecker) auditExempt(h *consensus.PrepareHeader) bool {
	return c.quorumLost && h.View <= c.preLossView
}

// rebase forgets the record from op on: the first commit after a quorum
// power loss contradicts it, so the group continues with another history
// there. Later contradictions are not excused.
func (c *groupChecker) rebase(op uint64) {
	c.lostOps += uint64(len(c.log)) - (op - 1)
	c.log = c.log[:op-1]
	c.excused = 0
	for k, at := range c.seen {
		if at >= op {
			delete(c.seen, k)
		}
	}
	for k, rec := range c.replies {
		if rec.op >= op {
			delete(c.replies, k)
		}
	}
	for at := range c.checkpoints {
		if at >= op {
			delete(c.checkpoints, at)
		}
	}
}
