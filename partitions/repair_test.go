package partitions

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// scrubAll scrubs a whole log and returns the damage it found.
func scrubAll(t *testing.T, l *Log) []*CorruptionError {
	t.Helper()
	var found []*CorruptionError
	var cursor ScrubCursor
	for i := 0; i < 10_000; i++ {
		res, err := l.Scrub(cursor, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if res.Damage != nil {
			found = append(found, res.Damage)
		}
		if res.Wrapped {
			return found
		}
		cursor = res.Next
	}
	t.Fatal("the scrub did not end")
	return nil
}

// TestRepairBatchWithAPeersCopy: a byte flipped in a sealed segment (in a batch's header, where
// the walk cannot read its length, or in its payload; found by a read, or set apart at open, which
// also indexes the batch after it) is found by the scrub and repaired with the same record read from
// a replica holding the same log; the files, indexes included, are then identical again and nothing
// else moved. A record of another offset is refused.
func TestRepairBatchWithAPeersCopy(t *testing.T) {
	opts := Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 2048, ServeAroundDamage: true}
	for _, tc := range []struct {
		name   string
		at     int64 // byte of the batch flipped
		reopen bool  // found at open (set apart, the next batch indexed), not by a later read
	}{{"header", 141, false}, {"payload", 700, false}, {"payload, set apart at open", 700, true}, {"header, set apart at open", 141, true}} {
		t.Run(tc.name, func(t *testing.T) {
			damagedDir, peerDir := t.TempDir(), t.TempDir()
			damaged, peer := openLog(t, damagedDir, opts), openLog(t, peerDir, opts)
			t.Cleanup(func() { _ = damaged.Close() })
			defer peer.Close()
			for i := 0; i < 30; i++ {
				b := makeBatch(t, damaged.NextOffset(), 3, 300, 1000+uint64(i))
				for _, l := range []*Log{damaged, peer} {
					if _, err := l.Append(append([]byte(nil), b...)); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The fourth batch of the first segment: past an index entry, so the walk is exercised.
			seg := segmentBaseName(0) + logSuffix
			pos := damaged.segments[0].index[0].position
			for i := 0; i < 3; i++ {
				var buf [wire.BatchHeaderSize]byte
				if _, err := damaged.segments[0].logFile.ReadAt(buf[:], int64(pos)); err != nil {
					t.Fatal(err)
				}
				h, _ := wire.DecodeBatchHeader(buf[:])
				pos += h.BatchLength
			}
			flipByte(t, filepath.Join(damagedDir, seg), int64(pos)+tc.at)
			if tc.reopen {
				if err := damaged.Close(); err != nil {
					t.Fatal(err)
				}
				damaged = openLog(t, damagedDir, opts)
			}
			found := scrubAll(t, damaged)
			if len(found) != 1 || found[0].File != seg || found[0].Position != pos {
				t.Fatalf("the scrub found %v, want the batch at byte %d of %s", found, pos, seg)
			}
			off, err := damaged.DamagedBatchOffset(seg, pos)
			if err != nil || off != 9 {
				t.Fatalf("DamagedBatchOffset: %d, %v; want 9", off, err)
			}
			other, _, err := peer.ReadRecords(nil, 12, 13, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := damaged.RepairBatch(seg, pos, other); err == nil {
				t.Fatal("a record of another offset repaired the batch")
			}
			record, _, err := peer.ReadRecords(nil, off, off+1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := damaged.RepairBatch(seg, pos, record); err != nil {
				t.Fatalf("RepairBatch: %v", err)
			}
			if found := scrubAll(t, damaged); len(found) != 0 {
				t.Fatalf("after the repair the scrub found %v", found)
			}
			sameSegmentFiles(t, damagedDir, peerDir)
			if got := decodePoll(t, poll(t, damaged, wire.PollOffset, 0, 1000)); len(got) != 90 {
				t.Fatalf("after the repair a poll serves %d messages, want 90", len(got))
			}
		})
	}
}

// TestRepairBatchCoversAdjacentDamage: two neighbouring batches rotted (the
// second one's header too, so no local boundary follows the first): a run
// of the peer's records is written up to the next intact batch.
func TestRepairBatchCoversAdjacentDamage(t *testing.T) {
	opts := Options{SegmentSizeBytes: 8192, IndexIntervalBytes: 2048}
	damagedDir, peerDir := t.TempDir(), t.TempDir()
	damaged, peer := openLog(t, damagedDir, opts), openLog(t, peerDir, opts)
	defer damaged.Close()
	defer peer.Close()
	var positions []uint64
	for i := 0; i < 12; i++ {
		b := makeBatch(t, damaged.NextOffset(), 3, 300, 1000+uint64(i))
		if damaged.NextOffset() < 12 {
			positions = append(positions, damaged.segments[0].sizeBytes)
		}
		for _, l := range []*Log{damaged, peer} {
			if _, err := l.Append(append([]byte(nil), b...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	seg := segmentBaseName(0) + logSuffix
	flipByte(t, filepath.Join(damagedDir, seg), int64(positions[1])+141) // batch at offset 3: its header
	flipByte(t, filepath.Join(damagedDir, seg), int64(positions[2])+141) // and the next one's
	found := scrubAll(t, damaged)
	if len(found) == 0 || found[0].Position != positions[1] {
		t.Fatalf("the scrub found %v, want the batch at byte %d first", found, positions[1])
	}
	off, err := damaged.DamagedBatchOffset(seg, positions[1])
	if err != nil || off != 3 {
		t.Fatalf("DamagedBatchOffset: %d, %v; want 3", off, err)
	}
	one, _, err := peer.ReadRecords(nil, off, off+1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := damaged.RepairBatch(seg, positions[1], one); err == nil {
		t.Fatal("one record repaired a place that two damaged batches fill")
	}
	run, _, err := peer.ReadRecords(nil, off, ^uint64(0), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := damaged.RepairBatch(seg, positions[1], run); err != nil {
		t.Fatalf("RepairBatch with a run of records: %v", err)
	}
	if found := scrubAll(t, damaged); len(found) != 0 {
		t.Fatalf("after the repair the scrub found %v", found)
	}
	sameSegmentFiles(t, damagedDir, peerDir)
}

// TestRepairOfTheActiveSegmentLeavesStagedBatchesStaged: a repair of a
// batch set apart at open in the active segment rebuilds that segment up
// to its applied end only. The batch staged past it (a cluster replica's
// segment reference) stays staged and is adopted in place afterwards, and
// the files end identical to a log that never rotted (whole-node
// simulator seed 48374: the rebuild counted the staged batch as applied,
// the segment rolled early and the replica's files left its peers').
func TestRepairOfTheActiveSegmentLeavesStagedBatchesStaged(t *testing.T) {
	dir, refDir := t.TempDir(), t.TempDir()
	opts := Options{SegmentSizeBytes: 1 << 20, ServeAroundSealedDamage: true, Logger: quietLogger}
	l, ref := openLog(t, dir, opts), openLog(t, refDir, opts)
	defer ref.Close()
	var batches [][]byte
	var positions []uint64
	for i := 0; i < 4; i++ {
		b := makeBatch(t, l.NextOffset(), 3, 200, uint64(1000+i))
		loc, err := l.Append(append([]byte(nil), b...))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Append(append([]byte(nil), b...)); err != nil {
			t.Fatal(err)
		}
		batches, positions = append(batches, b), append(positions, loc.Position)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segmentBaseName(0) + logSuffix
	flipByte(t, filepath.Join(dir, seg), int64(positions[1]+wire.BatchHeaderSize+60))
	// Below the frontier a checkpoint synced: damage there is rot, set apart.
	reopened := opts
	reopened.SyncedBelow = l.NextOffset()
	l = openLog(t, dir, reopened)
	defer l.Close()
	if len(l.DamagedRanges()) != 1 {
		t.Fatalf("damaged ranges at open: %+v, want the rotted batch", l.DamagedRanges())
	}
	next := makeBatch(t, l.NextOffset(), 2, 200, 2000)
	if _, err := l.Stage(append([]byte(nil), next...), 1); err != nil {
		t.Fatal(err)
	}
	if err := l.RepairBatch(seg, positions[1], batches[1]); err != nil {
		t.Fatalf("repair: %v", err)
	}
	if l.StagedCount() != 1 || l.NextOffset() != ref.NextOffset() || l.Stats() != ref.Stats() {
		t.Fatalf("after the repair: %d staged, next %d, %+v; want 1 staged, next %d, %+v", l.StagedCount(),
			l.NextOffset(), l.Stats(), ref.NextOffset(), ref.Stats())
	}
	if _, err := l.Append(next); err != nil {
		t.Fatalf("adopting the staged batch after the repair: %v", err)
	}
	if _, err := ref.Append(append([]byte(nil), next...)); err != nil {
		t.Fatal(err)
	}
	if l.Stats() != ref.Stats() || !bytes.Equal(segmentFileBytes(t, dir, 0), segmentFileBytes(t, refDir, 0)) {
		t.Fatalf("after adoption %+v, want %+v, and identical segment files", l.Stats(), ref.Stats())
	}
}
