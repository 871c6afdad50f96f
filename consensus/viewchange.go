package consensus

// viewChangeState is reset on every view this replica enters.
type viewChangeState struct {
	svcFrom uint32 // bit per replica whose SVC for this view we hold (self included)
	dvcSent bool
	dvcFrom uint32
	dvcs    []dvcRecord
	plan    *mergePlan // decided merge, parked until the bodies are local
	// amnesiacDVCs are flagged DVCs held back until amnesiaRackThreshold
	// of them arrived (amnesiacQuorum); then they count (amnesia.go).
	amnesiacDVCs   []dvcRecord
	amnesiacQuorum bool
	svcTimer       timer
	dvcTimer       timer
	statusTimer    timer
	rsvTimer       timer
	// repaired (primary-elect): how many times in this view change a
	// repaired op left fewer ops missing than ever before (missingLow), so
	// an op repaired, cut and repaired again counts once; repairedSentAt: the tick its last StartViewChange carrying it
	// left. electProgress (backup): the highest RepairProgress the view's
	// primary-elect reported.
	repaired       uint64
	missingLow     uint64
	repairedSentAt uint64
	electProgress  uint64
}

// startViewChange enters view v (spec §3.5 step 1): pending proposals get
// 57, SVC is broadcast. The superblock carrying v is persisted before the
// SVC leaves (it rides in the same Ready).
func (r *Replica) startViewChange(v uint32) {
	if v <= r.view && r.status == StatusViewChange {
		return
	}
	r.abandonPipeline()
	r.abortTransfer()
	r.amnesiaJoinRack()
	r.view = v
	r.status = StatusViewChange
	r.vc.svcFrom = 1 << r.id
	r.vc.dvcSent = false
	r.vc.dvcFrom = 0
	r.vc.dvcs = r.vc.dvcs[:0]
	r.vc.amnesiacDVCs = nil
	r.vc.amnesiacQuorum = false
	r.vc.plan = nil
	r.vc.repaired, r.vc.missingLow, r.vc.repairedSentAt, r.vc.electProgress = 0, ^uint64(0), 0, 0
	r.heartbeatTimer.stop()
	r.commitTimer.stop()
	r.repair.active = false
	r.vc.svcTimer.start(r.ticks, uint64(r.cfg.ViewChangeRetransmitTicks))
	r.vc.statusTimer.start(r.ticks, uint64(r.cfg.ViewChangeStatusTicks))
	r.vc.rsvTimer.start(r.ticks, uint64(r.cfg.RequestStartViewTicks))
	r.vc.dvcTimer.stop()
	r.broadcastStartViewChange()
	r.maybeSendDVC()
}

func (r *Replica) onStartViewChange(m Message) {
	r.noteAmnesia(m)
	if r.status == StatusRecovering || m.View < r.view {
		return
	}
	if m.View > r.view {
		r.startViewChange(m.View)
	}
	if r.status == StatusNormal {
		if r.IsPrimary() && m.View == r.view {
			r.sendStartView(m.From, Uint128{}) // the view already started
		}
		return
	}
	r.vc.svcFrom |= 1 << m.From
	if m.From == r.primaryOf(r.view) && m.RepairProgress > r.vc.electProgress {
		// The primary-elect is still filling its log and getting ops:
		// escalating now would make the next one start over (finding 22).
		// Each extension needs a higher count, which is bounded by the ops
		// it can miss, so a stuck primary-elect is still left behind.
		r.vc.electProgress = m.RepairProgress
		r.vc.statusTimer.start(r.ticks, uint64(r.cfg.ViewChangeStatusTicks))
	}
	r.maybeSendDVC()
}

// broadcastStartViewChange (re)sends this replica's SVC for its view; a
// primary-elect with a decided merge reports its repair progress in it.
func (r *Replica) broadcastStartViewChange() {
	m := Message{Kind: MsgStartViewChange, View: r.view, Amnesiac: r.amnesiaFlagged()}
	if r.isPrimaryIndex() && r.vc.plan != nil {
		m.RepairProgress = r.vc.repaired
		r.vc.repairedSentAt = r.ticks
	}
	r.broadcast(m)
}

// noteViewChangeRepair (primary-elect of a decided merge): an op was
// repaired into the journal. When fewer ops are missing than ever before
// in this view change, its own status timer starts over, and its backups
// hear of the progress at once unless they heard of some within the last
// eighth of a status period (their timers start over too). Counting new
// lows, not repaired ops, bounds the extensions by the ops missing at
// first: a repair that keeps cutting and refilling the same ops is no
// progress (consensus simulator seed 70148394).
func (r *Replica) noteViewChangeRepair() {
	if r.status != StatusViewChange || !r.isPrimaryIndex() || r.vc.plan == nil {
		return
	}
	missing := r.missingCount(r.vc.plan.head)
	if missing >= r.vc.missingLow {
		return
	}
	r.vc.missingLow = missing
	r.vc.repaired++
	r.vc.statusTimer.start(r.ticks, uint64(r.cfg.ViewChangeStatusTicks))
	if r.vc.repairedSentAt == 0 || r.ticks-r.vc.repairedSentAt >= max(1, uint64(r.cfg.ViewChangeStatusTicks)/8) {
		r.broadcastStartViewChange()
	}
}

// maybeSendDVC sends this replica's DVC once it holds SVCs from f others.
func (r *Replica) maybeSendDVC() {
	if r.status != StatusViewChange || r.vc.dvcSent {
		return
	}
	f := (int(r.n) - 1) / 2
	if popcount(r.vc.svcFrom&^(1<<r.id)) < f {
		return
	}
	r.vc.dvcSent = true
	d := r.buildDVC()
	if r.isPrimaryIndex() {
		r.recordDVC(d)
		r.tryMerge()
		return
	}
	r.sendDVC(d)
	r.vc.dvcTimer.start(r.ticks, uint64(r.cfg.ViewChangeRetransmitTicks))
}

func (r *Replica) sendDVC(d dvcRecord) {
	r.send(Message{Kind: MsgDoViewChange, To: r.primaryOf(r.view), View: r.view, LogView: d.logView,
		HeadOp: d.op, CommitOp: d.commit, Suffix: d.headers, Nack: d.nack, Present: d.present, Amnesiac: d.amnesiac,
		StorageLost: d.lost, CommitMax: d.commitMax})
}

// buildDVC snapshots this replica's log suffix: headers from op down to
// max(commit, 1), at most 128. A missing body is reported by its view
// header when log_view's StartView named it (so the merge sees the view's
// head and headers: finding 6), else as a blank. A nack proves the replica
// never prepared the op: missing above commit and not an unprovable loss.
// That holds for a header-only op adopted in this incarnation too
// (TigerBeetle nacks "dirty, not faulty" slots): it never held the body
// since, so it never acknowledged it; a holder elsewhere in the quorum
// keeps the op, while an op that only a dead primary held can be cut.
// After a restart the view ops the journal lacks are unprovable (a crash
// may have cut an acknowledged body). present says it can serve the body.
func (r *Replica) buildDVC() dvcRecord {
	head, held := r.op, r.op
	if r.amnesia.rack {
		held = r.heldThrough() // amnesia.go: no commit claims past the bodies held
	}
	commit := min(r.commitMax, held)
	d := dvcRecord{replica: r.id, logView: r.logView, op: head, commit: commit, amnesiac: r.amnesiaFlagged(),
		lost: r.recovery.storageLost, commitMax: r.commitMax}
	low := max(commit, 1)
	if head >= dvcSuffixHeadersMax && low < head-(dvcSuffixHeadersMax-1) {
		low = head - (dvcSuffixHeadersMax - 1)
	}
	if head == 0 {
		return d
	}
	d.headers = make([]PrepareHeader, 0, head-low+1)
	for op := head; op >= low; op-- {
		i := head - op
		if h, ok := r.journal.header(op); ok {
			if op > held {
				h.Commit = 0
			}
			d.headers = append(d.headers, h)
			setBit(&d.present, i)
		} else {
			vh, ok := r.viewHeaderAt(op)
			if !ok {
				vh, ok = r.anchorHeader(op)
			}
			if !ok {
				vh = PrepareHeader{Op: op, Operation: OperationReserved}
			}
			if op > held {
				vh.Commit = 0
			}
			d.headers = append(d.headers, vh)
			if r.nackable(op, commit) {
				setBit(&d.nack, i)
			}
		}
		if op == 0 {
			break
		}
	}
	return d
}

func (r *Replica) recordDVC(d dvcRecord) {
	if r.vc.dvcFrom&(1<<d.replica) != 0 {
		return // keep the first DVC per sender
	}
	r.vc.dvcFrom |= 1 << d.replica
	r.vc.svcFrom |= 1 << d.replica
	if r.recordAmnesiacDVC(d) {
		return
	}
	r.vc.dvcs = append(r.vc.dvcs, d)
}

// nackable: a missing op above commit that this replica can prove it
// never prepared. An amnesiac proves nothing, except in a view change it
// joined because too few intact replicas may exist: there its lost ops are
// lost (a quorum-wide power loss), and a nack is what lets the merge cut an
// op no survivor holds.
func (r *Replica) nackable(op, commit uint64) bool {
	if op <= commit {
		return false
	}
	if r.rackCandidate() {
		// It may have acknowledged the op before its power or storage
		// was lost; only in a rack election does it nack (amnesia.go).
		return r.amnesia.rack
	}
	_, lost := r.unprovable[op]
	return !lost
}

func (r *Replica) onDoViewChange(m Message) {
	if r.status == StatusRecovering || m.View < r.view || len(m.Suffix) > dvcSuffixHeadersMax {
		return
	}
	if m.View > r.view {
		r.startViewChange(m.View)
	}
	if r.status == StatusNormal {
		if r.IsPrimary() && m.View == r.view {
			r.sendStartView(m.From, Uint128{})
		}
		return
	}
	if !r.isPrimaryIndex() || m.LogView > m.View || !suffixWellFormed(m.HeadOp, m.Suffix) {
		return
	}
	d := dvcRecord{replica: m.From, logView: m.LogView, op: m.HeadOp, commit: min(m.CommitOp, m.HeadOp),
		headers: append([]PrepareHeader(nil), m.Suffix...), nack: m.Nack, present: m.Present, amnesiac: m.Amnesiac, lost: m.StorageLost,
		commitMax: m.CommitMax}
	r.recordDVC(d)
	r.maybeSendDVC()
	r.tryMerge()
}

// tryMerge runs the merge once Q_vc DVCs (own included) are in, again on
// every further DVC until decided.
func (r *Replica) tryMerge() {
	if r.vc.plan != nil || !r.vc.dvcSent || len(r.vc.dvcs) < r.quorumViewChange || r.awaitingAllVoters() || r.tooManyLost() {
		return
	}
	plan := mergeDoViewChanges(r.vc.dvcs, int(r.n), r.quorumViewChange)
	if plan.outcome != mergeDecided {
		return
	}
	if c := reportedCommitMax(r.vc.dvcs); c > plan.head && !r.vc.amnesiacQuorum {
		// A voter knows ops up to c committed, yet no DVC holds them: their
		// holders are outside this quorum, which only lost storage or
		// amnesia beyond tolerance allows (a replica whose WAL was lost
		// keeps the commit_max its superblock recorded). Deciding would cut
		// committed ops; wait for a DVC that holds them. A rack election,
		// which knowingly restores service after such a loss, is exempt.
		return
	}
	r.vc.plan = &plan
	r.forgetAmnesiacCommits(plan.commitMax)
	r.raiseCommitMax(plan.commitMax)
	r.reconcileJournal(plan.head, plan.header)
	r.op = plan.head
	r.maybeStartView()
}

// maybeStartView starts the view once every op commit_min+1..head is local
// (spec §3.5 steps 5-6); otherwise repair fetches them from canonical senders.
func (r *Replica) maybeStartView() {
	plan := r.vc.plan
	if plan == nil || r.status != StatusViewChange {
		return
	}
	r.promoteUnverified()
	if missing := r.firstMissing(plan.head); missing != 0 {
		r.commitVerifiedPrefix(plan)
		// One session at a time: re-requesting on every repaired entry
		// would drop the rest of the chunk in flight (new nonce).
		if !r.repair.active {
			r.requestRepairNow()
		}
		return
	}
	// The next prepare's parent: the head's checksum, from the journal or
	// the merged headers. Without it the chain cannot continue: stay in the
	// view change (the status timeout moves on to another primary).
	switch h, ok := r.journal.header(r.op); {
	case ok:
		r.headChecksum = h.Checksum
	case r.op == 0:
		r.headChecksum = 0
	case r.op == r.checkpointOp && r.anchorChecksum != 0:
		r.headChecksum = r.anchorChecksum // the head is our checkpoint op
	default:
		ph, known := plan.header(r.op)
		if !known {
			return
		}
		r.headChecksum = ph.Checksum
	}
	r.status = StatusNormal
	r.logView = r.view
	r.endAmnesiaAsPrimary()
	r.recovery.storageLost = false // as for amnesia: it holds the whole log
	// The journal covers commit_min+1..head (checked above) and those
	// entries precede this superblock write, so log_view becomes durable
	// only with its whole log; the view headers ride along for uniformity.
	_, suffix := r.startViewSuffix()
	r.setViewHeaders(r.op, suffix)
	r.vc.plan = nil
	r.stopViewChangeTimers()
	r.repair.active = false
	for op := r.commitMin; op <= r.op; op++ {
		if h, ok := r.journal.header(op); ok {
			r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
		}
	}
	for _, h := range plan.headers {
		r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
	}
	// Rebuild the pipeline from the journal: uncommitted ops re-earn quorum.
	r.pipeline = r.pipeline[:0]
	for op := r.commitMax + 1; op <= r.op; op++ {
		s := r.journal.get(op)
		e := pipelineEntry{header: s.prepare.Header}
		if s.durable {
			e.acks = 1 << r.id
		}
		r.pipeline = append(r.pipeline, e)
	}
	r.observedNewerView = 0
	r.commitTimer.start(r.ticks, uint64(r.cfg.CommitBroadcastTicks))
	for to := uint8(0); to < r.n; to++ {
		if to != r.id {
			r.sendStartView(to, Uint128{})
		}
	}
	if len(r.pipeline) > 0 {
		r.prepareAttempts = 0
		r.prepareTimer.start(r.ticks, uint64(r.cfg.PrepareRetransmitTicks))
	}
	r.commitPipeline()
}

func (r *Replica) stopViewChangeTimers() {
	r.vc.svcTimer.stop()
	r.vc.dvcTimer.stop()
	r.vc.statusTimer.stop()
	r.vc.rsvTimer.stop()
}

// sendStartView tells `to` the current view's log (head, commit, suffix).
// incarnation echoes a probe's (zero when broadcast).
func (r *Replica) sendStartView(to uint8, incarnation Uint128) {
	commit, headers := r.startViewSuffix()
	r.send(Message{Kind: MsgStartView, To: to, View: r.view, HeadOp: r.op, CommitOp: commit, Suffix: headers, Incarnation: incarnation})
}

// startViewSuffix is the primary's log suffix for a StartView: headers
// from op down to max(commit, 1), at most 128, blank where released but
// the checkpoint op's (anchorHeader).
func (r *Replica) startViewSuffix() (commit uint64, headers []PrepareHeader) {
	commit = min(r.commitMax, r.op)
	low := max(commit, 1)
	if r.op >= dvcSuffixHeadersMax && low < r.op-(dvcSuffixHeadersMax-1) {
		low = r.op - (dvcSuffixHeadersMax - 1)
	}
	if r.op > 0 {
		headers = make([]PrepareHeader, 0, r.op-low+1)
		for op := r.op; op >= low && op > 0; op-- {
			h, ok := r.journal.header(op)
			if !ok {
				h, _ = r.anchorHeader(op)
			}
			h.Op = op
			headers = append(headers, h)
		}
	}
	return commit, headers
}

// onStartView: a backup adopts the new primary's log (spec §3.5 step 7).
func (r *Replica) onStartView(m Message) {
	if m.From != r.primaryOf(m.View) || m.View < r.view || len(m.Suffix) > dvcSuffixHeadersMax {
		return
	}
	if !r.viewKnownAtLeast(m.View) {
		r.deferStartView(m)
		if r.status == StatusViewChange && m.Incarnation != r.cfg.Incarnation {
			r.probeForViewEvidence() // ask at once: the status timeout may move the view on first
		}
		return // a wiped replica: a later view may have started (view_evidence.go)
	}
	if r.status == StatusNormal && m.View == r.view && r.logView == r.view {
		return // already in this view
	}
	if m.View == r.logView && m.HeadOp < r.commitMin {
		return
	}
	if r.status == StatusRecovering && !r.cfg.Incarnation.IsZero() && m.Incarnation != r.cfg.Incarnation &&
		(!m.Incarnation.IsZero() || m.View == r.logView) {
		// An answer to an earlier boot's probe, or a nonce-less StartView
		// of the view this replica's log is in: it may predate prepares of
		// that view this replica acknowledged before it crashed (finding
		// 8). A nonce-less StartView of a later view is safe: acks in a
		// view need log_view = that view, durable first, so this replica
		// sent none there, and every StartView of a view extends the log
		// its view change started from.
		return
	}
	if r.amnesiaFlagged() && !r.cfg.Incarnation.IsZero() && m.Incarnation != r.cfg.Incarnation {
		// An amnesiac that has not adopted a view since its restart takes
		// only the answer to this boot's probe: a nonce-less StartView may
		// have left before a rack power loss that the view's primary did
		// not survive (finding 15, seed 60831083), and its log and commit
		// numbers may be ones the rack election then dropped. The answer
		// comes from a primary Normal after this replica's restart: ask
		// the sender at once (a view change's own probe may come only
		// as its status timeout moves the view on: seed 60836442).
		r.send(Message{Kind: MsgRequestStartView, To: m.From, View: r.view, Incarnation: r.cfg.Incarnation, Amnesiac: true,
			ViewUnknown: r.recovery.viewUnknown})
		return
	}
	// A StartView of the view this log already is (log_view = v) may be
	// older than prepares of v held here: merged, never cut (finding 8).
	head, above, canonical := r.startViewLog(m)
	if r.status == StatusNormal && r.isPrimaryIndex() {
		r.abandonPipeline()
	}
	r.view = m.View
	r.logView = m.View
	r.status = StatusNormal
	r.recovery.viewUnknown, r.recovery.deferredStartView = false, nil
	r.adoptedView()
	r.stopViewChangeTimers()
	r.vc.plan = nil
	r.recovery.probeAttempts = 0
	r.commitTimer.stop()
	r.observedNewerView = 0
	r.forgetAmnesiacCommits(m.CommitOp)
	r.raiseCommitMax(m.CommitOp)
	for _, h := range m.Suffix {
		r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
	}
	r.reconcileJournal(head, canonical)
	// log_view = v becomes durable with v's head headers (finding 6): if
	// this replica crashes before repair fills the journal, its DVC still
	// reports the view's head instead of a shorter, canonical-looking log.
	r.setViewHeaders(head, append(above, m.Suffix...))
	r.op = head
	r.seenOp = head
	r.heartbeatView, r.heartbeatCounter = m.View, 0
	r.heartbeatTimer.start(r.ticks, uint64(r.cfg.HeartbeatTimeoutTicks))
	for op := m.CommitOp + 1; op <= head; op++ {
		if h, ok := r.journal.header(op); ok {
			r.sendPrepareOk(&h)
		}
	}
	r.commitJournal()
	if r.firstMissing(r.op) != 0 {
		r.requestRepairNow()
	}
}

// reconcileJournal makes the uncommitted journal a prefix-consistent copy
// of the canonical log: entries above head go, entries whose checksum
// differs from the canonical header (or, below the known headers, from the
// verified successor's parent) go, durably (Ready.Truncate). Entries that
// cannot be verified either way leave the in-memory journal only, marked
// unprovable so this replica never nacks them: they may be acknowledged
// ops, and a durable truncate below verified entries needs a re-append
// that a crash between the two writes would lose (simulator finding 7);
// Restart re-verifies them against the view headers. Verified entries
// above the lowest divergent op are re-appended so the driver's journal
// stays a simple truncate-then-append log.
func (r *Replica) reconcileJournal(head uint64, canonical func(op uint64) (PrepareHeader, bool)) {
	// Above the canonical head nothing can have committed (the merge proved
	// it), so an old "maybe acknowledged" mark there would only stop this
	// replica from nacking a later op of the same number.
	for op := range r.unprovable {
		if op > head {
			delete(r.unprovable, op)
		}
	}
	lowestBad := uint64(0)
	if r.journal.headOp > head {
		if low := r.journal.lowestHeld(head + 1); low != 0 {
			lowestBad = low
		}
	}
	top := min(head, r.journal.headOp)
	var expect uint64
	expectKnown := false
	for op := top; op > r.commitMin; op-- {
		if h, ok := canonical(op); ok {
			expect, expectKnown = h.Checksum, true
		}
		s := r.journal.get(op)
		if s == nil {
			expectKnown = false
			continue
		}
		if expectKnown && s.prepare.Header.Checksum == expect {
			expect = s.prepare.Header.Parent
			continue
		}
		if expectKnown {
			lowestBad = op // proven divergent
		} else {
			r.dropUnverified(op)
		}
		expectKnown = false
	}
	if lowestBad == 0 {
		return
	}
	var keep []Prepare
	for op := lowestBad + 1; op <= top; op++ {
		s := r.journal.get(op)
		if s == nil {
			continue
		}
		if h, ok := canonical(op); ok && h.Checksum != s.prepare.Header.Checksum {
			continue
		}
		keep = append(keep, s.prepare)
	}
	r.truncateFrom(lowestBad)
	for _, p := range keep {
		r.appendEntry(p)
	}
}

// dropUnverified removes op from the in-memory journal (and from the
// not-yet-persisted entries) without a durable truncate, and marks it
// unprovable: never nacked, re-fetched by repair, which overwrites the
// durable copy (the driver's journal is keyed by op).
func (r *Replica) dropUnverified(op uint64) {
	r.keepUnverified(op)
	r.journal.remove(op)
	r.unprovable[op] = struct{}{}
	kept := r.pending.Entries[:0]
	for _, e := range r.pending.Entries {
		if e.Header.Op != op {
			kept = append(kept, e)
		}
	}
	r.pending.Entries = kept
}

// commitVerifiedPrefix (primary-elect of a decided merge, still
// repairing) applies the ops commit_min+1.. it holds up to the merge's
// commit_max whose entries are the canonical ones: the merged (or
// canonical senders') header of the op, or the parent link of a verified
// op above it. They are committed in every log that holds them, so
// applying them is what a Normal replica would do; it lets the
// checkpoint move on, without which a journal whose checkpoint lags
// cannot hold the merged head (simulator finding 23, seed 70148394: 16
// slots, checkpoint 158, head 175; the slots of 174 and 175 held 158 and
// 159, and no view change could ever finish).
func (r *Replica) commitVerifiedPrefix(plan *mergePlan) {
	top := min(plan.commitMax, r.commitMax)
	if top <= r.commitMin || r.Transferring() {
		return
	}
	// Verify top-down: an op is canonical when the merge (or a canonical
	// sender) names its checksum, or when the verified op above it names
	// it as parent.
	base := r.commitMin
	verified := make([]bool, top-base)
	var parent uint64
	parentKnown := false
	for op := top; op > base; op-- {
		var h PrepareHeader
		s := r.journal.get(op)
		held := s != nil
		if held {
			h = s.prepare.Header
		}
		want, known := parent, parentKnown
		if vh, ok := r.viewChangeHeader(op); ok {
			want, known = vh.Checksum, true
		}
		ok := held && known && h.Checksum == want
		verified[op-base-1] = ok
		parent, parentKnown = h.Parent, ok
	}
	for op := base + 1; op <= top && verified[op-base-1]; op++ {
		s := r.journal.get(op)
		r.commitMin = op
		r.pending.Committed = append(r.pending.Committed, s.prepare)
	}
}

// missingCount returns how many ops in (commit_min, upTo] the journal lacks.
func (r *Replica) missingCount(upTo uint64) uint64 {
	var n uint64
	for op := r.commitMin + 1; op <= upTo; op++ {
		if !r.journal.has(op) {
			n++
		}
	}
	return n
}

// firstMissing returns the lowest op in (commit_min, upTo] not in the journal, or 0.
func (r *Replica) firstMissing(upTo uint64) uint64 {
	for op := r.commitMin + 1; op <= upTo; op++ {
		if !r.journal.has(op) {
			return op
		}
	}
	return 0
}

func (r *Replica) tickViewChange() {
	if r.vc.statusTimer.fired(r.ticks) {
		r.startViewChange(r.escalationView()) // escalate (spec §3.3 ViewChangeStatus)
		return
	}
	if r.vc.svcTimer.fired(r.ticks) {
		r.vc.svcTimer.start(r.ticks, uint64(r.cfg.ViewChangeRetransmitTicks))
		r.broadcastStartViewChange()
	}
	if r.vc.dvcTimer.fired(r.ticks) && r.vc.dvcSent && !r.isPrimaryIndex() {
		r.vc.dvcTimer.start(r.ticks, uint64(r.cfg.ViewChangeRetransmitTicks))
		r.sendDVC(r.buildDVC())
	}
	if r.vc.rsvTimer.fired(r.ticks) {
		r.vc.rsvTimer.start(r.ticks, uint64(r.cfg.RequestStartViewTicks))
		if r.recovery.viewUnknown {
			r.probeForViewEvidence()
		} else if r.vc.dvcSent && !r.isPrimaryIndex() {
			r.send(Message{Kind: MsgRequestStartView, To: r.primaryOf(r.view), View: r.view, Incarnation: r.cfg.Incarnation, Amnesiac: r.amnesiaFlagged()})
		}
	}
}

// suffixWellFormed: header i of a suffix is op (head - i) or blank.
func suffixWellFormed(head uint64, headers []PrepareHeader) bool {
	if uint64(len(headers)) > head {
		return false
	}
	for i := range headers {
		if headers[i].Checksum != 0 && headers[i].Op != head-uint64(i) {
			return false
		}
	}
	return true
}

// escalationView is the view a stalled view change (or an exhausted
// probe) moves to: the next one, or, when traffic of a later view was
// seen, that view at once. A replica left behind climbs one view per
// status timeout otherwise, and a cluster many views ahead keeps it out
// for as many timeouts (simulator finding 12, seed 10207958 crashy); in
// the cluster's own view its SVC is answered with a StartView by that
// view's Normal primary.
// HandOver makes the primary step down in favour of replica to: an orderly
// view change to the first view above the current one that to leads. The
// primary leaves Normal at once (its pipeline's and queue's proposals
// answer NotCommitted: they may still commit in the new view), so there is
// never a second primary, and to becomes primary once a view-change quorum
// of DoViewChanges reaches it (if it cannot, the view-change timers move
// on to the next view, as after any failure). It does nothing, and returns
// false, unless this replica is the Normal primary, not transferring, and
// to is another replica of the group.
func (r *Replica) HandOver(to uint8) bool {
	if !r.IsPrimary() || r.Transferring() || to == r.id || to >= r.n {
		return false
	}
	v := r.view + 1
	for primaryIndex(v, r.n) != to {
		v++
	}
	r.startViewChange(v)
	return true
}

func (r *Replica) escalationView() uint32 {
	return max(r.view+1, r.observedNewerView)
}

// reportedCommitMax is the highest commit_max the DVCs report (unclamped).
func reportedCommitMax(dvcs []dvcRecord) uint64 {
	var c uint64
	for _, d := range dvcs {
		c = max(c, d.commitMax)
	}
	return c
}

// anchorHeader is the header of the checkpoint op once the journal
// released it, as far as the superblock keeps it (its checksum and
// timestamp; the state transfer target serves the same). A StartView or
// DVC whose head is the checkpoint op carries it: without it the backups
// knew the head committed but not its checksum, and when the checkpoint's
// replica lost its journal later, the others could not prove the bodies
// they held of the ops below it, nor take them from each other, and the
// view change stalled for good (simulator seed 70229023).
func (r *Replica) anchorHeader(op uint64) (PrepareHeader, bool) {
	if op == 0 || op != r.checkpointOp || r.anchorChecksum == 0 {
		return PrepareHeader{}, false
	}
	return PrepareHeader{Op: op, Checksum: r.anchorChecksum, Timestamp: r.snapshotTimestamp}, true
}
