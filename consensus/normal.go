package consensus

import "fmt"

// Propose admits a client request on this replica. Every call ends in
// exactly one Reply carrying req.Tag (spec §3.12 decides 57 vs 58).
func (r *Replica) Propose(req Request) {
	// §3.12: not primary / not Normal / transferring => 58, never entered a pipeline.
	if !r.IsPrimary() || r.Transferring() {
		r.reply(Reply{Tag: req.Tag, Kind: ReplyNotAccepted})
		return
	}
	if r.clients != nil {
		if kind, cached, ok := r.preflight(&req); !ok {
			r.reply(Reply{Tag: req.Tag, Kind: kind, Op: cached.op, Timestamp: cached.timestamp, Cached: cached.body})
			return
		}
	}
	if len(r.pipeline) < int(r.cfg.PrepareQueueDepth) && len(r.requestQueue) == 0 && r.journal.canAppend(r.op+1, r.checkpointOp) {
		r.prepare(req)
		return
	}
	// §3.4 step 1: park behind the pipeline; request queue full => 58.
	if len(r.requestQueue) >= 2*int(r.cfg.PrepareQueueDepth) {
		r.reply(Reply{Tag: req.Tag, Kind: ReplyNotAccepted})
		return
	}
	if !req.BodyOwned {
		req.Body = append([]byte(nil), req.Body...)
		req.BodyOwned = true
	}
	r.requestQueue = append(r.requestQueue, req)
}

// prepare turns a request into the next op: journal it, pipeline it and
// send it to every backup (direct fan-out, not upstream's ring).
func (r *Replica) prepare(req Request) {
	op := r.op + 1
	now := r.nowMicros
	if now == 0 {
		now = r.ticks * 10_000
	}
	ts := max(now, r.lastTimestamp+1)
	h := PrepareHeader{
		View:      r.view,
		Op:        op,
		Commit:    r.commitMax,
		Timestamp: ts,
		Parent:    r.headChecksum,
		Client:    req.Client,
		Session:   req.Session,
		Request:   req.Request,
		ReqSum:    req.Checksum,
		Operation: req.Operation,
		UserID:    req.UserID,
	}
	body := req.Body
	if !req.BodyOwned {
		body = append([]byte(nil), body...)
	}
	h.Checksum = PrepareChecksum(&h, body)
	p := Prepare{Header: h, Body: body}
	r.op = op
	r.headChecksum = h.Checksum
	r.lastTimestamp = ts
	r.appendEntry(p)
	r.pipeline = append(r.pipeline, pipelineEntry{header: h, tag: req.Tag, hasTag: true})
	r.broadcast(Message{Kind: MsgPrepare, View: r.view, Prepare: &p})
	if !r.prepareTimer.armed {
		r.prepareAttempts = 0
		r.prepareTimer.start(r.ticks, uint64(r.cfg.PrepareRetransmitTicks))
	}
}

// promoteQueued moves parked requests into freed pipeline slots.
func (r *Replica) promoteQueued() {
	for len(r.requestQueue) > 0 && len(r.pipeline) < int(r.cfg.PrepareQueueDepth) &&
		r.journal.canAppend(r.op+1, r.checkpointOp) {
		req := r.requestQueue[0]
		r.requestQueue[0] = Request{}
		r.requestQueue = r.requestQueue[1:]
		r.prepare(req)
	}
}

// onPrepare: a backup journals the primary's prepare and acknowledges it
// (spec §3.4 step 3). The PrepareOk rides in the same Ready as the entry, so
// the driver persists the entry before the ack leaves.
func (r *Replica) onPrepare(m Message) {
	if m.Prepare == nil || !verifyPrepare(m.Prepare) {
		return
	}
	if m.View > r.view {
		r.observedNewerView = max(r.observedNewerView, m.View)
		return
	}
	if r.status != StatusNormal || r.Transferring() || m.View < r.view || r.isPrimaryIndex() ||
		m.From != r.primaryOf(r.view) {
		return
	}
	h := &m.Prepare.Header
	r.raiseCommitMax(h.Commit)
	r.lastTimestamp = max(r.lastTimestamp, h.Timestamp)
	r.seenOp = max(r.seenOp, h.Op)
	if h.Op <= r.commitMin {
		// Already committed here (perhaps learnt in an earlier view while this
		// primary's merge settled for a lower commit): ack so it re-commits.
		if s := r.journal.get(h.Op); s != nil && s.prepare.Header.Checksum != h.Checksum {
			panic(fmt.Sprintf("consensus: replica %d committed op %d as %x, primary of view %d prepares %x",
				r.id, h.Op, s.prepare.Header.Checksum, r.view, h.Checksum))
		}
		r.sendPrepareOk(h)
		r.commitJournal()
		return
	}
	if s := r.journal.get(h.Op); s != nil {
		if s.prepare.Header.Checksum == h.Checksum {
			r.sendPrepareOk(h)
			r.commitJournal()
			return
		}
		// The primary of our view is authoritative: our entry is a stale
		// relic of an older view.
		r.truncateFrom(h.Op)
		r.op = min(r.op, h.Op-1)
	}
	if h.Op != r.op+1 {
		// Gap: hold it until the gap closes; retransmit or repair
		// (debounced) fills the gap.
		if h.Op > r.op+1 {
			r.stashReordered(m.Prepare)
		}
		r.noteGap()
		r.commitJournal()
		return
	}
	if prev, ok := r.journal.header(h.Op - 1); ok && prev.Checksum != h.Parent {
		r.truncateFrom(h.Op - 1)
		r.op = h.Op - 2
		r.noteGap()
		return
	}
	if !r.journal.canAppend(h.Op, r.checkpointOp) {
		return // journal full of un-checkpointed history: no ack, the driver must checkpoint
	}
	p := Prepare{Header: *h, Body: m.Prepare.Body} // Step owns the body: no copy
	r.appendEntry(p)
	r.op = h.Op
	r.headChecksum = h.Checksum
	r.sendPrepareOk(h)
	r.commitJournal()
	r.drainReordered()
}

func (r *Replica) sendPrepareOk(h *PrepareHeader) {
	if r.status != StatusNormal || r.Transferring() || r.logView != r.view {
		return
	}
	hdr := *h
	r.send(Message{Kind: MsgPrepareOk, To: r.primaryOf(r.view), View: r.view, CommitMax: r.commitMax,
		Prepare: &Prepare{Header: hdr}})
}

// onPrepareOk: the primary counts distinct acks of the exact prepare.
func (r *Replica) onPrepareOk(m Message) {
	if !r.IsPrimary() || m.View != r.view || m.Prepare == nil {
		return
	}
	h := &m.Prepare.Header
	if len(r.pipeline) == 0 || h.Op < r.pipeline[0].header.Op {
		return
	}
	idx := h.Op - r.pipeline[0].header.Op
	if idx >= uint64(len(r.pipeline)) {
		return
	}
	e := &r.pipeline[idx]
	if e.header.Checksum != h.Checksum {
		return
	}
	e.acks |= 1 << m.From
	r.commitPipeline()
}

// commitPipeline advances commit_max over the contiguous quorum prefix.
func (r *Replica) commitPipeline() {
	advanced := false
	for i := range r.pipeline {
		e := &r.pipeline[i]
		if popcount(e.acks) < r.quorumReplication {
			break
		}
		if e.header.Op > r.commitMax {
			r.commitMax = e.header.Op
			advanced = true
		}
	}
	if advanced {
		r.prepareAttempts = 0
		r.prepareTimer.start(r.ticks, uint64(r.cfg.PrepareRetransmitTicks))
	}
	r.commitJournal()
}

func (r *Replica) raiseCommitMax(commit uint64) {
	if commit > r.commitMax {
		r.commitMax = commit
	}
}

// commitJournal applies ops commit_min+1..commit_max held in the journal,
// in order, stopping at the first missing op (repair fills it).
func (r *Replica) commitJournal() {
	if r.Transferring() {
		return
	}
	for r.commitMin < r.commitMax {
		op := r.commitMin + 1
		s := r.journal.get(op)
		if s == nil {
			r.noteGap()
			break
		}
		if s.prepare.Header.Op != op {
			panic(fmt.Sprintf("consensus: journal returned op %d for %d", s.prepare.Header.Op, op))
		}
		r.commitMin = op
		r.pending.Committed = append(r.pending.Committed, s.prepare)
		r.replyCommitted(&s.prepare.Header)
	}
	if r.IsPrimary() {
		if len(r.pipeline) == 0 {
			r.prepareTimer.stop()
		}
		r.promoteQueued()
	}
}

// replyCommitted pops the pipeline head the op closes and answers it.
func (r *Replica) replyCommitted(h *PrepareHeader) {
	if len(r.pipeline) == 0 || r.pipeline[0].header.Op != h.Op {
		return
	}
	e := r.pipeline[0]
	copy(r.pipeline, r.pipeline[1:])
	r.pipeline = r.pipeline[:len(r.pipeline)-1]
	if e.header.Checksum != h.Checksum {
		panic(fmt.Sprintf("consensus: replica %d committed op %d with checksum %x, pipeline had %x",
			r.id, h.Op, h.Checksum, e.header.Checksum))
	}
	if e.hasTag {
		r.reply(Reply{Tag: e.tag, Kind: ReplyCommitted, Op: h.Op, Timestamp: h.Timestamp})
	}
}

// abandonPipeline answers every pending proposal of this replica with 57
// (it may have been prepared; outcome unknown) and clears pipeline + queue.
func (r *Replica) abandonPipeline() {
	for _, e := range r.pipeline {
		if e.hasTag {
			r.reply(Reply{Tag: e.tag, Kind: ReplyNotCommitted})
		}
	}
	for _, q := range r.requestQueue {
		r.reply(Reply{Tag: q.Tag, Kind: ReplyNotCommitted})
	}
	r.pipeline = r.pipeline[:0]
	r.requestQueue = r.requestQueue[:0]
	r.prepareTimer.stop()
}

func (r *Replica) tickPrimary() {
	if r.logView != r.view {
		return
	}
	if r.commitTimer.fired(r.ticks) {
		r.commitTimer.start(r.ticks, uint64(r.cfg.CommitBroadcastTicks))
		if r.observedNewerView > r.view {
			r.probeView(r.observedNewerView)
		} else {
			r.heartbeatsSent++
			r.broadcast(Message{Kind: MsgCommit, View: r.view, CommitMin: r.commitMin, HeartbeatCounter: r.heartbeatsSent})
		}
	}
	if r.prepareTimer.fired(r.ticks) {
		r.retransmitPrepares()
		r.prepareAttempts++
		r.prepareTimer.start(r.ticks, backoffTicks(&r.rng, r.cfg.PrepareRetransmitTicks, r.prepareAttempts))
	}
}

// retransmitPrepares resends every uncommitted, below-quorum pipeline entry
// to each replica missing an ack.
func (r *Replica) retransmitPrepares() {
	for i := range r.pipeline {
		e := &r.pipeline[i]
		if popcount(e.acks) >= r.quorumReplication && e.header.Op <= r.commitMax {
			continue
		}
		s := r.journal.get(e.header.Op)
		if s == nil {
			continue
		}
		for to := uint8(0); to < r.n; to++ {
			if to == r.id || e.acks&(1<<to) != 0 {
				continue
			}
			p := s.prepare
			r.send(Message{Kind: MsgPrepare, To: to, View: r.view, Prepare: &p})
		}
	}
}

func (r *Replica) tickBackup() {
	if r.heartbeatTimer.fired(r.ticks) {
		r.primarySilent()
	}
}

// primarySilent is a backup's answer to a silent primary: probe a newer
// view it heard of, else start the next view.
func (r *Replica) primarySilent() {
	if r.observedNewerView > r.view {
		r.probeView(r.observedNewerView)
		r.heartbeatTimer.start(r.ticks, uint64(r.cfg.HeartbeatTimeoutTicks))
		return
	}
	r.startViewChange(r.view + 1)
}

// ProbePrimary has a Normal backup ask its view's primary for the view
// (RequestStartView, answered with a StartView): a primary that rested
// (stopped ticking and sending heartbeats while idle) wakes on it and
// resumes them. False unless this replica is a Normal backup.
func (r *Replica) ProbePrimary() bool {
	if r.status != StatusNormal || r.isPrimaryIndex() {
		return false
	}
	// A later view heard of (a resting primary's heartbeat) is asked of
	// its own primary, as a silent primary's backup does (primarySilent):
	// the old view's primary may lead no view any more.
	r.probeView(max(r.view, r.observedNewerView))
	return true
}

// RestHeartbeat has a Normal primary broadcast its commit once, as its
// commit timer would, without a tick: a driver that stopped ticking an
// idle group (a resting partition group) keeps its backups told, now and
// then, where the group stands; one that missed the final heartbeats (or
// the view change) before the group rested learns the commit (or the
// view) and catches up. False unless this replica is a Normal primary
// whose log is of its view.
func (r *Replica) RestHeartbeat() bool {
	if !r.IsPrimary() {
		return false
	}
	r.heartbeatsSent++
	r.broadcast(Message{Kind: MsgCommit, View: r.view, CommitMin: r.commitMin, HeartbeatCounter: r.heartbeatsSent})
	return true
}

// SuspectPrimary makes a Normal backup act now as its heartbeat timeout
// would: the driver knows the primary's node is gone (a group that rested
// without ticks has no running timeout of its own). False when this
// replica is not a Normal backup.
func (r *Replica) SuspectPrimary() bool {
	if r.status != StatusNormal || r.isPrimaryIndex() {
		return false
	}
	r.primarySilent()
	return true
}

// onCommit: a backup accepts a heartbeat from its view's primary whose
// (view, counter) is newer than the last accepted one (spec §3.4 step 6).
func (r *Replica) onCommit(m Message) {
	if m.View > r.view {
		r.observedNewerView = max(r.observedNewerView, m.View)
		return
	}
	if m.View < r.view {
		if r.IsPrimary() {
			r.sendStartView(m.From, Uint128{}) // a stale primary: tell it the view
		}
		return
	}
	if r.status != StatusNormal || r.isPrimaryIndex() || m.From != r.primaryOf(r.view) {
		return
	}
	if m.View == r.heartbeatView && m.HeartbeatCounter <= r.heartbeatCounter {
		return
	}
	r.heartbeatView, r.heartbeatCounter = m.View, m.HeartbeatCounter
	r.heartbeatTimer.start(r.ticks, uint64(r.cfg.HeartbeatTimeoutTicks))
	r.raiseCommitMax(m.CommitMin)
	r.commitJournal()
}
