package sim

// Process faults: which node may crash, where in a Ready it dies, and how
// it comes back.

func (w *world) canCrash(i int) bool {
	if w.healed || !w.nodes[i].up {
		return false
	}
	down := 0
	for _, nd := range w.nodes {
		if !nd.up {
			down++
		}
	}
	return down < w.scn.MaxDown
}

// faultyCrashFactor: nodes with faulty storage crash this much more often
// while carrying out a Ready, so torn tails and lost unsynced writes are
// common rather than rare.
const faultyCrashFactor = 4

// planCrash decides whether, and where, the node dies while carrying out
// the Ready it is about to process.
func (w *world) planCrash(i, writes, messages int) crashPlan {
	p := w.scn.CrashPerReady
	if w.scn.FaultyStorage[i] {
		p *= faultyCrashFactor
	}
	if p == 0 || !w.canCrash(i) || !w.rng.chance(p) {
		return crashPlan{}
	}
	if w.scn.FaultyStorage[i] && writes > 0 && w.rng.chance(0.6) {
		// Lost unsynced writes: a prefix of the Ready's writes survives, and
		// the next journal record may be torn.
		return crashPlan{point: crashMidPersist, at: w.rng.intn(writes), torn: w.rng.chance(0.5)}
	}
	switch w.rng.intn(4) {
	case 0:
		if writes == 0 {
			return crashPlan{point: crashBeforeSend}
		}
		return crashPlan{point: crashMidPersist, at: 0} // nothing of it durable
	case 1:
		return crashPlan{point: crashBeforeSend}
	case 2:
		if messages == 0 {
			return crashPlan{point: crashBeforeAdvance}
		}
		return crashPlan{point: crashMidSend, at: w.rng.intn(messages)}
	default:
		return crashPlan{point: crashBeforeAdvance}
	}
}

func (w *world) crashNode(i int, why string) {
	nd := w.nodes[i]
	nd.up = false
	for gi, d := range nd.replicas {
		d.g = nil
		d.pending = nil
		d.held = nil // persisted; never sent, applied or advanced
		w.checkers[gi].onCrash(i)
	}
	nd.restartTick = w.now + 1 + uint64(w.rng.expTicks(w.scn.DownTicksMean, 20*int(w.scn.DownTicksMean)))
	w.crashes++
	w.trace(evCrash, i, -1, nd.restartTick, 0)
	w.logf("crash node %d (%s), restart at %d", i, why, nd.restartTick)
	w.maybeLoseStorage(i)
}

func (w *world) restartNode(i int) {
	nd := w.nodes[i]
	for _, d := range nd.replicas {
		if err := d.start(true); err != nil {
			w.fail(d.group, i, checkContract, "%v", err)
			return
		}
	}
	nd.up = true
	w.cov.Restarts++
	w.trace(evRestart, i, -1, 0, 0)
	w.logf("restart node %d", i)
	for _, d := range nd.replicas {
		if nd.up && d.g != nil {
			d.drain()
		}
	}
}
