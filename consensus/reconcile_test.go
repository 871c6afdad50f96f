package consensus

import "testing"

// TestStartViewKeepsUnverifiableEntriesDurable (simulator finding 7): a
// restarted backup with a gappy journal (ops 1..3, 5..6) adopts a StartView
// whose suffix reaches down to op 6 only. Ops 5..6 verify; ops 1..3 cannot
// be verified (gap at 4). They may be acknowledged ops, so they are not
// truncated durably (that would need a re-append of 5..6 that a crash
// between the two writes loses): they leave the in-memory journal only,
// unprovable. A restart with the durable journal and the new superblock
// re-verifies against the view headers and does not load them either.
func TestStartViewKeepsUnverifiableEntriesDurable(t *testing.T) {
	log := chainLog(8, 0, 0)
	durable := prepares(log[0], log[1], log[2], log[4], log[5])
	r, err := Restart(DefaultConfig(2, 3), Restored{Superblock: &VsrState{View: 1, LogView: 1, CommitMax: 2}, Entries: durable})
	if err != nil {
		t.Fatal(err)
	}
	r.Advance(r.Ready())
	r.Step(Message{Kind: MsgStartView, From: 0, To: 2, View: 3, HeadOp: 8, CommitOp: 6, Suffix: descending(log, 8, 6)})
	rd := r.Ready()
	if rd.Truncate != 0 || len(rd.Entries) != 0 {
		t.Fatalf("Ready truncates %d and writes %d entries; want the durable journal untouched", rd.Truncate, len(rd.Entries))
	}
	if rd.Superblock == nil || rd.Superblock.LogView != 3 {
		t.Fatalf("superblock %+v, want log_view 3", rd.Superblock)
	}
	for op := uint64(1); op <= 3; op++ {
		if _, lost := r.unprovable[op]; r.journal.has(op) || !lost {
			t.Fatalf("op %d: held %v, unprovable %v; want dropped from memory and unprovable", op, r.journal.has(op), lost)
		}
	}
	if !r.journal.has(5) || !r.journal.has(6) {
		t.Fatal("verified ops 5..6 left the journal")
	}
	again, err := Restart(DefaultConfig(2, 3), Restored{Superblock: rd.Superblock, Entries: durable})
	if err != nil {
		t.Fatal(err)
	}
	if again.Op() != 8 || again.journal.has(1) || again.journal.has(3) || !again.journal.has(5) || !again.journal.has(6) {
		t.Fatalf("restart: op %d, held 1:%v 3:%v 5:%v 6:%v; want head 8 with only 5..6 loaded", again.Op(),
			again.journal.has(1), again.journal.has(3), again.journal.has(5), again.journal.has(6))
	}
	if d := again.buildDVC(); d.nack != (Uint128{}) {
		t.Fatalf("restarted DVC nacks %+v; ops 7..8 may have been acknowledged before the crash", d.nack)
	}
}

// TestRestartSkipsStaleEntriesBelowTheWindow: durable entries further
// below the newest one than journal_slots are stale leftovers of such a
// StartView; with n > 1 they are skipped as unprovable instead of refusing
// the restart. n = 1 never leaves any, so there it stays an error.
func TestRestartSkipsStaleEntriesBelowTheWindow(t *testing.T) {
	cfg := DefaultConfig(1, 3)
	cfg.PrepareQueueDepth, cfg.JournalSlots = 4, 8
	log := chainLog(12, 0, 0)
	// 9 entries, more than the 8 slots: ops 1..4 lie below the window 5..12.
	entries := prepares(log[0], log[1], log[2], log[3], log[4], log[5], log[9], log[10], log[11])
	r, err := Restart(cfg, Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if _, lost := r.unprovable[1]; r.journal.has(1) || r.journal.has(4) || !lost || !r.journal.has(5) || !r.journal.has(12) || r.Op() != 12 {
		t.Fatalf("op %d held 1:%v 4:%v 5:%v 12:%v unprovable 1:%v", r.Op(), r.journal.has(1), r.journal.has(4),
			r.journal.has(5), r.journal.has(12), lost)
	}
	solo := DefaultConfig(0, 1)
	solo.PrepareQueueDepth, solo.JournalSlots = 4, 8
	if _, err := Restart(solo, Restored{Superblock: &VsrState{View: 1, LogView: 1}, Entries: entries}); err == nil {
		t.Fatal("n = 1 restart accepted entries spanning more than journal_slots")
	}
}

// TestRestartDropsAnAnchorBelowTheWindow (whole-node simulator seed
// 8288): a replica whose checkpoint had moved on in memory wrote prepares
// up to journal_slots above its durable checkpoint, then crashed before
// its superblock named the new checkpoint. The anchor entry at the durable
// checkpoint shares a slot with the newest op: the restart drops it (it
// is committed, not unprovable) instead of refusing to start.
func TestRestartDropsAnAnchorBelowTheWindow(t *testing.T) {
	cfg := DefaultConfig(1, 3)
	cfg.PrepareQueueDepth, cfg.JournalSlots = 4, 8
	log := chainLog(14, 0, 0)
	for _, top := range []uint64{12, 14} { // top - checkpoint == journal_slots, and beyond it
		entries := prepares(log[3]) // the anchor: op 4, the durable checkpoint
		for op := uint64(6); op <= top; op++ {
			entries = append(entries, prepares(log[op-1])...)
		}
		data := []byte("snapshot at op 4")
		r, err := Restart(cfg, Restored{
			Superblock: &VsrState{View: 1, LogView: 1, CommitMax: 4, CheckpointOp: 4, AnchorChecksum: log[3].Checksum},
			Snapshot:   &Snapshot{Op: 4, Data: data, Checksum: SnapshotChecksum(data)},
			Entries:    entries,
		})
		if err != nil {
			t.Fatalf("top %d: %v", top, err)
		}
		if r.Op() != top || !r.journal.has(top) {
			t.Fatalf("top %d: restarted at op %d, newest held %v", top, r.Op(), r.journal.has(top))
		}
		if _, lost := r.unprovable[4]; lost {
			t.Fatalf("top %d: the committed anchor was marked unprovable", top)
		}
	}
}
