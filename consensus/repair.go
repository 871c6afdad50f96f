package consensus

// repairState is the one journal-repair session of this replica (spec §3.9).
type repairState struct {
	active        bool
	nonce         Uint128
	peer          uint8
	from, to      uint64
	missingBefore uint64 // lowest missing op when the request left (progress test)
	// doneTo is the last op the peer said it served (RepairDone), valid
	// when doneSeen: a RepairDone may overtake the chunk's RepairPrepares.
	doneTo     uint64
	doneSeen   bool
	retryTimer timer
	debounce   timer
	rotation   uint32 // picks the next canonical sender while a new view assembles
}

// repairTarget is the highest op this replica wants to hold.
func (r *Replica) repairTarget() uint64 {
	if r.status == StatusViewChange && r.vc.plan != nil {
		return r.vc.plan.head
	}
	return max(r.commitMax, r.seenOp, r.op)
}

// repairWanted reports whether a gap exists that repair can fill now.
func (r *Replica) repairWanted() bool {
	if r.Transferring() {
		return false
	}
	switch {
	case r.status == StatusViewChange && r.vc.plan != nil:
	case r.status == StatusNormal && !r.isPrimaryIndex():
	default:
		return false
	}
	return r.firstMissing(r.repairTarget()) != 0
}

// noteGap arms the debounce: a gap must persist RepairGapDebounceTicks
// (floored at 50) before a session opens, so reordering does not cause
// needless repair traffic.
func (r *Replica) noteGap() {
	if r.repair.active || r.repair.debounce.armed || !r.repairWanted() {
		return
	}
	r.repair.debounce.start(r.ticks, uint64(max(r.cfg.RepairGapDebounceTicks, repairGapDebounceFloor)))
}

// requestRepairNow opens (or re-opens) a session without debounce: after
// adopting a view the gap is known to be real.
func (r *Replica) requestRepairNow() {
	r.repair.debounce.stop()
	if !r.repairWanted() {
		r.repair.active = false
		return
	}
	r.sendRepairRequest()
}

// repairPeer picks who serves op `from`: the view's primary when Normal;
// while a new view assembles, in turn one of the senders that reported the
// canonical header of `from` with its body, else one that knows `from`
// committed, else a canonical sender.
func (r *Replica) repairPeer(from uint64) (uint8, bool) {
	if r.status == StatusViewChange && r.vc.plan != nil {
		peers := r.viewChangeSources(from) &^ (1 << r.id)
		if peers == 0 {
			return 0, false
		}
		for range r.n {
			r.repair.rotation++
			p := uint8(r.repair.rotation % uint32(r.n))
			if peers&(1<<p) != 0 {
				return p, true
			}
		}
		return 0, false
	}
	return r.primaryOf(r.view), true
}

// viewChangeSources returns the DVC senders able to serve op's body (bit
// per replica). A canonical sender may hold only the header of an op
// (view headers without the body), so the body comes from whoever reported
// the canonical header with its present bit; below the merged commit,
// a sender whose own commit covers op holds the committed entry (its
// journal is a subset of its log_view's log, whose committed prefix every
// later log shares). Canonical senders are the last resort.
func (r *Replica) viewChangeSources(op uint64) uint32 {
	plan := r.vc.plan
	canon, known := r.viewChangeHeader(op)
	var present, committed uint32
	for i := range r.vc.dvcs {
		d := &r.vc.dvcs[i]
		if h, inSuffix, blank := d.headerAt(op); known && inSuffix && !blank && h.Checksum == canon.Checksum &&
			bitAt(d.present, d.op-op) {
			present |= 1 << d.replica
		}
		if op <= plan.commitMax && d.commit >= op {
			committed |= 1 << d.replica
		}
	}
	switch {
	case present&^(1<<r.id) != 0:
		return present
	case committed&^(1<<r.id) != 0:
		return committed
	default:
		return plan.canonical
	}
}

// viewChangeHeader is the canonical header of op while a new view
// assembles: the merged one from the commit point up, below it the one
// canonical senders reported, if any.
func (r *Replica) viewChangeHeader(op uint64) (PrepareHeader, bool) {
	plan := r.vc.plan
	if h, ok := plan.header(op); ok {
		return h, true
	}
	if op >= plan.base {
		return PrepareHeader{}, false
	}
	h := canonicalHeader(r.vc.dvcs, plan.logView, op)
	return h, h.Checksum != 0
}

func (r *Replica) sendRepairRequest() {
	from := r.firstMissing(r.repairTarget())
	if from == 0 {
		r.repair.active = false
		return
	}
	peer, ok := r.repairPeer(from)
	if !ok {
		return
	}
	to := min(r.repairTarget(), from+uint64(r.cfg.RepairChunkMax)-1)
	r.repair.active = true
	r.repair.nonce = r.rng.nonce()
	r.repair.peer = peer
	r.repair.from, r.repair.to = from, to
	r.repair.missingBefore = from
	r.repair.doneTo, r.repair.doneSeen = 0, false
	r.repair.retryTimer.start(r.ticks, uint64(r.cfg.RepairRetryTicks))
	r.send(Message{Kind: MsgRequestPrepares, To: peer, View: r.view, FromOp: from, ToOp: to, Nonce: r.repair.nonce})
}

func (r *Replica) tickRepair() {
	if r.repair.debounce.fired(r.ticks) && !r.repair.active {
		r.requestRepairNow()
	}
	if r.repair.active && r.repair.retryTimer.fired(r.ticks) {
		// Stalled: re-request the remaining window (another peer in a view change).
		r.requestRepairNow()
	}
}

// onRequestPrepares serves up to RepairChunkMax prepares from the journal
// (Normal or ViewChange, never while transferring): RangeEvicted first when
// the front is gone, then the entries, then RepairDone naming the last op
// served.
func (r *Replica) onRequestPrepares(m Message) {
	if r.Transferring() || r.status == StatusRecovering || m.FromOp == 0 || m.ToOp < m.FromOp {
		return
	}
	from := m.FromOp
	if from < r.journal.floor || (r.snapshot != nil && from <= r.snapshot.Op) {
		first := r.journal.lowestHeld(from)
		if first == 0 {
			first = r.op + 1
		}
		r.send(Message{Kind: MsgRangeEvicted, To: m.From, View: r.view, FirstRetainedOp: first, Nonce: m.Nonce})
		if first > m.ToOp {
			r.send(Message{Kind: MsgRepairDone, To: m.From, View: r.view, LastServedOp: from - 1, Nonce: m.Nonce})
			return
		}
		from = first
	}
	last := from - 1
	limit := uint64(r.cfg.RepairChunkMax)
	for op := from; op <= m.ToOp && op-from < limit; op++ {
		s := r.journal.get(op)
		if s == nil {
			break
		}
		p := s.prepare
		r.send(Message{Kind: MsgRepairPrepare, To: m.From, View: r.view, Prepare: &p, Nonce: m.Nonce})
		last = op
	}
	r.send(Message{Kind: MsgRepairDone, To: m.From, View: r.view, LastServedOp: last, Nonce: m.Nonce})
}

// onRepairPrepare accepts a repaired entry sent in our view: from the
// primary (authoritative for its view) or, while a new view assembles,
// from a DVC sender that proves it canonical. The session nonce is not
// required: provenance, not the session, makes an entry safe, and a
// reply that overtook its retry (repair_retry shorter than the round
// trip) must still count, or repair only progresses by luck (finding 10,
// seed 208859).
func (r *Replica) onRepairPrepare(m Message) {
	if m.View != r.view || m.Prepare == nil || r.Transferring() || !verifyPrepare(m.Prepare) {
		return
	}
	h := &m.Prepare.Header
	if h.Op <= r.commitMin || h.Op > r.repairTarget() || r.journal.has(h.Op) {
		return
	}
	if r.status == StatusViewChange {
		if r.vc.plan == nil {
			return
		}
		if !r.provenCanonical(m.From, h) {
			return
		}
	} else if r.status != StatusNormal || r.isPrimaryIndex() || m.From != r.primaryOf(r.view) {
		return
	}
	// The peer's log is authoritative: drop neighbours that do not chain.
	if next, ok := r.journal.header(h.Op + 1); ok && next.Parent != h.Checksum {
		r.truncateFrom(h.Op + 1)
	}
	if prev, ok := r.journal.header(h.Op - 1); ok && prev.Checksum != h.Parent {
		if h.Op-1 <= r.commitMin {
			return // would contradict our committed history: not from this log
		}
		r.truncateFrom(h.Op - 1)
	}
	if !r.journal.canAppend(h.Op, r.checkpointOp) {
		return
	}
	r.appendEntry(Prepare{Header: *h, Body: m.Prepare.Body}) // Step owns the body: no copy
	r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
	if r.status == StatusNormal {
		r.op = max(r.op, h.Op)
		if h.Op > r.commitMax {
			r.sendPrepareOk(h)
		}
		r.commitJournal()
		r.drainReordered()
	} else {
		r.maybeStartView()
	}
	r.continueRepair()
}

// provenCanonical reports whether a prepare served while a new view
// assembles is the canonical entry of its op (finding 9, seed 351602): it
// matches the canonical header when the DVCs name one; below them, the
// serving peer's own DVC must vouch for it, as a canonical sender (its log
// is the canonical log_view's) or with a commit covering the op (the
// committed prefix is shared by every later log). A stale sender serves its
// whole journal, including uncommitted ops of an older view above its
// commit: those are never taken on its word.
func (r *Replica) provenCanonical(from uint8, h *PrepareHeader) bool {
	if canon, ok := r.viewChangeHeader(h.Op); ok {
		return canon.Checksum == h.Checksum
	}
	for i := range r.vc.dvcs {
		d := &r.vc.dvcs[i]
		if d.replica == from {
			return d.logView == r.vc.plan.logView || h.Op <= d.commit
		}
	}
	return false
}

// continueRepair asks for the next chunk as soon as the journal covers the
// requested range (or what the peer said it served), whichever of the
// chunk's RepairPrepares and its RepairDone arrived last (finding 5).
func (r *Replica) continueRepair() {
	if !r.repair.active {
		return
	}
	next := r.firstMissing(r.repairTarget())
	if next == 0 {
		r.repair.active = false
		return
	}
	covered := r.repair.to
	if r.repair.doneSeen {
		covered = min(covered, r.repair.doneTo)
	}
	if next > covered && next > r.repair.missingBefore {
		r.sendRepairRequest()
	}
}

// onRepairReply handles RepairDone and RangeEvicted. Completion is judged
// by the local journal, never by the peer's claim: progress asks for the
// next chunk at once, a stall waits for the retry timer.
func (r *Replica) onRepairReply(m Message) {
	if !r.repair.active || m.Nonce != r.repair.nonce || m.From != r.repair.peer {
		return
	}
	if m.Kind == MsgRangeEvicted {
		if m.FirstRetainedOp > r.commitMin+1 && r.repairWanted() {
			// The history we need is gone from the peer: state transfer.
			r.repair.active = false
			r.startTransfer(m.From)
		}
		return
	}
	r.repair.doneTo, r.repair.doneSeen = m.LastServedOp, true
	next := r.firstMissing(r.repairTarget())
	if next == 0 {
		r.repair.active = false
		return
	}
	if next > r.repair.missingBefore {
		r.sendRepairRequest()
	}
}
