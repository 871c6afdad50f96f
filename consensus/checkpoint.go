package consensus

import "fmt"

// Checkpoint records an application snapshot taken after applying s.Op
// (call it after Advance of the Ready that committed s.Op). Journal entries
// at or below s.Op become reusable and s is what state transfer serves. An
// invalid snapshot is ignored; CheckpointError says why.
func (r *Replica) Checkpoint(s Snapshot) {
	switch {
	case s.Op > r.commitMin:
		r.checkpointErr = fmt.Errorf("checkpoint at op %d: not applied yet (commit_min %d)", s.Op, r.commitMin)
	case s.Op < r.checkpointOp:
		r.checkpointErr = fmt.Errorf("checkpoint at op %d: older than checkpoint %d", s.Op, r.checkpointOp)
	case r.clients != nil && s.Op != r.tableOp:
		r.checkpointErr = fmt.Errorf("checkpoint at op %d: the client table reflects op %d (checkpoint after Advance)", s.Op, r.tableOp)
	case SnapshotChecksum(s.Data) != s.Checksum:
		r.checkpointErr = fmt.Errorf("checkpoint at op %d: checksum %x does not match its data", s.Op, s.Checksum)
	default:
		r.checkpointErr = nil
		snap := Snapshot{Op: s.Op, Checksum: s.Checksum, Data: append([]byte(nil), s.Data...)}
		r.snapshot = &snap
		prev := r.checkpointOp
		r.checkpointOp = s.Op
		if h, ok := r.journal.header(s.Op); ok {
			r.snapshotTimestamp = h.Timestamp
			r.anchorChecksum = h.Checksum
		} else if s.Op != prev {
			r.anchorChecksum = 0 // unknown, and never another op's (anchorHeader trusts it)
		}
		if r.IsPrimary() {
			r.promoteQueued() // a full journal may have room now
		}
	}
}

// CheckpointError reports why the last Checkpoint was rejected (nil if accepted).
func (r *Replica) CheckpointError() error { return r.checkpointErr }

// NeedsCheckpoint reports journal pressure: half the journal ring holds
// applied but un-checkpointed ops. The driver should then snapshot its
// state and call Checkpoint; a full ring refuses new prepares (the primary
// parks requests, a backup withholds its ack) until it does.
func (r *Replica) NeedsCheckpoint() bool {
	return r.commitMin-min(r.checkpointOp, r.commitMin) >= uint64(len(r.journal.slots))/2 &&
		r.appliedOp == r.commitMin
}
