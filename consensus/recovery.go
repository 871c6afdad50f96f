package consensus

import "fmt"

type recoveryState struct {
	probeAttempts uint32
	probeTimer    timer
	// storageLost (Restored.StorageLost): never fall back to an election
	// while Recovering, and never nack until the journal holds the log of
	// the view this replica joined up to its head (maybeClearStorageLost).
	storageLost bool
	// viewUnknown: StorageLost with no durable view (a wiped replica): the
	// views it promised are forgotten, so it takes a StartView only of a
	// view at least as high as the views n - Q_vc + 1 other replicas
	// reported (heardFrom, heardView: each sender's highest;
	// view_evidence.go).
	viewUnknown bool
	heardFrom   uint32
	heardView   [replicaCountMax]uint32
	// deferredStartView: the latest answer to this boot's probe refused
	// for want of evidence, taken once a ProbeAnswer completes it.
	deferredStartView *Message
}

// Restart rebuilds a replica from what its storage held (spec §3.6).
// With n = 1 the recovered head is committed and the replica is Normal at
// once. With n > 1 and any recovered state it joins as a probing backup
// (Recovering): it does not vote, it asks for the current view with its
// per-boot Incarnation, and after ViewProbeAttemptsMax unanswered probes it
// falls back to an election on the recovered logs.
func Restart(cfg Config, st Restored) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := newReplica(cfg)
	// Amnesia outlives ordinary crashes through the superblock; a
	// restart that newly has it rewrites the superblock in its first Ready.
	r.amnesia.on = (st.Amnesia || (st.Superblock != nil && st.Superblock.Amnesiac)) && cfg.ReplicaCount > 1
	intact := st.JournalIntact && !r.amnesia.on
	if st.Superblock != nil {
		if st.Superblock.LogView > st.Superblock.View {
			return nil, fmt.Errorf("consensus restart: superblock log_view %d > view %d",
				st.Superblock.LogView, st.Superblock.View)
		}
		r.view, r.logView = st.Superblock.View, st.Superblock.LogView
		r.commitMax = st.Superblock.CommitMax
		r.checkpointOp = st.Superblock.CheckpointOp
		r.snapshotTimestamp = st.Superblock.AnchorTimestamp
		r.anchorChecksum = st.Superblock.AnchorChecksum
		r.lastTimestamp = st.Superblock.AnchorTimestamp
		if err := validateViewHeaders(st.Superblock.ViewHeaders); err != nil {
			return nil, fmt.Errorf("consensus restart: superblock: %w", err)
		}
		r.durable = *st.Superblock
		r.viewHeaders = append([]PrepareHeader(nil), st.Superblock.ViewHeaders...)
		r.durable.ViewHeaders = r.viewHeaders // same slice: no rewrite at boot
	}
	if st.Snapshot != nil {
		if SnapshotChecksum(st.Snapshot.Data) != st.Snapshot.Checksum {
			return nil, fmt.Errorf("consensus restart: snapshot at op %d fails its checksum", st.Snapshot.Op)
		}
		s := *st.Snapshot
		r.snapshot = &s
		if s.Op != r.checkpointOp {
			// A crash between the snapshot and its superblock: the
			// superblock's anchor is the previous checkpoint op's header,
			// not this one's. Unknown unless the journal still holds the
			// entry (restoreEntries); kept, it would pass for op s.Op's
			// checksum in a DVC or StartView (anchorHeader), refuse the
			// real entry and break the chain (simulator seed 21459133).
			r.anchorChecksum = 0
		}
		r.checkpointOp = max(r.checkpointOp, s.Op)
		r.commitMin, r.appliedOp, r.tableOp = s.Op, s.Op, s.Op
		r.commitMax = max(r.commitMax, s.Op)
		r.op = s.Op
		r.journal.releaseBelow(s.Op)
	}
	if r.commitMin < r.checkpointOp && st.Snapshot == nil {
		return nil, fmt.Errorf("consensus restart: superblock checkpoint_op %d but no snapshot", r.checkpointOp)
	}
	if r.op == r.checkpointOp && r.op > 0 {
		r.headChecksum = r.anchorChecksum // restoreEntries overrides it if the anchor entry is given
	}
	if err := r.restoreEntries(st.Entries, intact); err != nil {
		return nil, err
	}
	if cfg.ReplicaCount > 1 {
		r.verifyAgainstViewHeaders()
		r.restoreViewHead(intact)
	}
	if st.Superblock == nil && r.op > 0 {
		if h, ok := r.journal.header(r.op); ok {
			r.view = h.View // no superblock: the view from the last prepare, log_view 0
		}
	}
	fresh := st.Superblock == nil && st.Snapshot == nil && len(st.Entries) == 0 && !st.StorageLost && !st.Amnesia
	r.recovery.storageLost = st.StorageLost && cfg.ReplicaCount > 1
	r.recovery.viewUnknown = r.recovery.storageLost && (st.Superblock == nil || st.Superblock.View == 0)
	switch {
	case cfg.ReplicaCount == 1:
		r.commitMax = r.op // solo: every durable prepare is committed
		r.enterInitialNormal()
		r.commitJournal()
	case fresh:
		r.view = cfg.InitialView
		r.enterInitialNormal()
	default:
		r.status = StatusRecovering
		r.broadcastProbe()
	}
	return r, nil
}

// restoreEntries loads the journal after the snapshot (plus, if given, the
// entry at the snapshot op, which anchors the chain), stopping at the
// first hash-chain break or disagreement with the durable view headers.
// Ops missing in between are marked unprovable: a lost entry may have been
// acknowledged, so it must never be nacked. With n > 1 so are the durable
// entries cut at a break, and the head stays at the highest of them, so
// the DVC reports them as blanks rather than implicit nacks.
func (r *Replica) restoreEntries(entries []Prepare, intact bool) error {
	// A journal never holds more than journal_slots un-checkpointed ops; older
	// entries below that window are stale ones a StartView left durable
	// (reconcileJournal drops unverifiable entries from memory only): not
	// loaded, unprovable. n = 1 never leaves any, so there it is an error.
	staleBelow := uint64(0)
	if n := len(entries); n > 0 && r.n > 1 {
		if top := entries[n-1].Header.Op; top > uint64(len(r.journal.slots)) {
			staleBelow = top - uint64(len(r.journal.slots)) + 1
		}
		if staleBelow > r.commitMin {
			live := make([]Prepare, 0, min(n, len(r.journal.slots)+1))
			for _, e := range entries {
				op := e.Header.Op
				if op >= r.commitMin && op < staleBelow {
					// The anchor (op == commitMin) goes too: outside the window its
					// slot is the one of op commitMin + journal_slots, which a
					// replica whose checkpoint had moved on in memory (its WAL
					// written, its superblock not yet) may hold (whole-node
					// simulator seed 8288). It is committed, so not unprovable.
					if op > r.commitMin {
						r.unprovable[op] = struct{}{}
					}
					continue
				}
				live = append(live, e)
			}
			entries = live
		}
	}
	if len(entries) > len(r.journal.slots) {
		return fmt.Errorf("consensus restart: %d entries exceed journal_slots %d", len(entries), len(r.journal.slots))
	}
	prevOp := r.commitMin
	for i := range entries {
		p := entries[i]
		if !verifyPrepare(&p) {
			return fmt.Errorf("consensus restart: entry %d (op %d) fails its checksum", i, p.Header.Op)
		}
		op := p.Header.Op
		if op < r.commitMin {
			continue
		}
		if !r.journal.canAppend(op, r.checkpointOp) {
			return fmt.Errorf("consensus restart: entries up to op %d span more than journal_slots %d", op, len(r.journal.slots))
		}
		if op == r.commitMin {
			if r.anchorChecksum != 0 && p.Header.Checksum != r.anchorChecksum {
				// A stale copy of the snapshot op: prepared in a view that
				// did not keep it, while the snapshot came by state transfer
				// (its anchor is the superblock's). Anchoring on it would
				// make the canonical successor look like another history,
				// and the replica would refuse it for good (metadata
				// simulator seed 16313).
				continue
			}
			// The entry at the snapshot op anchors the hash chain.
			r.journal.put(p, r.checkpointOp)
			r.journal.get(op).durable = true
			r.headChecksum = p.Header.Checksum
			r.lastTimestamp = max(r.lastTimestamp, p.Header.Timestamp)
			r.snapshotTimestamp = p.Header.Timestamp
			r.anchorChecksum = p.Header.Checksum
			continue
		}
		if op <= prevOp {
			return fmt.Errorf("consensus restart: entries not in op order at op %d", op)
		}
		prev, prevOK := r.journal.header(op - 1)
		vh, vhOK := r.viewHeaderAt(op)
		broken := (prevOK && prev.Checksum != p.Header.Parent) || (vhOK && vh.Checksum != p.Header.Checksum)
		if broken && r.staleLeftover(&p.Header, prev, prevOK, vh, vhOK) {
			// Not log_view's op: its slot is a gap (nacked with an intact
			// journal, unprovable without), and the entries after it are
			// checked as after any gap.
			continue
		}
		if broken && op-1 > r.commitMin && r.leftoverBefore(&p.Header, prev, prevOK, vh, vhOK) {
			// The entry before is the leftover: out of the journal, its
			// slot a gap, and this one, log_view's own (it matches any
			// view header there), is loaded.
			r.journal.remove(op - 1)
			if !intact {
				r.unprovable[op-1] = struct{}{}
			}
			broken = false
		}
		if broken {
			// Chain break: the tail from here is not trustworthy, but it is
			// durable and may have been acknowledged.
			if r.n > 1 {
				// Bounded: entries span at most journal_slots ops.
				last := min(entries[len(entries)-1].Header.Op, prevOp+uint64(len(r.journal.slots)))
				for lost := prevOp + 1; lost <= last; lost++ {
					r.unprovable[lost] = struct{}{}
				}
				r.op = max(r.op, last)
			}
			break
		}
		// A gap may be an entry a crash cut; with an intact journal
		// (Restored.JournalIntact) it was never held, so it is nacked.
		for gap := prevOp + 1; gap < op && !intact; gap++ {
			r.unprovable[gap] = struct{}{}
		}
		r.journal.put(p, r.checkpointOp)
		r.journal.get(op).durable = true
		r.op = op
		r.headChecksum = p.Header.Checksum
		r.commitMax = max(r.commitMax, p.Header.Commit)
		r.lastTimestamp = max(r.lastTimestamp, p.Header.Timestamp)
		prevOp = op
	}
	r.seenOp = r.op
	return nil
}

// staleLeftover reports whether a restored entry h that breaks the chain
// is a leftover of a view before log_view L, which a StartView's
// reconciliation dropped from memory but left on disk: it is of a view
// before L, and either L's view header for its op names another entry,
// or (no view header there) the entry before it is L's own (of view L,
// so L's op) and h does not chain to it. The view change that started L
// decided h's op: had h been committed, L's log would hold it there with
// h's checksum. Before, such an entry made every entry after it
// unprovable as well, its log_view's own included, and a replica could
// hold back a view change with ops it held intact (consensus simulator
// seed 70234987, finding 24's second shape). An entry that matches L's
// view header, or follows an entry of an older view, is not judged here.
func (r *Replica) staleLeftover(h *PrepareHeader, prev PrepareHeader, prevOK bool, vh PrepareHeader, vhOK bool) bool {
	if h.View >= r.logView {
		return false
	}
	if vhOK {
		return vh.Checksum != h.Checksum
	}
	return prevOK && prev.View >= r.logView && prev.Checksum != h.Parent
}

// leftoverBefore reports whether the restored entry before h, which h
// does not chain to, is such a leftover: h is of view L or later (L's
// own op), matches L's view header where there is one, and the entry
// before it is of a view before L, so it is not the op h's parent names
// in L's log.
func (r *Replica) leftoverBefore(h *PrepareHeader, prev PrepareHeader, prevOK bool, vh PrepareHeader, vhOK bool) bool {
	return h.View >= r.logView && prevOK && prev.View < r.logView && prev.Checksum != h.Parent &&
		(!vhOK || vh.Checksum == h.Checksum)
}

// verifyAgainstViewHeaders re-checks restored entries up to the view
// headers' head: each must match its view header or be the parent of a
// verified successor (entries above the head were appended from the
// view's primary and anchor the chain). An entry that cannot be verified
// may be a stale one a StartView left durable (reconcileJournal drops
// unverifiable entries from memory only); it is not loaded, and it is
// unprovable (it may also have been acknowledged).
func (r *Replica) verifyAgainstViewHeaders() {
	head := viewHeadersHead(r.viewHeaders)
	if head == 0 {
		return
	}
	var expect uint64
	known := false
	for op := r.journal.headOp; op > r.commitMin; op-- {
		s := r.journal.get(op)
		if op > head && s != nil && r.amnesia.on && s.prepare.Header.View != r.logView {
			// Above the view's head only log_view's primary prepared (in
			// log_view). An older entry is one the view's reconciliation
			// truncated and a power loss brought back (the truncation was
			// not synced): not part of this log (finding 15, seed 60822200).
			r.journal.remove(op)
			r.unprovable[op] = struct{}{}
			known = false
			continue
		}
		if op > head {
			known = s != nil
			if known {
				expect = s.prepare.Header.Parent
			}
			continue
		}
		if h, ok := r.viewHeaderAt(op); ok {
			expect, known = h.Checksum, true
		}
		if s == nil {
			known = false
			continue
		}
		if known && s.prepare.Header.Checksum == expect {
			expect = s.prepare.Header.Parent
			continue
		}
		r.keepUnverified(op)
		r.journal.remove(op)
		r.unprovable[op] = struct{}{}
		known = false
	}
}

// restoreViewHead raises the head to log_view's durable head (finding 6):
// the ops between the journal head and the view headers' head belong to
// the view's log even though their bodies never arrived, so the DVC must
// report them (header, present clear, no nack) rather than a shorter log.
func (r *Replica) restoreViewHead(journalIntact bool) {
	for _, h := range r.viewHeaders {
		if h.Checksum != 0 {
			r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
			r.commitMax = max(r.commitMax, h.Commit)
		}
	}
	head := viewHeadersHead(r.viewHeaders)
	// A view op whose body the restored journal lacks may have been held
	// and acknowledged before a crash cut it (a torn write, a truncate
	// persisted without its re-append): it is reported by header but never
	// nacked. Within one incarnation a header-only op is nacked (buildDVC),
	// and so it is across restarts when the driver keeps the journal intact
	// (Restored.JournalIntact: finding 15, powerloss-harsh seed 60900070).
	for i, h := range r.viewHeaders {
		op := head - uint64(i)
		if !journalIntact && h.Checksum != 0 && op > r.commitMin && !r.journal.has(op) {
			r.unprovable[op] = struct{}{}
		}
	}
	if head <= r.op {
		return
	}
	r.op = head
	r.seenOp = max(r.seenOp, head)
	if h, ok := r.viewHeaderAt(head); ok {
		r.headChecksum = h.Checksum
	}
}

func (r *Replica) broadcastProbe() {
	r.recovery.probeTimer.start(r.ticks, uint64(r.cfg.RequestStartViewTicks))
	r.broadcast(Message{Kind: MsgRequestStartView, View: r.view, Incarnation: r.cfg.Incarnation, Amnesiac: r.amnesiaFlagged(),
		ViewUnknown: r.recovery.viewUnknown})
}

func (r *Replica) tickRecovering() {
	if !r.recovery.probeTimer.fired(r.ticks) {
		return
	}
	if r.rackCandidate() {
		// Only a primary's StartView ends this, or a rack election when
		// too few intact replicas may exist (amnesia.go).
		r.tickAmnesiac()
		return
	}
	r.recovery.probeAttempts++
	if r.recovery.probeAttempts >= r.cfg.ViewProbeAttemptsMax {
		// Nobody answers: the whole cluster restarted. Elect on recovered logs.
		r.recovery.probeAttempts = 0
		r.abortTransfer()
		r.startViewChange(r.escalationView())
		return
	}
	r.broadcastProbe()
}

// probeView asks the primary of a newer view we heard of for its StartView.
func (r *Replica) probeView(v uint32) {
	r.send(Message{Kind: MsgRequestStartView, To: r.primaryOf(v), View: r.view, Incarnation: r.cfg.Incarnation, Amnesiac: r.amnesiaFlagged(),
		ViewUnknown: r.recovery.viewUnknown})
}

// onRequestStartView: only the current Normal primary answers with a
// StartView, targeted at the prober and echoing its incarnation (a
// Normal backup only says which view it is in: answerProbe). A probe
// from the primary-by-index of our own view means that primary restarted:
// elect. A probe from a later view moves the group up.
func (r *Replica) onRequestStartView(m Message) {
	if m.ProbeAnswer {
		// A Normal backup's answer to a wiped replica's probe
		// (answerProbe): its view was noted (noteViewEvidence); it says
		// nothing of amnesia and is never answered.
		r.takeDeferredStartView()
		return
	}
	r.noteAmnesia(m)
	if r.IsPrimary() && m.View > r.view {
		// The prober is in a later view (one whose view change did not
		// complete here): it cannot rejoin below it, and a storage-lost
		// prober never elects, so the group moves up (finding 19).
		r.startViewChange(m.View)
		return
	}
	if r.IsPrimary() {
		r.sendStartView(m.From, m.Incarnation)
		return
	}
	if r.status == StatusNormal && m.View == r.view && m.From == r.primaryOf(r.view) {
		r.startViewChange(r.view + 1)
		return
	}
	r.answerProbe(m)
}
