package consensus

// A wiped replica (Restored.StorageLost with no durable view) forgot the
// views it promised: it may have been in the view-change quorum of a view
// that started, and a primary of an older view, cut off from the others
// and still Normal, can answer its probe. Taking that StartView, it would
// acknowledge the older view's prepares and let that primary commit an op
// the later view replaced (consensus simulator finding 18, seed 70102210,
// storagelost). So it takes a StartView only of a view at least as high
// as every view reported by n - Q_vc + 1 other replicas: every view that
// started had a view-change quorum of Q_vc replicas, at most Q_vc - 1 of
// them others, and n - Q_vc + 1 others always include one of those.
//
// Evidence is the view a message says its sender is in: prepares,
// PrepareOks, commits, view-change messages, StartViews, probes of
// replicas that know their view (a restarted replica's view is durable,
// at least every view it joined), and a Normal backup's answer to a
// wiped replica's probe (answerProbe). A wiped replica's probe is no
// evidence. Only wiped replicas' probes (RequestStartView.ViewUnknown)
// are answered, so the other replicas' traffic is what it was.

// noteViewEvidence records the sender's view while the view is unknown.
func (r *Replica) noteViewEvidence(m Message) {
	if !r.recovery.viewUnknown {
		return
	}
	switch m.Kind {
	case MsgPrepare, MsgPrepareOk, MsgCommit, MsgStartViewChange, MsgDoViewChange, MsgStartView:
	case MsgRequestStartView:
		if m.ViewUnknown {
			return
		}
	default:
		return
	}
	r.recovery.heardFrom |= 1 << m.From
	r.recovery.heardView = max(r.recovery.heardView, m.View)
}

// viewKnownAtLeast: v is at least every view enough others reported (or
// this replica's view is known).
func (r *Replica) viewKnownAtLeast(v uint32) bool {
	if !r.recovery.viewUnknown {
		return true
	}
	need := int(r.n) - r.quorumViewChange + 1
	return popcount(r.recovery.heardFrom&^(1<<r.id)) >= need && v >= r.recovery.heardView
}

// answerProbe: a Normal backup tells a wiped replica that probes which
// view it is in, so that it can learn the current view from a quorum. The
// answer (ProbeAnswer) is never answered in turn. A primary-by-index that
// is not Normal primary (ceded, or in a view change) does not answer.
func (r *Replica) answerProbe(m Message) {
	if !m.ViewUnknown || r.status != StatusNormal || r.isPrimaryIndex() {
		return
	}
	r.send(Message{Kind: MsgRequestStartView, To: m.From, View: r.view, ProbeAnswer: true})
}
