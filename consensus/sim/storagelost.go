package sim

import "github.com/lodestream/lodestream/consensus"

// Lost storage (the storagelost profiles): some crashes also lose the
// node's storage, and its replicas restart with Restored.StorageLost, as
// the node restarts them (node/partition_vsr.go, node/storage_lost.go):
//
//   - journal: the WAL was set aside as damaged; every journal entry is
//     gone, the superblock and the snapshot stay (Restored{Superblock,
//     Snapshot, StorageLost});
//   - data (partition groups only): the log fell below the superblock's
//     frontier; the superblock stays with its checkpoint cleared, the
//     snapshot and the journal are gone (Restored{Superblock with
//     CheckpointOp 0, StorageLost});
//   - wiped: the node's disk was wiped or replaced; every group of the
//     node restarts with nothing (Restored{Superblock: &VsrState{},
//     StorageLost}, as the node boots a wiped replica, or with no
//     superblock at all: the core treats the two alike).
//
// The decision outlives later crashes (the node's storage.lost marker):
// every restart passes StorageLost until the replica is Normal in a view
// its durable superblock records as log_view, with no transfer running,
// everything committed applied, and the core no longer withholding nacks
// (consensus.Group.StorageLost) — the condition under which the node
// removes the marker (partitionShard.rejoinedAfterLoss). Until then the
// replica counts as lost.
//
// A group tolerates f = (n-1)/2 lost replicas at once: a committed op is
// on a replication quorum, so at least one intact copy survives, and the
// intact replicas still make a view-change quorum. Losses that would
// leave more than f replicas of a group lost at once are not drawn (the
// crash stays an ordinary one), except in the seeds with
// StorageLossUnbounded. There safety is checked as always (a lost replica
// never nacks and never elects, so no committed op may be cut even then),
// but a group with more than f replicas still lost at the heal may stall
// for good: liveness and convergence are not required of such a run
// (world.storageOverTolerance).

type storageLossKind uint8

const (
	lossJournal storageLossKind = iota + 1 // WAL set aside: superblock and snapshot kept
	lossData                               // superblock kept, checkpoint cleared; snapshot and journal gone
	lossWiped                              // nothing left
)

var storageLossNames = [...]string{lossJournal: "journal", lossData: "data", lossWiped: "wiped"}

// tolerance is how many replicas of a group may be lost at once.
func (w *world) tolerance() int { return (w.scn.Replicas - 1) / 2 }

// compromisedReplicas counts group gi's replicas (but node except's) that lost storage or
// unsynced writes and have not got their log back: storage lost, or
// amnesiac (a power loss took their page cache; the core's flag, durable
// or pending). A storage loss beside them is budgeted as one beside lost
// replicas: after a rack power loss an op may live on one replica only
// until the others hold the log again, and wiping that one is beyond
// what any protocol survives (simulator finding 25, seed 70319642).
func (w *world) compromisedReplicas(gi, except int) int {
	n := 0
	for i, nd := range w.nodes {
		if i == except {
			continue
		}
		d := nd.replicas[gi]
		switch {
		case d.storageLost, d.amnesiaPending:
			n++
		case d.g != nil:
			if a, ok := d.g.(amnesiacReporter); ok && a.Amnesiac() {
				n++
			}
		case d.store.superblock != nil && d.store.superblock.Amnesiac:
			n++
		}
	}
	return n
}

// lostReplicas counts group gi's replicas that still count as lost.
func (w *world) lostReplicas(gi int) int {
	n := 0
	for _, nd := range w.nodes {
		if nd.replicas[gi].storageLost {
			n++
		}
	}
	return n
}

// maybeLoseStorage runs after node i crashed: with the scenario's
// StorageLossPerCrash the crash also lost storage.
func (w *world) maybeLoseStorage(i int) {
	if w.scn.StorageLossPerCrash == 0 || !w.rng.chance(w.scn.StorageLossPerCrash) {
		return
	}
	nd := w.nodes[i]
	kinds := make([]storageLossKind, len(nd.replicas))
	if w.rng.chance(w.scn.StorageWipeShare) {
		for gi := range kinds {
			kinds[gi] = lossWiped
		}
	} else {
		picked := false
		for gi := range kinds {
			if !w.rng.chance(0.6) {
				continue
			}
			picked = true
			kinds[gi] = lossJournal
			if nd.replicas[gi].cfg.ClientTableMax == 0 && w.rng.chance(0.25) {
				kinds[gi] = lossData // the node's "log below its frontier": partition groups
			}
		}
		if !picked {
			kinds[w.rng.intn(len(kinds))] = lossJournal
		}
	}
	nilSuperblock := w.rng.chance(0.5)
	if !w.scn.StorageLossUnbounded {
		for gi, k := range kinds {
			if k != 0 && !nd.replicas[gi].storageLost && w.compromisedReplicas(gi, i)+1 > w.tolerance() {
				w.cov.StorageLossesRefused++
				w.logf("storage loss of node %d refused: %s would have more than %d lost or amnesiac replicas", i, w.groups[gi].name, w.tolerance())
				return // an ordinary crash
			}
		}
	}
	for gi, k := range kinds {
		if k != 0 {
			w.loseStorage(nd.replicas[gi], k, nilSuperblock)
		}
	}
	w.cov.StorageLosses++
	for gi := range kinds {
		if w.lostReplicas(gi) > w.tolerance() {
			w.cov.StorageLossesOverTolerance++
			w.logf("%s has %d lost replicas, more than it tolerates (%d)", w.groups[gi].name, w.lostReplicas(gi), w.tolerance())
			break
		}
	}
}

// loseStorage drops what a loss of this kind takes from one replica's
// storage and marks it lost.
func (w *world) loseStorage(d *replicaDriver, k storageLossKind, nilSuperblock bool) {
	s := &d.store
	entries := uint64(len(s.index))
	switch k {
	case lossJournal:
		s.loseJournal()
	case lossData:
		s.loseJournal()
		s.loseCheckpoint()
	case lossWiped:
		s.loseJournal()
		s.loseCheckpoint()
		s.superblock = nil
	}
	d.storageLost = true
	d.wipedNilSuperblock = k == lossWiped && nilSuperblock
	snapOp := uint64(0)
	if s.snapshot != nil {
		snapOp = s.snapshot.Op
	}
	w.checkers[d.group].onStorageLost(d.node, s.superblock, snapOp, k == lossWiped)
	w.cov.StorageLostReplicas++
	if k == lossWiped {
		w.cov.StorageWipes++
	}
	w.trace(evStorageLoss, d.node, d.group, uint64(k), entries)
	w.logf("storage loss (%s) of node %d %s: %d journal entries gone", storageLossNames[k], d.node, w.groups[d.group].name, entries)
}

// loseJournal: every journal record is gone (the WAL set aside). The
// entries it held are remembered for the quorum audit: the
// acknowledgements sent for them were honest when they left.
func (s *storage) loseJournal() {
	for op, sum := range s.index {
		if s.lost == nil {
			s.lost = map[uint64]uint64{}
		}
		s.lost[op] = sum
	}
	clear(s.log)
	s.log, s.synced, s.index = nil, 0, nil
}

// loseCheckpoint: the snapshot is gone and the superblock (if any) no
// longer names a checkpoint, as the node restarts a partition whose log
// fell below its frontier.
func (s *storage) loseCheckpoint() {
	s.snapshot = nil
	s.drained = 0
	if s.superblock != nil {
		sb := *s.superblock
		sb.CheckpointOp, sb.AnchorChecksum, sb.AnchorTimestamp = 0, 0, 0
		s.superblock = &sb
	}
}

// restoredAfterLoss fills in what a lost replica's restart passes.
func (d *replicaDriver) restoredAfterLoss(st *consensus.Restored) {
	if !d.storageLost {
		return
	}
	st.StorageLost = true
	if st.Superblock == nil && !d.wipedNilSuperblock {
		st.Superblock = &consensus.VsrState{} // as the node boots a wiped replica
	}
	d.w.cov.StorageLostRestarts++
}

// transferReporter is a core that says whether a state transfer runs.
type transferReporter interface{ Transferring() bool }

// maybeRejoinedAfterLoss (after a drained input) ends the lost state once
// the replica holds the log of a view its durable superblock records, as
// the node removes its storage.lost marker.
func (d *replicaDriver) maybeRejoinedAfterLoss() {
	g := d.g
	if !d.storageLost || g == nil || g.Status() != consensus.StatusNormal || g.LogView() != g.View() ||
		d.store.superblock == nil || d.store.superblock.LogView != g.View() ||
		g.CommitMin() != g.CommitMax() || d.app.op != g.CommitMin() || g.StorageLost() {
		return
	}
	if t, ok := g.(transferReporter); ok && t.Transferring() {
		return
	}
	d.storageLost, d.wipedNilSuperblock = false, false
	d.w.cov.StorageLostRejoins++
	d.w.trace(evStorageRejoin, d.node, d.group, uint64(g.View()), g.CommitMin())
	d.w.logf("node %d %s rejoined after losing storage (view %d, commit %d)", d.node, d.w.groups[d.group].name, g.View(), g.CommitMin())
}

// storageOverToleranceAtHeal: some group has more replicas still lost
// than it tolerates; it may never elect again, so the run's liveness and
// convergence are not required (safety is).
func (w *world) storageOverToleranceAtHeal() bool {
	for gi := range w.groups {
		if w.lostReplicas(gi) > w.tolerance() {
			return true
		}
	}
	return false
}

// onStorageLost: the replica's durable state is what the loss left. A
// wiped replica forgets its durable superblock, its snapshot and the
// views it revealed (its disk was replaced: the core's StorageLost rules
// stand in for them); otherwise the superblock stays (with its checkpoint
// cleared when the snapshot went).
func (c *groupChecker) onStorageLost(r int, sb *consensus.VsrState, snapshotOp uint64, wiped bool) {
	w := &c.replicas[r]
	if sb != nil {
		w.durable, w.durableSet = *sb, true
	} else {
		w.durable, w.durableSet = consensus.VsrState{}, false
	}
	w.snapshotOp = snapshotOp
	if wiped {
		w.revealedView = 0
	}
}
