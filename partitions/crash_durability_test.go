package partitions

import (
	"errors"
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// TestPurgeClearsConsumerOffsetsDurably: a purge restarts the offsets at 0 durably, so the consumer
// offsets it removed must not come back after a power loss, even when offsets are not persisted
// (SyncOffsets off): an old-generation offset would make its consumer skip the new messages up to it.
// Found by TestPowerLossPartitionLog (seed 1).
func TestPurgeClearsConsumerOffsetsDurably(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		l := openLog(t, dir, Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)})
		fillLog(t, l, 3, 2, 100)
		for id := uint32(1); id <= 3; id++ {
			if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, id, 5); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, dir, Options{FS: m, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if _, err := l.Purge(); err != nil {
			t.Fatal(err)
		}
		m.Crash()
		l = openLog(t, dir, Options{FS: m, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if got := l.ConsumerOffsets(); len(got) != 0 {
			t.Fatalf("seed %d: after a purge and a power loss the log (next offset %d) has consumer offsets %v",
				seed, l.NextOffset(), got)
		}
		l.Close()
	}
}

// TestOffsetsDirectoryIsCreatedDurably: a consumer offset stored durably (SyncOffsets) survives a
// power loss right after the log's first open, which created offsets/consumers and offsets/groups:
// their entries in the directories above must be durable too. Found by TestPowerLossPartitionLog
// (seed 2).
func TestOffsetsDirectoryIsCreatedDurably(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		l := openLog(t, dir, Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if err := l.StoreConsumerOffset(wire.ConsumerKindGroup, 3, 7); err != nil {
			t.Fatal(err)
		}
		m.Crash()
		l = openLog(t, dir, Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if v, ok := l.ConsumerOffset(wire.ConsumerKindGroup, 3); !ok || v != 7 {
			t.Fatalf("seed %d: durably stored offset 7 after a power loss: %d, %v", seed, v, ok)
		}
		l.Close()
	}
}

// TestOffsetsDirectoryCreationRetriedAfterAFailedSync: when the directory sync of the offsets
// directories fails the open fails, and the next open syncs them (it does not trust directories a
// failed open left behind). Found by TestPowerLossPartitionLog (seed 4).
func TestOffsetsDirectoryCreationRetriedAfterAFailedSync(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		for range 2 { // the partition directory's next two syncs fail: two opens fail
			if err := m.InjectSyncFailure(dir); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if _, err := Open(dir, Options{FS: m, SyncOffsets: true, Logger: quietLogger}); err == nil {
				t.Fatal("open succeeded although a directory sync failed")
			}
		}
		l := openLog(t, dir, Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if err := l.StoreConsumerOffset(wire.ConsumerKindSingle, 1, 9); err != nil {
			t.Fatal(err)
		}
		m.Crash()
		l = openLog(t, dir, Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)})
		if v, ok := l.ConsumerOffset(wire.ConsumerKindSingle, 1); !ok || v != 9 {
			t.Fatalf("seed %d: durably stored offset 9 after a power loss: %d, %v", seed, v, ok)
		}
		l.Close()
	}
}

// TestSyncAfterReopenCoversTheRecoveredTail: batches a crashed process appended without a sync are
// still in the page cache when the log reopens, and served; the first Sync after the reopen must make
// them durable like the batches appended after it. Found by TestPowerLossPartitionLog (seed 5).
func TestSyncAfterReopenCoversTheRecoveredTail(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		opts := Options{FS: m, SegmentSizeBytes: 1 << 20}
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l := openLog(t, dir, opts)
		fillLog(t, l, 5, 2, 300) // unsynced; the process dies (the log is dropped, not closed)
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		want := l.NextOffset()
		m.Crash()
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		if got := l.NextOffset(); got != want {
			t.Fatalf("seed %d: after a Sync and a power loss the log ends at %d, not %d", seed, got, want)
		}
		l.Close()
	}
}

// TestPurgeRemovesAnOffsetWhoseStoreFailed: a consumer-offset store whose directory sync failed
// returns an error but its file is in place; a purge must remove it too, or it comes back at the
// next open as an offset of the old generation. Found by TestPowerLossPartitionLog (seed 18).
func TestPurgeRemovesAnOffsetWhoseStoreFailed(t *testing.T) {
	const dir = "/p"
	m := vfs.NewMem(1)
	memPartitionDir(t, m, dir)
	opts := Options{FS: m, SyncOffsets: true, Files: NewFileCache(OpenFilesMin, quietLogger)}
	l := openLog(t, dir, opts)
	fillLog(t, l, 2, 2, 100)
	if err := m.InjectSyncFailure(dir + "/offsets/groups"); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreConsumerOffset(wire.ConsumerKindGroup, 2, 3); err == nil {
		t.Fatal("the store succeeded although its directory sync failed")
	}
	if _, err := l.Purge(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if got := l.ConsumerOffsets(); len(got) != 0 {
		t.Fatalf("after a purge the reopened log has consumer offsets %v", got)
	}
}

// TestSyncReportsAFailedRollSync: when the fsync that seals a full segment fails, the append that
// filled it still succeeds (the roll is retried), but the next Sync must fail: Linux marks the
// pages the fsync could not write clean, so a later fsync succeeds without them, and that batch
// was acknowledged as persisted and lost at a power loss. Found by TestPowerLossPartitionLog (seed 1).
func TestSyncReportsAFailedRollSync(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		opts := Options{FS: m, SegmentSizeBytes: segmentSizeBytesMin, Files: NewFileCache(OpenFilesMin, quietLogger)}
		l := openLog(t, dir, opts)
		if err := m.InjectSyncFailure(segmentLogPath(dir, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(makeBatch(t, 0, 2, segmentSizeBytesMin, 1000)); err != nil {
			t.Fatalf("the append that fills the segment: %v", err)
		}
		if err := l.Sync(); err == nil {
			t.Fatalf("seed %d: Sync succeeded after the segment's sealing fsync failed", seed)
		}
		l.Close()
	}
}

// TestSetAsideDamageAtTheStartOfTheOnlySegmentKeepsTheNextOffset: a replica whose oldest segments
// retention removed finds damage at byte 0 of its only segment; after SetAsideDamage the log must
// open at that segment's start offset, not at 0 (offsets below were handed out). Found by
// TestPowerLossPartitionLog (seed 154).
func TestSetAsideDamageAtTheStartOfTheOnlySegmentKeepsTheNextOffset(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	opts := Options{FS: m, SegmentSizeBytes: segmentSizeBytesMin, Logger: quietLogger}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", opts)
	for l.Stats().SegmentsCount < 3 {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 2, 1500, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	start := l.SegmentEndOffset(2)
	if _, err := l.DeleteSegments(2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, l.NextOffset(), 2, 100, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.FlipByte(segmentLogPath("/p", start), 0); err != nil {
		t.Fatal(err)
	}
	opts.SyncedBelow = l.NextOffset() // a replica knows its synced frontier: damage there is corruption
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	_, err := Open("/p", opts)
	var q *QuarantineError
	if !errors.As(err, &q) || q.Position != 0 || q.Offset != start {
		t.Fatalf("open of a log damaged at byte 0 of segment %d: %v", start, err)
	}
	if err := SetAsideDamage(q); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, "/p", opts)
	defer l.Close()
	if got := l.NextOffset(); got != start {
		t.Fatalf("after setting the damage aside the log resumes at %d, want %d", got, start)
	}
}

// TestReservationReadAtOpenIsMadeDurableBeforeUse: a reservation whose replacement's directory fsync
// failed is in the page cache, not on disk. A restart without a reboot reads it and must not hand out
// offsets under it before writing it durably: a power loss could revert it and the offsets would be
// handed out again. Found by TestPowerLossPartitionLog (seed 4189).
func TestReservationReadAtOpenIsMadeDurableBeforeUse(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, dir)
		if err := writeBootID(m, 1); err != nil {
			t.Fatal(err)
		}
		m.SetCrashModel(vfs.CrashModel{}) // every unsynced write is lost
		opts := Options{FS: m, ReserveOffsets: true}
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l := openLog(t, dir, opts)
		appendN(t, l, 1)
		if err := l.Close(); err != nil { // durable: the exact next offset
			t.Fatal(err)
		}
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		if err := m.InjectSyncFailure(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 1, 100, 2000)); err == nil {
			t.Fatal("an append succeeded although its reservation's directory fsync failed")
		}
		// The process restarts (same boot) and appends under the reservation it reads.
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		appendN(t, l, 3)
		acked := l.NextOffset()
		m.Crash()
		if err := writeBootID(m, 2); err != nil {
			t.Fatal(err)
		}
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		if got := l.NextOffset(); got < acked {
			t.Fatalf("seed %d: after a reboot the log resumes at %d, below the acknowledged %d", seed, got, acked)
		}
		l.Close()
	}
}

// TestCloseOfAnUnchangedLogSyncsNothing: a log closed without any change since it opened leaves its
// recovered (unsynced) tail as it found it: a clean shutdown of thousands of idle partitions costs
// no fsyncs (4,000 partitions: 3.6 s of SIGTERM before, 0.27 s after). A Close after a change, as a
// Sync, makes the recovered tail durable with it.
func TestCloseOfAnUnchangedLogSyncsNothing(t *testing.T) {
	const dir = "/p"
	m := vfs.NewMem(1)
	memPartitionDir(t, m, dir)
	opts := Options{FS: m, SegmentSizeBytes: 1 << 20}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, dir, opts)
	fillLog(t, l, 5, 2, 300) // unsynced; the process dies (the log is dropped, not closed)
	before, _ := m.Pending()
	if before == 0 {
		t.Fatal("no unsynced writes to recover")
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l = openLog(t, dir, opts)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := m.Pending(); after != before {
		t.Fatalf("closing an unchanged log synced: %d unsynced writes before, %d after", before, after)
	}
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l = openLog(t, dir, opts)
	fillLog(t, l, 1, 2, 300)
	want := l.NextOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	l = openLog(t, dir, opts)
	defer l.Close()
	if got := l.NextOffset(); got != want {
		t.Fatalf("after a change, a Close and a power loss the log ends at %d, not %d", got, want)
	}
}

// TestAFailedRollSyncIsRewrittenAfterAProcessRestart: the fsync that seals
// a full segment fails (the disk got some of its pages, any of them) and
// the process stops before the next Sync could report it. The restart
// reads the pages from the cache, whole, and a later fsync succeeds
// without writing them: unless the open rewrites the segment through a
// fresh file, a power loss then shows holes in data the log counted
// synced (metadata simulator seed 47846: ranges set apart below a
// checkpoint's frontier).
func TestAFailedRollSyncIsRewrittenAfterAProcessRestart(t *testing.T) {
	const dir = "/p"
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0, Torn: 1})
		memPartitionDir(t, m, dir)
		opts := Options{FS: m, SegmentSizeBytes: segmentSizeBytesMin, Files: NewFileCache(OpenFilesMin, quietLogger)}
		l := openLog(t, dir, opts)
		if err := m.InjectSyncFailure(segmentLogPath(dir, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(makeBatch(t, 0, 4, segmentSizeBytesMin, 1000)); err != nil {
			t.Fatalf("the append that fills the segment: %v", err)
		}
		next := l.NextOffset()
		m.ProcessDied()

		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l = openLog(t, dir, opts)
		if err := l.Sync(); err != nil {
			t.Fatalf("seed %d: sync after the restart: %v", seed, err)
		}
		l.Close()
		m.Crash()

		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("seed %d: open after the power loss: %v", seed, err)
		}
		if got := l.NextOffset(); got != next || len(l.DamagedRanges()) != 0 {
			t.Fatalf("seed %d: after the power loss the log ends at %d with %d damaged ranges; want %d and none",
				seed, got, len(l.DamagedRanges()), next)
		}
		l.Close()
	}
}
