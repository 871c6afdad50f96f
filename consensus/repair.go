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
	// topDown: the request is for the highest missing op whose canonical
	// checksum is known (topKnownGap), one op at a time.
	topDown     bool
	topRotation uint32 // rotation of the top-down requests (their own, so alternation cannot lock them onto one peer)
	// answered counts the RepairPrepares of this request that arrived,
	// used or refused: with the RepairDone they show the peer has
	// answered in full.
	answered uint64
	// quickRetries counts the requests since the last progress that left
	// at once after a full answer that filled nothing (retryIfStalled).
	quickRetries uint8
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
func (r *Replica) repairPeer(from uint64, widen bool) (uint8, bool) {
	if r.status == StatusViewChange && r.vc.plan != nil {
		peers := r.viewChangeSources(from, widen) &^ (1 << r.id)
		if peers == 0 {
			return 0, false
		}
		rotation := &r.repair.rotation
		if r.repair.topDown {
			rotation = &r.repair.topRotation
		}
		for range r.n {
			*rotation++
			p := uint8(*rotation % uint32(r.n))
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
func (r *Replica) viewChangeSources(op uint64, widen bool) uint32 {
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
	if present&^(1<<r.id) != 0 {
		return present
	}
	sources := plan.canonical
	if committed&^(1<<r.id) != 0 {
		sources = committed // a commit covering op is no promise of its body (commit_min may lag)
	}
	if _, ok := r.canonicalChecksum(op); ok && widen {
		// Nobody who sent a DVC reported the body and the last request
		// got nothing: a replica outside the view change (an amnesiac,
		// Recovering) may still hold it in its journal (simulator seed
		// 60840823). Its answer counts only as the entry of the known
		// canonical checksum (onRepairPrepare).
		sources |= r.outsiders()
	}
	return sources
}

// canonicalChecksum is the checksum the canonical entry of op must have,
// when this view change knows it: the canonical header's, else the parent
// link of the entry at op+1 in this replica's journal. That journal, from
// commit_min up to the head, is what the view would start with
// (reconcileJournal kept only entries verified against the merge, and
// repair admits only proven ones), so its links are as trustworthy as the
// view itself. Ops below every DVC's suffix (committed before it) are
// known only the second way.
func (r *Replica) canonicalChecksum(op uint64) (uint64, bool) {
	if h, ok := r.viewChangeHeader(op); ok {
		return h.Checksum, true
	}
	if op+1 > r.vc.plan.head || op+1 <= r.commitMin {
		return 0, false
	}
	if next, ok := r.journal.header(op + 1); ok {
		return next.Parent, true
	}
	return 0, false
}

// outsiders are the replicas that sent no DVC in the view change (bit per
// replica).
func (r *Replica) outsiders() uint32 {
	all := uint32(1)<<r.n - 1
	for i := range r.vc.dvcs {
		all &^= 1 << r.vc.dvcs[i].replica
	}
	return all
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
	to := min(r.repairTarget(), from+uint64(r.cfg.RepairChunkMax)-1)
	stalled := r.repair.active && !r.repair.topDown && r.repair.from == from // the last bottom-up request got nothing
	// The last top-down request was answered: the op below it is checkable now.
	descending := r.repair.active && r.repair.topDown && r.journal.has(r.repair.to)
	r.repair.topDown = false
	if (stalled || descending) && r.status == StatusViewChange && r.vc.plan != nil {
		if _, known := r.canonicalChecksum(from); !known {
			// The lowest missing op cannot be checked against anything,
			// and the sender whose commit covers it may hold a stale copy
			// (simulator seed 60901924): after a stalled bottom-up request
			// the chain fills from the top instead, where each repaired op
			// makes its predecessor's checksum known, and goes on downward
			// while each answer comes (a retry alternates again). One op a
			// retry period was slower than the view-change status timeout
			// (finding 22).
			if op, ok := r.topKnownGap(r.repairTarget()); ok {
				from, to, r.repair.topDown = op, op, true
			}
		}
	}
	peer, ok := r.repairPeer(from, stalled)
	if !ok {
		return
	}
	r.repair.active = true
	r.repair.nonce = r.rng.nonce()
	r.repair.peer = peer
	r.repair.from, r.repair.to = from, to
	r.repair.missingBefore = from
	r.repair.doneTo, r.repair.doneSeen = 0, false
	r.repair.answered = 0
	r.repair.retryTimer.start(r.ticks, uint64(r.cfg.RepairRetryTicks))
	r.send(Message{Kind: MsgRequestPrepares, To: peer, View: r.view, FromOp: from, ToOp: to, Nonce: r.repair.nonce})
}

func (r *Replica) tickRepair() {
	if r.repair.debounce.fired(r.ticks) && !r.repair.active {
		r.requestRepairNow()
	}
	if r.repair.active && r.repair.retryTimer.fired(r.ticks) {
		// Stalled: re-request the remaining window (another peer in a view change).
		r.repair.quickRetries = 0
		r.requestRepairNow()
	}
}

// onRequestPrepares serves up to RepairChunkMax prepares from the journal
// (Normal or ViewChange, never while transferring): RangeEvicted first when
// the front is gone, then the entries, then RepairDone naming the last op
// served.
//
// A Recovering replica (an amnesiac waiting for a primary's log) serves only
// a requester in a higher view than its own: it never sent a DVC in that
// view or a later one, so its answer, stamped with its own lower view, is
// never taken on its word, only as the body of a canonical header the
// requester's view change already knows (onRepairPrepare). Without it a
// view change could wait forever for a body only that journal still holds
// (simulator seed 60840823).
func (r *Replica) onRequestPrepares(m Message) {
	if r.Transferring() || m.FromOp == 0 || m.ToOp < m.FromOp {
		return
	}
	if r.status == StatusRecovering && m.View <= r.view {
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
		if s := r.journal.get(op); s != nil {
			p := s.prepare
			r.send(Message{Kind: MsgRepairPrepare, To: m.From, View: r.view, Prepare: &p, Nonce: m.Nonce})
		} else if p, ok := r.unverified[op]; ok && m.View > 0 && op > r.commitMin {
			// Unvouched (unverified.go): stamped below the request's view,
			// so only a known canonical checksum admits it.
			r.send(Message{Kind: MsgRepairPrepare, To: m.From, View: min(r.view, m.View-1), Prepare: &p, Nonce: m.Nonce})
		} else {
			break
		}
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
	if r.repair.active && m.Nonce == r.repair.nonce && m.From == r.repair.peer {
		r.repair.answered++
		defer r.retryIfStalled(m.Nonce)
	}
	if m.View > r.view || m.Prepare == nil || r.Transferring() || !verifyPrepare(m.Prepare) {
		return
	}
	h := &m.Prepare.Header
	if h.Op <= r.commitMin || h.Op > r.repairTarget() || r.journal.has(h.Op) {
		return
	}
	if m.View < r.view {
		// From a replica outside the view change (onRequestPrepares): only
		// the entry of the canonical checksum this view change knows.
		if r.status != StatusViewChange || r.vc.plan == nil {
			return
		}
		if sum, ok := r.canonicalChecksum(h.Op); !ok || sum != h.Checksum {
			return
		}
	} else if r.status == StatusViewChange {
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
		r.noteViewChangeRepair() // still assembling: the repair's progress keeps the view alive
	}
	r.continueRepair()
}

// provenCanonical reports whether a prepare served while a new view
// assembles is the canonical entry of its op (finding 9, seed 351602): it
// matches the canonical checksum when the view change knows one (the
// DVCs' header, or the parent link of the next op this primary-elect
// holds: a sender's covering commit is no proof against that, finding
// 16); otherwise the
// serving peer's own DVC must vouch for it, as a canonical sender (its log
// is the canonical log_view's) or with a commit covering the op (the
// committed prefix is shared by every later log). A stale sender serves its
// whole journal, including uncommitted ops of an older view above its
// commit: those are never taken on its word.
func (r *Replica) provenCanonical(from uint8, h *PrepareHeader) bool {
	if sum, ok := r.canonicalChecksum(h.Op); ok {
		return sum == h.Checksum // the merged header, or the chain down from it
	}
	for i := range r.vc.dvcs {
		d := &r.vc.dvcs[i]
		if d.replica == from {
			return d.logView == r.vc.plan.logView || h.Op <= d.commit
		}
	}
	return false
}

// topKnownGap is the highest op in (commit_min, upTo] missing from the
// journal whose canonical checksum the view change knows.
func (r *Replica) topKnownGap(upTo uint64) (uint64, bool) {
	for op := upTo; op > r.commitMin; op-- {
		if r.journal.has(op) {
			continue
		}
		if _, ok := r.canonicalChecksum(op); ok {
			return op, true
		}
	}
	return 0, false
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
	if r.repair.topDown {
		if r.journal.has(r.repair.to) {
			r.repair.quickRetries = 0
			r.sendRepairRequest() // the op below is checkable now
		}
		return
	}
	covered := r.repair.to
	if r.repair.doneSeen {
		covered = min(covered, r.repair.doneTo)
	}
	if next > covered && next > r.repair.missingBefore {
		r.repair.quickRetries = 0
		r.sendRepairRequest()
	}
}

// retryIfStalled asks again at once, while a new view assembles, when the
// peer has answered the request in full (its RepairDone and every
// RepairPrepare it named arrived) and nothing was filled: the peer lacks
// the range, or holds only copies nobody vouches for. Waiting out the
// retry period for each such peer made a primary-elect that had to fetch
// hundreds of ops one chain link at a time slower than its view change
// could wait (consensus simulator seed 21653198). After n-1 such retries
// without progress every peer has had its turn: the retry timer paces the
// next round.
func (r *Replica) retryIfStalled(nonce Uint128) {
	if !r.repair.active || r.repair.nonce != nonce || !r.repair.doneSeen ||
		r.status != StatusViewChange || r.vc.plan == nil {
		return
	}
	var named uint64
	if r.repair.doneTo >= r.repair.from {
		named = r.repair.doneTo - r.repair.from + 1
	}
	if r.repair.answered < named {
		return // RepairPrepares still on their way
	}
	next := r.firstMissing(r.repairTarget())
	if next == 0 {
		r.repair.active = false
		return
	}
	if (r.repair.topDown && r.journal.has(r.repair.to)) || (!r.repair.topDown && next > r.repair.missingBefore) {
		return // progress: continueRepair asked for the next range
	}
	if int(r.repair.quickRetries) >= int(r.n)-1 {
		return
	}
	r.repair.quickRetries++
	r.sendRepairRequest()
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
		r.repair.quickRetries = 0
		r.sendRepairRequest()
		return
	}
	r.retryIfStalled(m.Nonce)
}
