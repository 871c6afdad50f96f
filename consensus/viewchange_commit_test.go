package consensus

import "testing"

// TestPrimaryElectAppliesItsVerifiedPrefixToMakeRoom (simulator finding
// 23): a primary-elect whose checkpoint lags cannot hold the merged head
// in its journal (8 slots, checkpoint 4, head 12: op 12's slot holds the
// checkpoint op). It applies the committed ops it holds that the merge
// verifies (5..10), so that its driver can checkpoint; then it takes op
// 12 and starts the view. Before, it could neither append nor apply, and
// no view change could finish.
func TestPrimaryElectAppliesItsVerifiedPrefixToMakeRoom(t *testing.T) {
	log := chainLog(12, 0, 1)
	committed, _ := primaryElectAfterMerge(t, log, prepares(log[3:11]...))
	if len(committed) != 6 || committed[0] != 5 || committed[5] != 10 {
		t.Fatalf("applied %v during the view change, want ops 5..10 (the verified committed prefix)", committed)
	}
}

// primaryElectAfterMerge restarts replica 1 of 3 (8 slots, checkpoint 4,
// commit_max 10, log view 3) with entries, lets it start view 4's election, decides the
// merge with replica 2's DVC (log view 3, head 12, commit 10) and returns
// the ops it applied then. When it applied ops 5..10 it also checkpoints
// there, takes op 12 and must start the view.
func primaryElectAfterMerge(t *testing.T, log []PrepareHeader, entries []Prepare) ([]uint64, *Replica) {
	t.Helper()
	cfg := DefaultConfig(1, 3)
	cfg.JournalSlots = 8
	cfg.PrepareQueueDepth = 4
	data := []byte("state at op 4")
	r, err := Restart(cfg, Restored{
		Superblock: &VsrState{View: 3, LogView: 3, CommitMax: 10, CheckpointOp: 4,
			AnchorChecksum: log[3].Checksum, AnchorTimestamp: log[3].Timestamp},
		Snapshot:      &Snapshot{Op: 4, Data: data, Checksum: SnapshotChecksum(data)},
		Entries:       entries, // ops 4 (the anchor) to 11
		JournalIntact: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	drain := func() (committed []uint64) {
		for r.HasReady() {
			rd := r.Ready()
			for _, p := range rd.Committed {
				committed = append(committed, p.Header.Op)
			}
			r.Advance(rd)
		}
		return committed
	}
	drain()
	// Its probes for the current view go unanswered: it starts an
	// election on its own log, view 4, whose primary-elect it is.
	for i := 0; i < 100_000 && r.Status() == StatusRecovering; i++ {
		r.Tick()
		drain()
	}
	if r.Status() != StatusViewChange || r.View() != 4 {
		t.Fatalf("status %v view %d after the probes, want a view change to view 4", r.Status(), r.View())
	}
	// Replica 2's SVC and DVC (log view 3, head 12, commit 10) decide the
	// merge.
	r.Step(Message{Kind: MsgStartViewChange, From: 2, View: 4})
	drain()
	suffix := descending(log, 12, 10)
	var present Uint128
	for i := range suffix {
		setBit(&present, uint64(i))
	}
	r.Step(Message{Kind: MsgDoViewChange, From: 2, View: 4, LogView: 3, HeadOp: 12, CommitOp: 10, CommitMax: 10,
		Suffix: suffix, Present: present})
	committed := drain()
	if r.vc.plan == nil {
		t.Fatalf("no merge decided (status %v view %d)", r.Status(), r.View())
	}
	if len(committed) != 6 {
		return committed, r
	}
	data10 := []byte("state at op 10")
	r.Checkpoint(Snapshot{Op: 10, Data: data10, Checksum: SnapshotChecksum(data10)})
	if err := r.CheckpointError(); err != nil {
		t.Fatal(err)
	}
	p := Prepare{Header: log[11]}
	r.Step(Message{Kind: MsgRepairPrepare, From: 2, To: 1, View: 4, Prepare: &p})
	drain()
	if r.Status() != StatusNormal || r.View() != 4 || r.Op() != 12 {
		t.Fatalf("status %v view %d op %d after op 12 came, want Normal in view 4 at op 12", r.Status(), r.View(), r.Op())
	}
	return committed, r
}
