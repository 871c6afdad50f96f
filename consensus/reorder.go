package consensus

// reorderBuffer holds live prepares of the current view that reached a
// backup above head+1 (the network reordered them, or one before them was
// lost), until the gap below them closes. Without it every prepare behind
// a gap is dropped and must be repaired one round trip per chunk, so a
// backup under steady load on a reordering network falls behind for good
// (simulator finding 11, seed 327890). It holds at most PrepareQueueDepth
// entries — the primary never has more uncommitted prepares in flight, so
// the bodies are bounded by what the primary already holds — keeping the
// lowest ops. It lives in memory only: nothing in it was acknowledged.
type reorderBuffer struct {
	view    uint32
	entries []Prepare
}

// stash keeps p (a verified prepare from the primary of r.view with
// op > head+1), copying its body.
func (r *Replica) stashReordered(p *Prepare) {
	b := &r.reorder
	if b.view != r.view {
		b.view, b.entries = r.view, b.entries[:0]
	}
	limit := int(r.cfg.PrepareQueueDepth)
	hi := -1
	for i := range b.entries {
		if b.entries[i].Header.Op == p.Header.Op {
			return
		}
		if hi < 0 || b.entries[i].Header.Op > b.entries[hi].Header.Op {
			hi = i
		}
	}
	kept := Prepare{Header: p.Header, Body: p.Body} // Step owns the body: no copy
	if len(b.entries) < limit {
		b.entries = append(b.entries, kept)
		return
	}
	if hi >= 0 && b.entries[hi].Header.Op > p.Header.Op {
		b.entries[hi] = kept // keep the lowest ops: they close the gap first
	}
}

// drainReordered feeds stashed prepares that now follow the head back
// through onPrepare (the same checks as a fresh arrival). Entries at or
// below the head are dropped. onPrepare calls it after each append, so the
// loop runs only at the outermost call.
func (r *Replica) drainReordered() {
	b := &r.reorder
	if r.draining || len(b.entries) == 0 {
		return
	}
	if b.view != r.view || r.status != StatusNormal {
		b.entries = b.entries[:0]
		return
	}
	r.draining = true
	defer func() { r.draining = false }()
	for {
		next := -1
		kept := b.entries[:0]
		var found Prepare
		for _, e := range b.entries {
			switch {
			case e.Header.Op <= r.op:
			case e.Header.Op == r.op+1 && next < 0:
				found, next = e, 0
			default:
				kept = append(kept, e)
			}
		}
		b.entries = kept
		if next < 0 {
			return
		}
		before := r.op
		r.onPrepare(Message{Kind: MsgPrepare, From: r.primaryOf(r.view), To: r.id, View: r.view, Prepare: &found})
		if r.op == before {
			return // not appended (journal full, chain break): repair takes over
		}
	}
}
