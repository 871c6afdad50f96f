package consensus

import "slices"

// Durable entries this replica cannot verify (simulator finding 16).
//
// Reconciliation after a merge (reconcileJournal) and a restart
// (verifyAgainstViewHeaders) drop from the in-memory journal the entries
// they can check against no canonical header: they may be stale, so this
// replica must not vouch for them, yet they stay durable (a durable
// truncate below verified entries needs a re-append a crash could lose:
// finding 7). Such an entry may be the only surviving body of a committed
// op: its other holders lost it to a power loss, or dropped it too. So it
// is kept here, durable and unvouched:
//
//   - it is served to a repair request, stamped with a view below the
//     request's, so the requester takes it only as the entry of a canonical
//     checksum it already knows (onRepairPrepare), never on this replica's
//     word;
//   - a primary-elect re-admits its own once the view change knows its
//     canonical checksum (promoteUnverified);
//   - it leaves when the op is committed here, truncated, or overwritten.
//
// Memory: every entry here left the journal, so the journal's bound holds.

// keepUnverified records the entry at op as it leaves the journal unverified,
// unless it was never persisted (still in the pending Ready).
func (r *Replica) keepUnverified(op uint64) {
	s := r.journal.get(op)
	if s == nil {
		return
	}
	for i := range r.pending.Entries {
		if r.pending.Entries[i].Header.Op == op {
			return
		}
	}
	if r.unverified == nil {
		r.unverified = make(map[uint64]Prepare)
	}
	r.pruneUnverified() // before the entry joins: it is still in the journal
	r.unverified[op] = s.prepare
}

// pruneUnverified drops what is committed here: settled by the journal.
func (r *Replica) pruneUnverified() {
	for op := range r.unverified {
		if op <= r.commitMin || r.journal.has(op) {
			delete(r.unverified, op)
		}
	}
}

// forgetUnverifiedFrom drops entries at or above op (a durable truncate
// removes their durable copies).
func (r *Replica) forgetUnverifiedFrom(op uint64) {
	for o := range r.unverified {
		if o >= op {
			delete(r.unverified, o)
		}
	}
}

// unverifiedHolds reports whether the store holds op with that checksum.
func (r *Replica) unverifiedHolds(op, checksum uint64) bool {
	p, ok := r.unverified[op]
	return ok && p.Header.Checksum == checksum
}

// promoteUnverified (primary-elect, a plan in hand) re-admits kept entries
// whose checksum the view change now knows, from the top down, so each
// re-admitted entry makes its predecessor's checksum known (the parent
// link) in the same pass.
func (r *Replica) promoteUnverified() {
	if len(r.unverified) == 0 || r.status != StatusViewChange || r.vc.plan == nil {
		return
	}
	r.pruneUnverified()
	ops := make([]uint64, 0, len(r.unverified))
	for op := range r.unverified {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		p := r.unverified[op]
		sum, ok := r.canonicalChecksum(op)
		if !ok || sum != p.Header.Checksum || op > r.vc.plan.head || !r.journal.canAppend(op, r.checkpointOp) {
			continue
		}
		if prev, ok := r.journal.header(op - 1); ok && prev.Checksum != p.Header.Parent {
			continue // repair settles the divergent neighbour first
		}
		delete(r.unverified, op)
		r.appendEntry(p)
	}
}
