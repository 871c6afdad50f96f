package partitions

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

func segmentFileBytes(t *testing.T, dir string, start uint64) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, segmentBaseName(start)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStagedBatchesAreAdoptedInPlace: staged batches are written once,
// invisible to reads and stats until Append adopts them, and the file
// ends byte-identical to a log that appended them.
func TestStagedBatchesAreAdoptedInPlace(t *testing.T) {
	dir, plain := t.TempDir(), t.TempDir()
	l := openLog(t, dir, Options{})
	ref := openLog(t, plain, Options{})
	defer ref.Close()
	fillLog(t, l, 2, 3, 100)
	fillLog(t, ref, 2, 3, 100)
	b1, b2 := makeBatch(t, 6, 4, 100, 2000), makeBatch(t, 10, 2, 100, 2010)
	before := l.Stats()
	loc1, err := l.Stage(b1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stage(b2, 101); err != nil {
		t.Fatal(err)
	}
	if l.Stats() != before || l.NextOffset() != 6 || l.StagedCount() != 2 {
		t.Fatalf("staging changed the log: %+v (before %+v), staged %d", l.Stats(), before, l.StagedCount())
	}
	expectOffsets(t, "poll before adoption", poll(t, l, wire.PollOffset, 0, 100), 0, 6)
	if got, err := l.ReadBatch(loc1); err != nil || !bytes.Equal(got, b1) {
		t.Fatalf("ReadBatch of a staged batch: %v", err)
	}
	size := len(segmentFileBytes(t, dir, 0))
	if _, err := l.Append(b1); err != nil {
		t.Fatalf("adopt the first staged batch: %v", err)
	}
	if len(segmentFileBytes(t, dir, 0)) != size {
		t.Fatal("adopting wrote the batch again")
	}
	expectOffsets(t, "poll after one adoption", poll(t, l, wire.PollOffset, 0, 100), 0, 10)
	if _, err := l.Append(b2); err != nil {
		t.Fatalf("adopt the second: %v", err)
	}
	for _, b := range [][]byte{b1, b2} {
		if _, err := ref.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if l.StagedCount() != 0 || l.Stats() != ref.Stats() {
		t.Fatalf("after adoption %+v, appended %+v", l.Stats(), ref.Stats())
	}
	if !bytes.Equal(segmentFileBytes(t, dir, 0), segmentFileBytes(t, plain, 0)) {
		t.Fatal("the adopted segment differs from the appended one")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, dir, Options{})
	defer again.Close()
	if again.Stats() != ref.Stats() {
		t.Fatalf("reopened %+v, want %+v", again.Stats(), ref.Stats())
	}
}

// TestAnotherBatchNeedsTheStagedOnesCut: while batches are staged only the
// first may be appended; after CutStaged another takes its place.
func TestAnotherBatchNeedsTheStagedOnesCut(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	defer l.Close()
	fillLog(t, l, 1, 2, 50)
	if _, err := l.Stage(makeBatch(t, 2, 3, 50, 2000), 1); err != nil {
		t.Fatal(err)
	}
	other := makeBatch(t, 2, 1, 60, 3000)
	if _, err := l.Append(other); !errors.Is(err, ErrStagedConflict) {
		t.Fatalf("Append of another batch while one is staged: %v, want ErrStagedConflict", err)
	}
	if err := l.CutStaged(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(other); err != nil {
		t.Fatalf("Append after CutStaged: %v", err)
	}
	expectOffsets(t, "poll", poll(t, l, wire.PollOffset, 0, 100), 0, 3)
	want := len(makeBatch(t, 0, 2, 50, 1000)) + len(other)
	if got := len(segmentFileBytes(t, dir, 0)); got != want {
		t.Fatalf("segment holds %d bytes, want %d (the cut staged bytes gone)", got, want)
	}
}

// TestStagingIsRefusedWhereItCannotContinueTheLog: a batch that does not
// continue the staged ones, or finds the active segment full, is refused
// (written inline by the caller) and changes nothing. A batch may end past
// the segment size, as an appended one may; nothing is staged after it.
func TestStagingIsRefusedWhereItCannotContinueTheLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSizeBytes: 4096})
	defer l.Close()
	fillLog(t, l, 1, 2, 700)
	if _, err := l.Stage(makeBatch(t, 5, 1, 100, 2000), 2); !errors.Is(err, ErrNotStageable) {
		t.Fatalf("staging past a gap: %v", err)
	}
	if _, err := l.Stage(makeBatch(t, 2, 1, 700, 2000), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stage(makeBatch(t, 3, 2, 700, 2000), 4); err != nil {
		t.Fatalf("staging a batch that ends past the segment size: %v", err)
	}
	if _, err := l.Stage(makeBatch(t, 5, 1, 100, 2000), 5); !errors.Is(err, ErrNotStageable) {
		t.Fatalf("staging after the segment is full: %v", err)
	}
	if l.StagedCount() != 2 {
		t.Fatalf("%d staged, want 2", l.StagedCount())
	}
	if err := l.SkipTo(10); err != nil {
		t.Fatal(err)
	}
	if l.StagedCount() != 0 {
		t.Fatal("a skip kept the staged batches past the hole it left")
	}
}

// TestUnsealedStagingReadsAsATornTail: a single node's log (ReserveOffsets,
// StageUnsealed) reserves offsets when it stages, writes the batch with
// batch_length zero, and seals it when it adopts it. A staged batch never
// adopted is cut at the next open, whether the process stopped (crash: the
// file as it was) or closed the log; an adopted one reads back whole.
func TestUnsealedStagingReadsAsATornTail(t *testing.T) {
	opts := Options{ReserveOffsets: true, StageUnsealed: true}
	for _, closeIt := range []bool{false, true} {
		dir, plain := t.TempDir(), t.TempDir()
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		l := openLog(t, dir, opts)
		ref := openLog(t, plain, Options{ReserveOffsets: true})
		fillLog(t, l, 2, 3, 100)
		fillLog(t, ref, 2, 3, 100)
		b1, b2 := makeBatch(t, 6, 4, 100, 2000), makeBatch(t, 10, 2, 100, 2010)
		loc1, err := l.Stage(b1, 7)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Stage(b2, 8); err != nil {
			t.Fatal(err)
		}
		if got, err := l.ReadBatch(loc1); err != nil || !bytes.Equal(got, b1) {
			t.Fatalf("ReadBatch of an unsealed staged batch: %v", err)
		}
		onDisk := segmentFileBytes(t, dir, 0)[loc1.Position:]
		if h, err := wire.DecodeBatchHeader(onDisk); err == nil {
			t.Fatalf("the staged batch is on disk with a readable header: %+v", h)
		}
		if _, err := l.Append(b1); err != nil {
			t.Fatalf("adopt: %v", err)
		}
		if _, err := ref.Append(b1); err != nil {
			t.Fatal(err)
		}
		if closeIt {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} // else the process dies: the log is dropped, not closed
		if !closeIt && len(segmentFileBytes(t, dir, 0)) == len(segmentFileBytes(t, plain, 0)) {
			t.Fatal("the second staged batch was not in the file at the crash")
		}
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		again := openLog(t, dir, opts)
		if again.NextOffset() != 10 || again.Stats() != ref.Stats() {
			t.Fatalf("close=%v: reopened at %d %+v, want 10 %+v (the unadopted batch cut)", closeIt, again.NextOffset(), again.Stats(), ref.Stats())
		}
		if len(again.DamagedRanges()) != 0 {
			t.Fatalf("close=%v: the unadopted batch read as damage: %+v", closeIt, again.DamagedRanges())
		}
		if err := again.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ref.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(segmentFileBytes(t, dir, 0), segmentFileBytes(t, plain, 0)) {
			t.Fatalf("close=%v: the segment differs from one that appended the adopted batch", closeIt)
		}
		res, err := os.ReadFile(filepath.Join(dir, reservedFileName))
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _, ok := decodeReservationFrontier(res); !ok || v != 10 {
			t.Fatalf("close=%v: reservation %d, want 10 after a clean close", closeIt, v)
		}
	}
}

// TestCutTailAndPurgeRemoveStagedBatches: the operations that move the
// applied end take the staged bytes with them.
func TestCutTailAndPurgeRemoveStagedBatches(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	defer l.Close()
	fillLog(t, l, 3, 2, 50)
	if _, err := l.Stage(makeBatch(t, 6, 2, 50, 2000), 6); err != nil {
		t.Fatal(err)
	}
	if err := l.CutTail(4); err != nil {
		t.Fatal(err)
	}
	if l.StagedCount() != 0 || l.NextOffset() != 4 {
		t.Fatalf("after CutTail: staged %d, next %d", l.StagedCount(), l.NextOffset())
	}
	if _, err := l.Stage(makeBatch(t, 4, 2, 50, 2000), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Purge(); err != nil {
		t.Fatal(err)
	}
	if l.StagedCount() != 0 {
		t.Fatal("purge kept staged batches")
	}
	fillLog(t, l, 1, 1, 10)
}

// TestCutStagedFromKeepsTheEarlierOnes: a truncation's cut removes the
// staged batches of the ops it removes and keeps those before them.
func TestCutStagedFromKeepsTheEarlierOnes(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	defer l.Close()
	b1, b2 := makeBatch(t, 0, 2, 50, 1000), makeBatch(t, 2, 2, 50, 1000)
	if _, err := l.Stage(b1, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stage(b2, 7); err != nil {
		t.Fatal(err)
	}
	if err := l.CutStagedFrom(6); err != nil {
		t.Fatal(err)
	}
	if tag, at, ok := l.FirstStaged(); !ok || tag != 5 || at.Position != 0 || l.StagedCount() != 1 {
		t.Fatalf("first staged %d at %+v (%v), %d staged", tag, at, ok, l.StagedCount())
	}
	if got := len(segmentFileBytes(t, dir, 0)); got != len(b1) {
		t.Fatalf("segment holds %d bytes, want %d", got, len(b1))
	}
	if _, err := l.Append(b1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := l.FirstStaged(); ok {
		t.Fatal("a batch is still staged")
	}
}

// TestFailedSyncRewriteKeepsStagedBatches: the rewrite a failed fsync
// records keeps the staged bytes (prepare WAL references name them), as
// far as reads showed them.
func TestFailedSyncRewriteKeepsStagedBatches(t *testing.T) {
	m := vfs.NewMem(3)
	memPartitionDir(t, m, "/p")
	l := memLog(t, m, Options{SegmentSizeBytes: 1 << 20})
	appendN(t, l, 2)
	staged := makeBatch(t, l.NextOffset(), 2, 300, 3000)
	loc, err := l.Stage(staged, 9)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stage(makeBatch(t, l.NextOffset()+2, 1, 300, 3000), 10); err != nil {
		t.Fatal(err)
	}
	if err := m.InjectSyncFailure(segmentLogPath("/p", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err == nil {
		t.Fatal("Sync with a failing fdatasync succeeded")
	}
	_ = l.Close()
	l = memLog(t, m, Options{SegmentSizeBytes: 1 << 20, ServeAroundDamage: true})
	defer l.Close()
	got, err := l.ReadBatch(loc)
	if err != nil || !bytes.Equal(got, staged) {
		t.Fatalf("the staged batch after the rewrite: %v", err)
	}
}

// TestStagingKeepsTagsAscending: a later op staged first (a lagging
// replica's repairs arrive out of order) keeps an earlier one inline, so
// the staged batches are always in op order.
func TestStagingKeepsTagsAscending(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	if _, err := l.Stage(makeBatch(t, 0, 2, 50, 1000), 8); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stage(makeBatch(t, 2, 2, 50, 1000), 5); !errors.Is(err, ErrNotStageable) {
		t.Fatalf("staging tag 5 after tag 8: %v, want ErrNotStageable", err)
	}
	if _, err := l.Stage(makeBatch(t, 2, 2, 50, 1000), 9); err != nil {
		t.Fatal(err)
	}
}
