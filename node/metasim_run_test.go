package node

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

// run drives the world for steps steps with faults, then heals it and runs
// until every replica caught up and every client's request is answered
// (at most healSteps), then checks that the replicas converged.
func (w *metaSimWorld) run(steps, healSteps uint64) error {
	for i := uint64(0); i < steps && w.failure == nil; i++ {
		w.injectFaults()
		w.stepOnce(true)
	}
	w.heal()
	for i := uint64(0); w.failure == nil && !w.settled(); i++ {
		if i >= healSteps {
			if w.stalledBeyondBudget() {
				// Every group that did not settle lost more replicas' unsynced
				// writes or storage at once than it tolerates: waiting for an
				// operator is the safe outcome (docs/simulator.md, M10).
				w.stats.StalledBeyondBudget++
				return nil
			}
			w.fail(fmt.Errorf("not settled %d steps after the heal: %s", healSteps, w.describe()))
			break
		}
		w.stepOnce(false)
	}
	if w.failure == nil && (!w.keepGoing || w.settled()) {
		w.checkConverged()
	} else if w.keepGoing && w.allUp() {
		// A broken build's test wants every checker's word: the
		// partitions' files and messages are compared even when the run
		// did not settle.
		w.checkPartitions()
		w.checkMessages()
	}
	if w.keepGoing {
		return errors.Join(w.caught...)
	}
	return w.failure
}

// stepOnce advances virtual time by one step: restarts, deliveries, the
// tick every 10 ms, and the clients.
func (w *metaSimWorld) stepOnce(propose bool) {
	w.step++
	w.stats.Steps++
	w.now += simStepMicros
	for _, n := range w.nodes {
		if !n.up && w.now >= n.restartAt {
			if err := w.boot(n); err != nil {
				if !w.faults {
					w.fail(fmt.Errorf("boot after the heal: %w", err))
				}
				n.restartAt = w.now + 1_000_000 // an injected disk fault: the operator restarts it
				w.debugf("boot failed: %v", err)
			}
		}
	}
	w.deliverDue()
	w.planeWork()
	if w.step%simTickSteps == 0 {
		w.stats.Ticks++
		for _, n := range w.nodes {
			if n.up {
				w.guard(n, func() {
					n.driver.setNow()
					n.driver.group.Tick()
					if n.driver.primaryGone.check(n.driver.group, time.UnixMicro(int64(w.now))) {
						w.stats.PrimaryGone++
						w.trace.add("primary-gone", uint64(n.id))
					}
					w.ready(n)
					if n.up {
						w.tickPlane(n)
					}
				})
				if n.up && n.driver.fence.fenced() {
					w.stats.FencedSteps++
				}
			}
		}
	}
	w.driveClients(propose)
	w.driveProducers(propose)
	w.pollMessages()
	if w.step%1000 == 0 { // the partition-reopen and retention jobs, every second
		for _, n := range w.nodes {
			if n.up && n.plane != nil {
				w.guard(n, func() {
					n.plane.retryFailedOpens(time.UnixMicro(int64(w.now)))
					n.plane.clearPartitionsLost()
					w.retention(n)
				})
			}
		}
	}
	w.planeWork()
}

// injectFaults draws this step's crashes and network partitions.
func (w *metaSimWorld) injectFaults() {
	if w.healAt != 0 && w.now >= w.healAt {
		w.joinNetwork()
	}
	if w.sc.crashEvery > 0 && w.rng.Uint64N(w.sc.crashEvery) == 0 {
		if n := w.nodes[w.rng.IntN(len(w.nodes))]; n.up {
			wipe := w.sc.wipeShare > 0 && w.rng.Float64() < w.sc.wipeShare && w.wipeAllowed(n)
			power := w.rng.Float64() < w.sc.powerLoss
			if power && w.sc.partitions && !w.othersIntact(n) {
				power = false // one node's power at a time (othersIntact)
			}
			w.crash(n, power)
			if wipe {
				w.wipe(n)
			} else if w.sc.rotShare > 0 && w.rotRng.Float64() < w.sc.rotShare && w.wipeAllowed(n) {
				w.rot(n)
			}
		}
	}
	if w.healAt == 0 && w.sc.partitionRate > 0 && w.rng.Float64() < w.sc.partitionRate {
		x := w.rng.IntN(len(w.nodes))
		oneWay := w.rng.IntN(2) == 0
		for y := range w.nodes {
			if y != x {
				w.cut[x][y] = true
				if !oneWay {
					w.cut[y][x] = true
				}
			}
		}
		w.healAt = w.now + 1_000_000 + w.rng.Uint64N(4_000_000)
		w.stats.Partitions++
		w.trace.add("partition", uint64(x), b2u(oneWay))
		w.debugf("partition node %d one-way=%v", x, oneWay)
	}
}

func (w *metaSimWorld) joinNetwork() {
	for i := range w.cut {
		for j := range w.cut[i] {
			w.cut[i][j] = false
		}
	}
	w.healAt = 0
}

// heal ends every fault: the network joins, disks stop failing, crashed
// nodes boot at the next step.
func (w *metaSimWorld) heal() {
	w.faults = false
	w.joinNetwork()
	for _, n := range w.nodes {
		n.mem.SetFaults(vfs.Faults{})
		if !n.up {
			n.restartAt = w.now
		}
	}
	w.trace.add("heal")
	w.debugf("heal")
}

// settled: every node up, normal in one view, every op committed and
// applied everywhere, no storage fenced, every client answered.
func (w *metaSimWorld) settled() bool {
	var view uint32
	var op uint64
	for i, n := range w.nodes {
		if !n.up || n.driver.fence.fenced() {
			return false
		}
		g := n.driver.group
		if g.Status() != statusNormal || g.CommitMin() != g.CommitMax() || g.Op() != g.CommitMax() || n.driver.appliedOp != g.CommitMax() {
			return false
		}
		if i == 0 {
			view, op = g.View(), g.Op()
		} else if g.View() != view || g.Op() != op {
			return false
		}
	}
	for _, c := range w.clients {
		if c.pending != nil || c.session == 0 {
			return false
		}
	}
	return w.producersIdle() && w.partitionsSettled()
}

// stalledBeyondBudget: everything settled but partition groups that were
// beyond their budget (noteCompromised), each replica of them in a view
// change or recovering.
func (w *metaSimWorld) stalledBeyondBudget() bool {
	if !w.sc.partitions || len(w.beyondBudget) == 0 {
		return false
	}
	for _, n := range w.nodes {
		if !n.up || n.driver.fence.fenced() {
			return false
		}
		g := n.driver.group
		if g.Status() != statusNormal || g.CommitMin() != g.CommitMax() || n.driver.appliedOp != g.CommitMax() {
			return false
		}
	}
	stalled := false
	for _, n := range w.nodes {
		for k, d := range w.desiredPartitions(n) {
			e := n.plane.entry(k)
			if e == nil || e.group == nil {
				return false
			}
			g := e.group
			if g.Status() == statusNormal && g.CommitMin() == g.CommitMax() && g.Op() == g.CommitMax() {
				continue
			}
			if !w.beyondBudget[[2]uint64{k.groupID(), d.part.CreatedRevision}] ||
				(g.Status() != consensus.StatusViewChange && g.Status() != consensus.StatusRecovering) {
				return false
			}
			stalled = true
		}
	}
	return stalled
}

// allUp: every node is up.
func (w *metaSimWorld) allUp() bool {
	for _, n := range w.nodes {
		if !n.up {
			return false
		}
	}
	return true
}

// describe is the world's state for a liveness failure.
func (w *metaSimWorld) describe() string {
	var b strings.Builder
	for _, n := range w.nodes {
		if !n.up {
			fmt.Fprintf(&b, "node %d down; ", n.id)
			continue
		}
		g := n.driver.group
		fmt.Fprintf(&b, "node %d view %d %v op %d commit %d/%d applied %d fenced %v; ", n.id, g.View(), g.Status(),
			g.Op(), g.CommitMin(), g.CommitMax(), n.driver.appliedOp, n.driver.fence.fenced())
	}
	for _, c := range w.clients {
		if c.pending != nil {
			fmt.Fprintf(&b, "client %x request %d (%v) pending after %d attempts; ", c.id.Lo, c.pending.req.Request,
				c.pending.req.Operation, c.pending.attempts)
		}
	}
	if w.sc.partitions {
		b.WriteString("partitions: " + w.describePartitions())
	}
	return b.String()
}
