package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/lodestream/lodestream/consensus"
)

// allClientsDone: every client had a request issued after the heal
// committed (check (e): the healed cluster commits new requests).
func (w *world) allClientsDone() bool {
	for _, c := range w.clients {
		if !c.doneAfterHeal {
			return false
		}
	}
	return true
}

// converged: in every group all replicas are up, Normal, in one view,
// hold nothing uncommitted, and have applied exactly the ops the cluster
// committed.
func (w *world) converged() bool {
	for gi := range w.checkers {
		if !w.groupConverged(gi) {
			return false
		}
	}
	return true
}

func (w *world) groupConverged(gi int) bool {
	top := w.checkers[gi].maxCommitted()
	var view uint32
	for i, nd := range w.nodes {
		d := nd.replicas[gi]
		if !nd.up || d.g == nil {
			return false
		}
		g := d.g
		if g.Status() != consensus.StatusNormal || g.Op() != top || g.CommitMin() != top || g.CommitMax() != top || g.HasReady() {
			return false
		}
		if i == 0 {
			view = g.View()
		} else if g.View() != view {
			return false
		}
	}
	return true
}

// checkLiveness reports each client that made no post-heal progress.
func (w *world) checkLiveness() {
	if w.allClientsDone() || w.storageOverTolerance {
		return
	}
	for _, c := range w.clients {
		if c.doneAfterHeal {
			continue
		}
		state := "idle"
		if c.cur != nil {
			state = fmt.Sprintf("request %d (operation %d) issued at tick %d, %d attempts, target node %d",
				c.cur.Request, c.cur.Operation, c.curIssued, c.attemptsOfThis, c.target)
		}
		w.fail(c.group, -1, checkLiveness, "client %d: no request issued after heal (tick %d) committed within %d ticks: %s; cluster: %s",
			c.idx, w.healTick, w.livenessDeadline-w.healTick, state, w.describeGroup(c.group))
	}
}

// reportDivergence explains why replicas did not converge after heal.
func (w *world) reportDivergence() {
	if w.storageOverTolerance {
		return
	}
	for gi := range w.groups {
		if w.groupConverged(gi) {
			continue
		}
		w.fail(gi, -1, checkConvergence, "replicas did not reach commit %d within %d ticks of the workload settling: %s",
			w.checkers[gi].maxCommitted(), w.settleWindow, w.describeGroup(gi))
	}
}

func (w *world) describeGroup(gi int) string {
	var b strings.Builder
	for i, nd := range w.nodes {
		d := nd.replicas[gi]
		if !nd.up || d.g == nil {
			fmt.Fprintf(&b, "[%d down]", i)
			continue
		}
		g := d.g
		fmt.Fprintf(&b, "[%d status=%d view=%d log_view=%d op=%d commit_min=%d commit_max=%d primary=%v]",
			i, g.Status(), g.View(), g.LogView(), g.Op(), g.CommitMin(), g.CommitMax(), g.IsPrimary())
	}
	return b.String()
}

// checkClientTables: converged replicas of the metadata group hold the
// same client table (it is a function of the committed log).
func (w *world) checkClientTables() {
	for gi := range w.groups {
		var first []byte
		for i, nd := range w.nodes {
			ct, ok := nd.replicas[gi].g.(clientTableCarrier)
			if !ok || nd.replicas[gi].cfg.ClientTableMax == 0 {
				break
			}
			table := ct.ClientTableSnapshot()
			if i == 0 {
				first = table
			} else if string(table) != string(first) {
				w.fail(gi, i, checkClientTable, "at commit %d the client table differs from replica 0's: %s",
					w.checkers[gi].maxCommitted(), describeDiff(append(make([]byte, 16), first...), append(make([]byte, 16), table...)))
			}
		}
	}
}

// checkAnswered: once the cluster has settled, every proposal a live
// replica took has been answered ("every Propose ends in exactly one
// Reply"); one still waiting was silently dropped.
func (w *world) checkAnswered() {
	for i, nd := range w.nodes {
		for gi, d := range nd.replicas {
			if len(d.pending) == 0 {
				continue
			}
			oldestTag, oldestTick := uint64(0), uint64(math.MaxUint64)
			for tag, p := range d.pending {
				if p.tick < oldestTick || (p.tick == oldestTick && tag < oldestTag) {
					oldestTag, oldestTick = tag, p.tick
				}
			}
			w.fail(gi, i, checkUnanswered, "%d proposal(s) never answered; oldest tag %d proposed at tick %d", len(d.pending), oldestTag, oldestTick)
		}
	}
}
