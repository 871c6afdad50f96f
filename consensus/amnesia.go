package consensus

// Power-loss amnesia (Restored.Amnesia, VsrState.Amnesiac).
//
// Under `durability = replicated` a backup acknowledges a prepare once it
// is in its WAL's page cache. A power loss then leaves it a synced prefix
// of what it acknowledged, so its log no longer proves what it prepared:
//
//   - it does not vote while a quorum of intact replicas may exist: it
//     stays Recovering and probes (RequestStartView carries its amnesia);
//   - it never nacks: its "I never prepared op X" is not evidence;
//   - it recovers by adopting a Normal primary's StartView, and stops
//     being amnesiac only once its journal holds that log up to the head
//     (maybeClearAmnesia says why not earlier);
//   - when more than n - Q_vc replicas are amnesiac (more than f for
//     n <= 6), the intact ones cannot form a view-change quorum and
//     waiting would never end (a rack power loss): after its probes go
//     unanswered an amnesiac that heard that many amnesiac probes starts
//     a view change, and its DVC is flagged amnesiac. A primary-elect
//     counts flagged DVCs only once it holds that many of them in the same
//     view (fresh evidence from live incarnations), so a stale count can
//     make an amnesiac start a view change but never makes its vote count.
//     That merge waits for every replica's DVC (awaitingAllVoters), and
//     an amnesiac's DVC there claims no commit beyond the bodies it holds
//     (heldThrough). Such a view change may drop `replicated` ops that only the
//     amnesiacs had acknowledged: a power loss of a quorum, which that
//     class never promised to survive.
type amnesiaState struct {
	// on is durable (VsrState.Amnesiac): from the amnesiac restart until
	// the journal holds a Normal primary's log up to its head.
	on bool
	// adopted: this incarnation took a Normal primary's StartView, so its
	// head is that view's again and only nacks remain untrustworthy.
	adopted bool
	// rack: this replica started (or joined) a view change as an
	// amnesiac because too few intact replicas may exist.
	rack bool
	// heard[i]: the tick of the last flagged probe or SVC from replica i
	// (0: none since its last unflagged one). Entries age out after
	// amnesiaHeardTicks: a replica that recovered stops sending flagged
	// probes, and one that restarts intact clears its entry at once.
	heard [replicaCountMax]uint64
}

// flagged: this replica's probes, SVCs and DVCs carry its amnesia. An
// amnesiac that adopted a view reports an honest head (no flag), it only
// withholds nacks, unless it joins a rack election (amnesiaJoinRack).
//
// A replica whose storage was lost (Restored.StorageLost) is flagged the
// same way until it adopts a view: it is no intact voter either, and in a
// rack election, which waits for every replica's DVC, it must vote or the
// group never serves again (TestClusterPowerLossOfEveryNode: a rack power
// loss before a replica taken for wiped had rejoined; consensus simulator
// finding 21). Its DVC there holds what it holds and nacks the rest, as an
// amnesiac's does: what it lost is on no disk of its own, so waiting for
// it could recover nothing. Once it adopted a view it only withholds nacks
// (maybeClearStorageLost), as before: it does not join rack elections from
// there as adopted amnesiacs do (amnesiaJoinRack), since its one flagged
// DVC beside intact ones would be held back from a merge that needs it.
func (r *Replica) amnesiaFlagged() bool {
	if r.recovery.storageLost && (r.status == StatusRecovering || r.amnesia.rack) {
		return true
	}
	return r.amnesia.on && (!r.amnesia.adopted || r.amnesia.rack)
}

// rackCandidate: this replica may vote in a rack election (amnesiac, or
// its storage lost, in either case never an intact voter).
func (r *Replica) rackCandidate() bool { return r.amnesia.on || r.recovery.storageLost }

// amnesiaJoinRack: an amnesiac that adopted a view but has not yet held
// its whole log (a body may be gone from every page cache) enters a view
// change as a rack voter when, with itself, too few intact replicas may
// exist: otherwise its withheld nacks can leave an op nobody holds
// neither kept nor cut (finding 15, seed 60822132: n = 2, where the
// threshold is 1 and both DVCs always count).
func (r *Replica) amnesiaJoinRack() {
	if r.amnesia.on && r.amnesia.adopted && !r.amnesia.rack && r.amnesiacCount()+1 >= r.amnesiaRackThreshold() {
		r.amnesia.rack = true
	}
}

// amnesiaRackThreshold is how many amnesiac replicas leave too few intact
// ones for a view-change quorum: n - Q_vc + 1 (f + 1 for n <= 6; 1 for
// n = 2, where Q_vc = n and every DVC, the intact one's included, counts).
func (r *Replica) amnesiaRackThreshold() int { return int(r.n) - r.quorumViewChange + 1 }

// amnesiaHeardTicks: a still-amnesiac Recovering peer probes every
// RequestStartViewTicks; this covers a whole probe round and one more.
func (r *Replica) amnesiaHeardTicks() uint64 {
	return uint64(r.cfg.RequestStartViewTicks) * uint64(r.cfg.ViewProbeAttemptsMax+1)
}

// noteAmnesia records a peer's probe or SVC flag.
func (r *Replica) noteAmnesia(m Message) {
	if m.Amnesiac {
		r.amnesia.heard[m.From] = max(r.ticks, 1)
	} else {
		r.amnesia.heard[m.From] = 0
	}
}

// amnesiacCount is this replica (when flagged) plus the peers heard
// flagged recently.
func (r *Replica) amnesiacCount() int {
	count := 0
	if r.amnesiaFlagged() {
		count++
	}
	for i := uint8(0); i < r.n; i++ {
		if t := r.amnesia.heard[i]; i != r.id && t != 0 && r.ticks-t <= r.amnesiaHeardTicks() {
			count++
		}
	}
	return count
}

// tickAmnesiac runs when an amnesiac Recovering replica's probe timer
// fires. After ViewProbeAttemptsMax unanswered probes it starts a view
// change if too few intact replicas may exist; otherwise it broadcasts an
// SVC of its own (durable) view and keeps probing: intact replicas in an
// older view move up to it and elect among themselves, so a primary whose
// StartView this replica can adopt (of a view >= its own) appears.
func (r *Replica) tickAmnesiac() {
	r.recovery.probeAttempts++
	if r.recovery.probeAttempts >= r.cfg.ViewProbeAttemptsMax {
		r.recovery.probeAttempts = 0
		if r.amnesiacCount() >= r.amnesiaRackThreshold() {
			r.amnesia.rack = true
			r.abortTransfer()
			r.startViewChange(r.escalationView())
			return
		}
		if !r.recovery.storageLost { // a lost storage's view is no view to push the others to
			r.broadcast(Message{Kind: MsgStartViewChange, View: r.view, Amnesiac: true})
		}
	}
	r.broadcastProbe()
}

// heldThrough is the end of the journal's contiguous run of bodies above
// commit_min. In a rack election a DVC caps its commit there and clears
// the commit stamps of the headers it reports above it (a copy: the
// identity checksum is unchanged), and nacks every missing body: after a
// quorum-wide power loss its commit numbers and view headers may name ops
// whose bodies are gone from every page cache, and a merge bound to keep
// them would wait for a body forever. The headers themselves stay: a
// replica with the newest log_view but fewer bodies must still name the
// ops another replica holds (finding 15, seed 60820359). Ops a replica
// applied stay below its commit.
func (r *Replica) heldThrough() uint64 {
	h := r.commitMin
	for h < r.op && r.journal.has(h+1) {
		h++
	}
	return h
}

// awaitingAllVoters: a merge that counts flagged DVCs waits for the DVC
// of every replica. A rack election may drop ops only page caches held,
// but not ops a replica that is merely slow, cut off or down synced or
// applied (its checkpoint): that replica could never adopt the view. A
// timed fallback (n view changes in a row) still dropped such checkpoints
// of replicas down longer (finding 15), so there is none: after a rack
// power loss the group serves again once every replica is back (a node
// that never returns needs an operator).
func (r *Replica) awaitingAllVoters() bool {
	return r.vc.amnesiacQuorum && popcount(r.vc.dvcFrom) < int(r.n)
}

// tooManyLost: a rack merge with more than f DVCs from replicas whose
// storage was lost is not run. Beyond f such losses a committed op may
// have been durable only on lost disks, and a merge would cut it and hand
// its op number to another: the group waits for an operator instead (as
// when more than f replicas are lost outside a rack power loss, where
// lost replicas never vote at all). Only a rack merge counts their DVCs.
func (r *Replica) tooManyLost() bool {
	if !r.vc.amnesiacQuorum {
		return false
	}
	lost := 0
	for _, d := range r.vc.dvcs {
		if d.lost {
			lost++
		}
	}
	return lost > (int(r.n)-1)/2
}

// recordAmnesiacDVC holds a flagged DVC back until the view change has
// as many as amnesiaRackThreshold of them; then they all count. It
// reports whether d was held back.
func (r *Replica) recordAmnesiacDVC(d dvcRecord) bool {
	if !d.amnesiac || r.vc.amnesiacQuorum {
		return false
	}
	r.vc.amnesiacDVCs = append(r.vc.amnesiacDVCs, d)
	if len(r.vc.amnesiacDVCs) >= r.amnesiaRackThreshold() {
		r.vc.amnesiacQuorum = true
		r.vc.dvcs = append(r.vc.dvcs, r.vc.amnesiacDVCs...)
		r.vc.amnesiacDVCs = nil
	}
	return true
}

// adoptedView: this replica took a Normal primary's StartView.
func (r *Replica) adoptedView() {
	r.amnesia.rack = false
	if r.amnesia.on {
		r.amnesia.adopted = true
	}
}

// forgetAmnesiacCommits: an amnesiac adopting a view (or starting one as
// primary-elect) keeps only the view's commit above what it applied. Its own commit_max came from before
// the power loss; after a rack election that dropped ops (a quorum lost
// its page cache) those op numbers hold other prepares, and believing them
// committed would apply ops the view has not committed (a primary would
// commit new prepares at those numbers on its own ack). Knowing less is
// safe: heartbeats and the view's commits raise it again. So does a
// replica whose storage was lost: its superblock's commit_max may name
// ops an election beyond the group's budget dropped, and kept, it made
// every later merge that counted its DVC wait for ops no replica held
// (whole-node simulator seed 36138: hand-overs to it failed for good).
// Within the budget the view it adopts holds every committed op anyway.
func (r *Replica) forgetAmnesiacCommits(viewCommit uint64) {
	if (r.amnesia.on || r.recovery.storageLost) && r.commitMax > viewCommit {
		r.commitMax = max(r.commitMin, viewCommit)
	}
}

// Amnesiac reports whether the replica is amnesiac (VsrState.Amnesiac).
func (r *Replica) Amnesiac() bool { return r.amnesia.on }

// maybeClearAmnesia ends amnesia (durably, with the next superblock) once
// the journal holds the adopted view's log up to the head. Not earlier:
// an op of that log the replica acknowledged before the power loss and
// holds only as a header would be nacked in a later DVC as "adopted
// header-only in this incarnation", and together with replicas that
// never held it that nack could cut a committed op whose other copies sit
// on replicas that are merely down. Once the body is back it is never
// nacked again.
func (r *Replica) maybeClearAmnesia() {
	if !r.amnesia.on || !r.amnesia.adopted || r.status != StatusNormal || r.Transferring() {
		return
	}
	if r.firstMissing(r.op) != 0 {
		return
	}
	r.amnesia = amnesiaState{}
}

// maybeClearStorageLost ends a lost storage's withheld nacks once the
// journal holds the joined view's log up to the head, for the reason
// maybeClearAmnesia gives: a replica whose storage was lost may have
// acknowledged an op of that log it now holds only as a header, and its
// nack, with those of replicas that never held the op, could cut a
// committed op (whole-node simulator seed 8143: a primary whose WAL was
// set aside led the next view change, nacked the committed op it had
// acknowledged before, and cut it).
func (r *Replica) maybeClearStorageLost() {
	if !r.recovery.storageLost || r.status != StatusNormal || r.Transferring() || r.firstMissing(r.op) != 0 {
		return
	}
	r.recovery.storageLost = false
}

// StorageLost reports whether the replica still withholds nacks for a
// lost storage (Restored.StorageLost): until it holds the log of a view
// it joined.
func (r *Replica) StorageLost() bool { return r.recovery.storageLost }

// endAmnesiaAsPrimary: a primary starting its view holds the whole log
// (maybeStartView checked it).
func (r *Replica) endAmnesiaAsPrimary() { r.amnesia = amnesiaState{} }
