package consensus

// repairState is the one journal-repair session of this replica (spec §3.9).
type repairState struct {
	active        bool
	nonce         Uint128
	peer          uint8
	from, to      uint64
	missingBefore uint64 // lowest missing op when the request left (progress test)
	retryTimer    timer
	debounce      timer
	rotation      uint32 // picks the next canonical sender while a new view assembles
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

func (r *Replica) repairPeer() (uint8, bool) {
	if r.status == StatusViewChange && r.vc.plan != nil {
		// Canonical senders hold only canonical entries: ask them in turn.
		peers := r.vc.plan.canonical &^ (1 << r.id)
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

func (r *Replica) sendRepairRequest() {
	from := r.firstMissing(r.repairTarget())
	if from == 0 {
		r.repair.active = false
		return
	}
	peer, ok := r.repairPeer()
	if !ok {
		return
	}
	to := min(r.repairTarget(), from+uint64(r.cfg.RepairChunkMax)-1)
	r.repair.active = true
	r.repair.nonce = r.rng.nonce()
	r.repair.peer = peer
	r.repair.from, r.repair.to = from, to
	r.repair.missingBefore = from
	r.repair.retryTimer.start(r.ticks, uint64(r.cfg.RepairRetryTicks))
	r.send(Message{Kind: MsgRequestPrepares, To: peer, View: r.view, Op: from, ToOp: to, Nonce: r.repair.nonce})
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
	if r.Transferring() || r.status == StatusRecovering || m.Op == 0 || m.ToOp < m.Op {
		return
	}
	from := m.Op
	if from < r.journal.floor || (r.snapshot != nil && from <= r.snapshot.Op) {
		first := r.journal.lowestHeld(from)
		if first == 0 {
			first = r.op + 1
		}
		r.send(Message{Kind: MsgRangeEvicted, To: m.From, View: r.view, Op: first, Nonce: m.Nonce})
		if first > m.ToOp {
			r.send(Message{Kind: MsgRepairDone, To: m.From, View: r.view, Op: from - 1, Nonce: m.Nonce})
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
	r.send(Message{Kind: MsgRepairDone, To: m.From, View: r.view, Op: last, Nonce: m.Nonce})
}

// onRepairPrepare accepts a repaired entry from the session's peer in our
// view: from the primary (authoritative for its view) or, while a new view
// assembles, from a canonical sender, checked against the merged headers.
func (r *Replica) onRepairPrepare(m Message) {
	if !r.repair.active || m.Nonce != r.repair.nonce || m.From != r.repair.peer || m.View != r.view ||
		m.Prepare == nil || !verifyPrepare(m.Prepare) || r.Transferring() {
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
		if canon, ok := r.vc.plan.header(h.Op); ok && canon.Checksum != h.Checksum {
			return
		}
	} else if r.status != StatusNormal || r.isPrimaryIndex() {
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
	r.appendEntry(Prepare{Header: *h, Body: append([]byte(nil), m.Prepare.Body...)})
	r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
	if r.status == StatusNormal {
		r.op = max(r.op, h.Op)
		if h.Op > r.commitMax {
			r.sendPrepareOk(h)
		}
		r.commitJournal()
	} else {
		r.maybeStartView()
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
		if m.Op > r.commitMin+1 && r.repairWanted() {
			// The history we need is gone from the peer: state transfer.
			r.repair.active = false
			r.startTransfer(m.From)
		}
		return
	}
	next := r.firstMissing(r.repairTarget())
	if next == 0 {
		r.repair.active = false
		return
	}
	if next > r.repair.missingBefore {
		r.sendRepairRequest()
	}
}
