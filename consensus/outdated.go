package consensus

// Outdated reports whether m, a message of one of this replica's Readys,
// must no longer leave because the replica moved on since the Ready was
// handed out. A driver that keeps stepping a group while a Ready is being
// persisted (the partition shards' writes off the loop, issue 9 point 3)
// calls it for each message when it finally sends; a driver that sends
// right after Ready may call it too, it then drops nothing.
//
// Two things make a message outdated (open finding 14 of docs/simulator.md):
//   - its view is older than the replica's: once a replica is in view v it
//     takes no part in earlier views, and a late PrepareOk of an earlier
//     view could count towards a commit there that the view change which
//     moved this replica on did not see;
//   - it names a prepare (Prepare, PrepareOk, RepairPrepare) that the
//     journal no longer holds with that checksum: a StartView replaced the
//     op's header or truncated it, so the replica no longer vouches for it
//     (and its durable copy may be overwritten by the next Ready).
func (r *Replica) Outdated(m *Message) bool {
	switch m.Kind {
	case MsgPrepare, MsgPrepareOk, MsgCommit, MsgStartViewChange, MsgDoViewChange, MsgStartView:
		if m.View < r.view {
			return true
		}
	}
	switch m.Kind {
	case MsgPrepare, MsgPrepareOk, MsgRepairPrepare:
		if m.Prepare == nil {
			return false
		}
		h := &m.Prepare.Header
		if h.Op <= r.commitMin && m.Kind != MsgPrepareOk {
			// Committed here: the content is settled even if the
			// journal released the slot at a checkpoint.
			return false
		}
		if m.Kind == MsgRepairPrepare && r.unverifiedHolds(h.Op, h.Checksum) {
			return false // served unvouched (unverified.go), still durable here
		}
		s := r.journal.get(h.Op)
		return s == nil || s.prepare.Header.Checksum != h.Checksum
	}
	return false
}
