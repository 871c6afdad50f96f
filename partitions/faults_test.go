package partitions

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// Explicit storage faults on a vfs.Mem, checked against what docs/partitions.md and
// docs/durability.md ("Storage failures") promise: a failed fsync is reported by the Sync that
// covers it (the node then fences the partition until a restart), so no batch it covered is
// acknowledged as persisted; a full disk fails the append that does not fit, changes nothing, and
// the log takes appends again once space returns.

func memLog(t *testing.T, m *vfs.Mem, opts Options) *Log {
	t.Helper()
	opts.FS = m
	opts.Files = NewFileCache(OpenFilesMin, quietLogger)
	return openLog(t, "/p", opts)
}

func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 2, 300, 1000+uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFsyncFailureIsReportedAndSyncedBatchesSurvive(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		m := vfs.NewMem(seed)
		memPartitionDir(t, m, "/p")
		l := memLog(t, m, Options{SegmentSizeBytes: 1 << 20})
		appendN(t, l, 4)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		synced := l.NextOffset()
		appendN(t, l, 3)
		if err := m.InjectSyncFailure(segmentLogPath("/p", 0)); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("seed %d: Sync with a failing fdatasync: %v, want EIO", seed, err)
		}
		// The node fences the partition here; the machine loses power. (A single node serves around
		// an unsynced tail whose sectors landed out of order; a replica quarantines it and refills.)
		m.Crash()
		l = memLog(t, m, Options{SegmentSizeBytes: 1 << 20, ServeAroundDamage: true})
		if got := l.NextOffset(); got < synced {
			t.Fatalf("seed %d: after the crash the log ends at %d, below the synced %d", seed, got, synced)
		}
		expectOffsets(t, "synced batches", poll(t, l, wire.PollFirst, 0, uint32(synced)), 0, int(synced))
		l.Close()
	}
}

// TestFsyncFailureAtEvictionIsReportedByTheNextSync: a persisted topic's segment evicted from the
// open-file cache is fdatasynced first; when that fails, the next Sync of the log says so.
func TestFsyncFailureAtEvictionIsReportedByTheNextSync(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	cache := NewFileCache(OpenFilesMin, quietLogger)
	l := openLog(t, "/p", Options{FS: m, Files: cache, SyncOnEvict: true})
	defer l.Close()
	appendN(t, l, 2)
	if err := m.InjectSyncFailure(segmentLogPath("/p", 0)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*OpenFilesMin; i++ { // evicts the segment's files
		h, err := cache.Create(m, fmt.Sprint("/p/other-", i), os.O_RDWR|os.O_CREATE, 0o644, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Stat(); err != nil {
			t.Fatal(err)
		}
		defer h.Close()
	}
	if cache.Stats().EvictionSyncs == 0 {
		t.Fatal("the dirty segment was not evicted")
	}
	if err := l.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync after a failed eviction sync: %v, want EIO", err)
	}
}

func TestFullDiskFailsTheAppendCleanlyUntilSpaceReturns(t *testing.T) {
	m := vfs.NewMem(1)
	memPartitionDir(t, m, "/p")
	l := memLog(t, m, Options{SegmentSizeBytes: segmentSizeBytesMin, ReserveOffsets: true})
	appendN(t, l, 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before, stats := l.NextOffset(), l.Stats()
	m.SetCapacity(m.Used() + 100) // room for part of a batch, not a whole one
	full := 0
	for i := 0; i < 5; i++ {
		_, err := l.Append(makeBatch(t, l.NextOffset(), 2, 300, 2000))
		if err == nil {
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrFailed) {
			t.Fatalf("append on a full disk: %v, want ENOSPC without failing the log", err)
		}
		full++
	}
	if full == 0 {
		t.Fatal("no append met the full disk")
	}
	if got := l.Stats(); got.NextOffset != before || got.SizeBytes != stats.SizeBytes {
		t.Fatalf("a failed append changed the log: %+v, was %+v", got, stats)
	}
	m.SetCapacity(0)
	appendN(t, l, 4) // across a roll
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	want := l.NextOffset()
	m.Crash()
	l = memLog(t, m, Options{SegmentSizeBytes: segmentSizeBytesMin, ReserveOffsets: true})
	defer l.Close()
	expectOffsets(t, "after the disk filled and emptied", poll(t, l, wire.PollFirst, 0, 100), 0, int(want))
}
