package consensus

// A wiped replica (Restored.StorageLost with no durable view) forgot the
// views it promised: it may have been in the view-change quorum of a view
// that started, and a primary of an older view, cut off from the others
// and still Normal, can answer its probe. Taking that StartView, it would
// acknowledge the older view's prepares and let that primary commit an op
// the later view replaced (consensus simulator finding 18, seed 70102210,
// storagelost). So it takes a StartView only of a view at least as high
// as the views reported by n - Q_vc + 1 other replicas: every view that
// started had a view-change quorum of Q_vc replicas, at most Q_vc - 1 of
// them others, and n - Q_vc + 1 others always include one of those.
//
// Evidence must be fresh, sent after this boot's probe: an older message
// still in flight may show a view below the one its sender is in now. So it is the
// answers to this boot's probes (their incarnation echoed): a Normal
// backup's ProbeAnswer (answerProbe) and the primary's StartView. Only
// wiped replicas' probes (RequestStartView.ViewUnknown) are answered by
// backups, so the other replicas' traffic is what it was.

// noteViewEvidence records the sender's view while the view is unknown.
func (r *Replica) noteViewEvidence(m Message) {
	if !r.recovery.viewUnknown || r.cfg.Incarnation.IsZero() || m.Incarnation != r.cfg.Incarnation {
		return
	}
	if !(m.Kind == MsgRequestStartView && m.ProbeAnswer) && m.Kind != MsgStartView {
		return
	}
	r.recovery.heardFrom |= 1 << m.From
	r.recovery.heardView[m.From] = max(r.recovery.heardView[m.From], m.View)
}

// viewKnownAtLeast: v is at least the views of n - Q_vc + 1 others (or
// this replica's view is known). Those others include a member of the
// quorum that started the highest started view; a sender reporting more
// than v beside them is not waited for: a view it tried to start never
// did, or it was itself wiped since (seed 70113567: a replica reported
// view 2 before it was wiped; the group stayed in view 1).
func (r *Replica) viewKnownAtLeast(v uint32) bool {
	if !r.recovery.viewUnknown {
		return true
	}
	need := int(r.n) - r.quorumViewChange + 1
	atMost := 0
	for i := uint8(0); i < r.n; i++ {
		if i != r.id && r.recovery.heardFrom&(1<<i) != 0 && r.recovery.heardView[i] <= v {
			atMost++
		}
	}
	return atMost >= need
}

// answerProbe: a Normal backup tells a wiped replica that probes which
// view it is in, so that it can learn the current view from a quorum. The
// answer (ProbeAnswer) is never answered in turn. A primary-by-index that
// is not Normal primary (ceded, or in a view change) does not answer.
func (r *Replica) answerProbe(m Message) {
	if !m.ViewUnknown || r.status != StatusNormal || r.isPrimaryIndex() {
		return
	}
	r.send(Message{Kind: MsgRequestStartView, To: m.From, View: r.view, Incarnation: m.Incarnation, ProbeAnswer: true})
}

// deferStartView keeps the answer to this boot's probe that came before
// enough views were reported. The backups' answers and the primary's
// race: without it the StartView waited for the next probe round, and a
// replica wiped (or taken for wiped: storage_lost.go in node) while its
// group is busy then had a whole round more of log to catch up on
// (TestClusterPowerLossOfEveryNode: the rack lost power before it did,
// and the rack election waits for every replica).
func (r *Replica) deferStartView(m Message) {
	if r.cfg.Incarnation.IsZero() || m.Incarnation != r.cfg.Incarnation {
		return
	}
	m.Suffix = append([]PrepareHeader(nil), m.Suffix...) // the caller's buffer is not ours to keep
	r.recovery.deferredStartView = &m
}

// takeDeferredStartView takes the deferred StartView once the evidence
// allows it (onStartView checks everything again, as for a late one).
func (r *Replica) takeDeferredStartView() {
	d := r.recovery.deferredStartView
	if d == nil || !r.viewKnownAtLeast(d.View) {
		return
	}
	r.recovery.deferredStartView = nil
	r.onStartView(*d)
}

// probeForViewEvidence: a wiped replica in a view change (a rack
// election, amnesia.go) asks every replica for its view, as its probes
// do while Recovering: only these draw the backups' answers and the
// primary's StartView echoing its incarnation, and without them it could
// never take a view it did not start itself (storagelost-rack seed
// 70303989: its status timeouts moved the view on faster than its probe
// timer fired, and the others kept starting views without it).
func (r *Replica) probeForViewEvidence() {
	r.broadcast(Message{Kind: MsgRequestStartView, View: r.view, Incarnation: r.cfg.Incarnation, Amnesiac: r.amnesiaFlagged(),
		ViewUnknown: true})
}
