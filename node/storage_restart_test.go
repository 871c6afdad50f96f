package node

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func soloMetadataConfig() consensus.Config {
	cfg := consensus.DefaultConfig(0, 1)
	cfg.GroupID, cfg.ClientTableMax = metadataGroupID, 8
	return cfg
}

func registerProposal(client uint64) *proposal {
	return &proposal{req: consensus.Request{Client: consensus.Uint128{Lo: client}, Operation: consensus.OperationRegister},
		done: make(chan outcome, 1)}
}

// checkpointedStorage boots a metadata directory as the node does, commits
// ops 1..ops through the driver, checkpoints at the head and persists the
// Ready naming it (superblock, then compaction). It returns the prepare at
// the checkpoint op.
func checkpointedStorage(t *testing.T, dir string, ops uint64) consensus.Prepare {
	t.Helper()
	store, _ := openTestStorage(t, dir)
	defer store.Close()
	boot := consensus.Snapshot{Op: 0, Data: []byte("boot")}
	boot.Checksum = snapshotChecksum(boot.Data)
	if err := store.WriteSnapshot(boot); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteSuperblock(consensus.VsrState{}); err != nil {
		t.Fatal(err)
	}
	g, err := consensus.New(soloMetadataConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(quietLogger(), g, store, &countingApp{}, 0)
	for c := uint64(1); c <= ops; c++ {
		d.admit(registerProposal(c))
	}
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}
	if d.lastCompacted != ops {
		t.Fatalf("setup: compacted up to checkpoint %d, want %d", d.lastCompacted, ops)
	}
	anchor, ok, err := store.wal.Read(ops)
	if err != nil || !ok {
		t.Fatalf("the journal lost the entry at checkpoint op %d after compaction (held %v, err %v)", ops, ok, err)
	}
	if first, _, _ := store.wal.Ops(); first != ops {
		t.Fatalf("compaction kept op %d, want only ops >= checkpoint %d", first, ops)
	}
	return anchor
}

// nextPrepareAfterRestart restarts the group from rec (no wall clock: the
// restarted replica's own tick clock starts at zero) and returns the
// prepare of one new proposal.
func nextPrepareAfterRestart(t *testing.T, rec recovered) consensus.Prepare {
	t.Helper()
	g, err := consensus.Restart(soloMetadataConfig(), consensus.Restored{
		Superblock: rec.superblock, Snapshot: rec.snapshot, Entries: rec.entries,
	})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	for g.HasReady() {
		g.Advance(g.Ready())
	}
	g.Propose(consensus.Request{Client: consensus.Uint128{Lo: 1000}, Operation: consensus.OperationRegister})
	rd := g.Ready()
	if len(rd.Entries) != 1 {
		t.Fatalf("restarted group prepared %d entries, want 1", len(rd.Entries))
	}
	return rd.Entries[0]
}

// TestRestartAnchorsOnCheckpointEntry: after a checkpoint at the journal
// head, the next prepare after a restart chains to the checkpoint op's
// prepare and is stamped above its timestamp. Both durable copies of that
// anchor must work on their own: the entry kept in the WAL (compaction
// keeps op = checkpoint op and storage hands it to Restart) and the
// superblock's anchor fields (an 82-byte payload).
func TestRestartAnchorsOnCheckpointEntry(t *testing.T) {
	const ops = 5
	dir := t.TempDir()
	anchor := checkpointedStorage(t, dir, ops)

	store, rec := openTestStorage(t, dir)
	store.Close()
	if rec.snapshot == nil || rec.snapshot.Op != ops || rec.superblock == nil || rec.superblock.CheckpointOp != ops {
		t.Fatalf("recovered snapshot %+v superblock %+v, want both at op %d", rec.snapshot, rec.superblock, ops)
	}
	if len(rec.entries) != 1 || rec.entries[0].Header.Checksum != anchor.Header.Checksum {
		t.Fatalf("recovered %d entries, want exactly the anchor at op %d", len(rec.entries), ops)
	}
	if rec.superblock.AnchorChecksum != anchor.Header.Checksum || rec.superblock.AnchorTimestamp != anchor.Header.Timestamp {
		t.Fatalf("superblock anchors %x@%d, want %x@%d", rec.superblock.AnchorChecksum, rec.superblock.AnchorTimestamp,
			anchor.Header.Checksum, anchor.Header.Timestamp)
	}

	withoutSuperblockAnchors := rec
	sb := *rec.superblock
	sb.AnchorChecksum, sb.AnchorTimestamp = 0, 0 // as an older 66-byte superblock reads
	withoutSuperblockAnchors.superblock = &sb
	withoutAnchorEntry := rec
	withoutAnchorEntry.entries = nil // a journal that lost the entry

	for name, r := range map[string]recovered{
		"as stored": rec, "anchor entry only": withoutSuperblockAnchors, "superblock anchors only": withoutAnchorEntry,
	} {
		next := nextPrepareAfterRestart(t, r)
		if next.Header.Op != ops+1 || next.Header.Parent != anchor.Header.Checksum {
			t.Errorf("%s: next prepare op %d parent %x, want op %d parent %x", name, next.Header.Op, next.Header.Parent, ops+1, anchor.Header.Checksum)
		}
		if next.Header.Timestamp <= anchor.Header.Timestamp {
			t.Errorf("%s: next prepare stamped %d, not above the anchor's %d", name, next.Header.Timestamp, anchor.Header.Timestamp)
		}
	}
}

// TestRecoveredEntriesStartAtSnapshotOp: entries below the snapshot op
// (left when a crash hit between snapshot.bin and compaction) are not
// handed to Restart; the entry at the snapshot op is.
func TestRecoveredEntriesStartAtSnapshotOp(t *testing.T) {
	var entries []consensus.Prepare
	for op := uint64(3); op <= 9; op++ {
		entries = append(entries, consensus.Prepare{Header: consensus.PrepareHeader{Op: op}})
	}
	for _, tc := range []struct {
		snapOp    uint64
		wantFirst uint64
		wantCount int
	}{{0, 3, 7}, {2, 3, 7}, {3, 3, 7}, {6, 6, 4}, {9, 9, 1}, {10, 0, 0}} {
		snap := &consensus.Snapshot{Op: tc.snapOp}
		got := entriesFromSnapshotOp(entries, snap)
		if len(got) != tc.wantCount || (len(got) > 0 && got[0].Header.Op != tc.wantFirst) {
			t.Errorf("snapshot op %d: %d entries from op %v, want %d from op %d", tc.snapOp, len(got), got, tc.wantCount, tc.wantFirst)
		}
	}
	if got := entriesFromSnapshotOp(entries, nil); len(got) != len(entries) {
		t.Errorf("no snapshot: %d entries, want all %d", len(got), len(entries))
	}
}
