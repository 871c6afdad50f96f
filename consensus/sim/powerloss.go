package sim

// Power loss (the powerloss profile, `durability = replicated`): a node's
// partition journal records reach the page cache when written and the
// disk at its periodic sync; a power loss drops what was not synced and
// restarts the node's partition replica with Restored.Amnesia. The
// metadata group syncs every write (its WAL fdatasyncs each append) and
// is never amnesiac: a power loss is an ordinary crash for it. Ordinary
// crashes keep the page cache (the OS survives the process).

// syncDue syncs the journals of every node whose sync point is this tick
// (down nodes too: the OS flushes a dead process's writes).
func (w *world) syncDue() {
	every := uint64(w.scn.SyncEveryTicks)
	if every == 0 {
		return
	}
	for i, nd := range w.nodes {
		if (w.now+uint64(i)*7)%every != 0 {
			continue
		}
		for _, d := range nd.replicas {
			d.store.sync()
		}
	}
}

// maybePowerLoss draws this tick's power losses (faulty phase only).
func (w *world) maybePowerLoss() {
	if w.healed || w.scn.SyncEveryTicks == 0 {
		return
	}
	if w.scn.RackPowerLossPerTick > 0 && w.rng.chance(w.scn.RackPowerLossPerTick) {
		w.rackPowerLoss("rack power loss")
		return
	}
	if w.rng.chance(w.scn.PowerLossPerTick) {
		i := w.rng.intn(len(w.nodes))
		if w.scn.PowerLossNodes[i] && w.canCrash(i) {
			w.powerLoss(i)
			w.crashNode(i, "power loss")
		}
	}
}

// powerLoss drops node i's unsynced journal records; every restart of its
// replicas is amnesiac until the core's own superblock says so (the
// node's boot record, which is not updated before that).
func (w *world) powerLoss(i int) {
	for _, d := range w.nodes[i].replicas {
		if !d.store.lazySync {
			continue // synced on every write: nothing to lose
		}
		if d.store.unsynced() {
			w.cov.PageCachesLost++
		}
		d.store.losePageCache()
		d.amnesiaPending = true
	}
	w.cov.PowerLosses++
	w.trace(evPowerLoss, i, -1, 0, 0)
	w.logf("power loss of node %d", i)
}

// rackPowerLoss: every node loses power at once and they boot together.
// Ops acknowledged only through page caches may be lost: the checker
// excuses ops committed before it (groupChecker.onQuorumPowerLoss).
func (w *world) rackPowerLoss(why string) {
	w.cov.RackPowerLosses++
	for i, nd := range w.nodes {
		w.powerLoss(i)
		if nd.up {
			w.crashNode(i, why)
		}
	}
	back := w.now + 1 + uint64(w.rng.expTicks(w.scn.DownTicksMean, 20*int(w.scn.DownTicksMean)))
	for _, nd := range w.nodes {
		nd.restartTick = back
	}
	for gi, c := range w.checkers {
		if w.nodes[0].replicas[gi].store.lazySync {
			c.onQuorumPowerLoss()
		}
	}
}
