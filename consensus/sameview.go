package consensus

// Same-view StartViews (simulator finding 8).
//
// Within one view the primary's log only grows, so a StartView{v, op} is a
// snapshot of primary(v)'s log at the moment it was sent. A replica whose
// log_view is already v may hold more of that log: prepares of view v it
// journaled (and acknowledged) after the StartView left, or the view
// headers of a newer StartView of v. A copy of the older StartView that
// arrives late — duplicated, or delayed across a crash — must not cut them:
// the primary may already have counted this replica's PrepareOks (seed
// 15367 crashy: ops 15..16 truncated after a restart, then committed on
// the primary alone). Such a StartView is merged instead: the head is the
// higher of the two, and the ops above the announced head keep what this
// replica knows of view v's log (its view headers, else its journal
// entries stamped with view v — only primary(v) creates those). Entries
// above the announced head that match neither are unverifiable, not
// divergent: they leave the in-memory journal only (dropUnverified).

// startViewLog returns the head a StartView leads this replica to and the
// canonical header lookup for reconciling its journal. above holds the
// headers of view v's log from the head down to just above m.HeadOp (blank
// where unknown, at most ViewHeadersMax), for the durable view headers.
func (r *Replica) startViewLog(m Message) (head uint64, above []PrepareHeader, canonical func(op uint64) (PrepareHeader, bool)) {
	suffix := func(op uint64) (PrepareHeader, bool) {
		if op > m.HeadOp || m.HeadOp-op >= uint64(len(m.Suffix)) {
			return PrepareHeader{}, false
		}
		h := m.Suffix[m.HeadOp-op]
		return h, h.Checksum != 0 && h.Op == op
	}
	head = m.HeadOp
	if m.View != r.logView || r.op <= m.HeadOp {
		return head, nil, suffix
	}
	head = r.op
	known := func(op uint64) (PrepareHeader, bool) {
		if h, ok := r.viewHeaderAt(op); ok {
			return h, true
		}
		if h, ok := r.journal.header(op); ok && h.View == m.View {
			return h, true
		}
		return PrepareHeader{}, false
	}
	n := min(head-m.HeadOp, uint64(ViewHeadersMax))
	above = make([]PrepareHeader, n)
	for i := range above {
		op := head - uint64(i)
		above[i] = PrepareHeader{Op: op}
		if h, ok := known(op); ok {
			h.Op = op
			above[i] = h
		}
	}
	canonical = func(op uint64) (PrepareHeader, bool) {
		if op <= m.HeadOp {
			return suffix(op)
		}
		if head-op < n {
			h := above[head-op]
			return h, h.Checksum != 0
		}
		return known(op) // below the bounded copy: still untouched by reconcile
	}
	return head, above, canonical
}
