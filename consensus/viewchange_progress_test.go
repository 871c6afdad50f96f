package consensus

import "testing"

// TestBackupWaitsForAPrimaryElectStillRepairing: a backup in a view
// change keeps the view while the view's primary-elect reports growing
// repair progress (finding 22: each escalation made the next primary-elect
// start its repair over), escalates once the progress stops, and takes no
// progress report from anyone else.
func TestBackupWaitsForAPrimaryElectStillRepairing(t *testing.T) {
	cfg := DefaultConfig(0, 3)
	cfg.Seed = 7
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for r.HasReady() {
			r.Advance(r.Ready())
		}
	}
	tick := func(n uint32) {
		for i := uint32(0); i < n; i++ {
			r.Tick()
			drain()
		}
	}
	const view = 2 // primary-elect: replica 2
	r.Step(Message{Kind: MsgStartViewChange, From: 2, View: view})
	drain()
	if r.Status() != StatusViewChange || r.View() != view {
		t.Fatalf("status %v view %d, want a view change to %d", r.Status(), r.View(), view)
	}
	status := cfg.ViewChangeStatusTicks
	// The primary-elect reports progress every half status period, for
	// three periods: the view holds.
	for progress := uint64(1); progress <= 6; progress++ {
		tick(status / 2)
		r.Step(Message{Kind: MsgStartViewChange, From: 2, View: view, RepairProgress: progress})
		drain()
	}
	if r.View() != view {
		t.Fatalf("escalated to view %d while the primary-elect was still repairing", r.View())
	}
	// A repeated count and a count from another replica are no progress.
	tick(status / 2)
	r.Step(Message{Kind: MsgStartViewChange, From: 2, View: view, RepairProgress: 6})
	r.Step(Message{Kind: MsgStartViewChange, From: 1, View: view, RepairProgress: 100})
	drain()
	tick(status/2 + 1)
	if r.View() <= view {
		t.Fatalf("still in view %d a status period after the last progress", r.View())
	}
}
