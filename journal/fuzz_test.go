package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

// FuzzOpenWAL: any file content either refuses to open or yields entries
// that re-read identically after reopening (the repair is stable).
func FuzzOpenWAL(f *testing.F) {
	var valid []byte
	for _, p := range prepares(1, 3) {
		valid = appendEntry(valid, &p)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(append(append([]byte(nil), valid...), 'L', 'W', 'A', 'L'))
	flipped := append([]byte(nil), valid...)
	flipped[len(flipped)-1] ^= 1 // a complete last record damaged: refused
	f.Add(flipped)
	f.Add(append(append([]byte(nil), valid...), make([]byte, 64)...)) // zero-filled torn tail
	for _, s := range walTombstoneSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, walFileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		// The offline check (read-only) agrees with the open: what the open
		// refuses, the check reports as damage that stops the boot.
		_, at, reason, cerr := firstWALDamage(vfs.OS, dir)
		if cerr != nil {
			t.Fatalf("check: %v", cerr)
		}
		w, rec, err := OpenWAL(dir)
		if err != nil {
			if !errors.Is(err, ErrWALCorrupt) && !strings.Contains(err.Error(), "bound") {
				t.Fatalf("open refused without ErrWALCorrupt: %v", err)
			}
			if errors.Is(err, ErrWALCorrupt) && (at < 0 || !strings.Contains(reason, "refuses to boot")) {
				t.Fatalf("open refused (%v) but the check says %d %q", err, at, reason)
			}
			return
		}
		if at >= 0 && !strings.Contains(reason, "torn tail") {
			t.Fatalf("open accepted what the check calls %q", reason)
		}
		w.Close()
		w2, rec2, err := OpenWAL(dir)
		if err != nil {
			t.Fatalf("reopen after repair refused: %v", err)
		}
		defer w2.Close()
		if len(rec) != len(rec2) {
			t.Fatalf("reopen recovered %d entries, first open %d", len(rec2), len(rec))
		}
		for i := 1; i < len(rec); i++ {
			if rec[i].Header.Op <= rec[i-1].Header.Op {
				t.Fatalf("recovered ops not ascending: %d then %d", rec[i-1].Header.Op, rec[i].Header.Op)
			}
		}
	})
}

// walTombstoneSeeds: logs with truncations (a tombstone group and its
// re-appended entries; a bare tombstone), whole, torn inside the group,
// and damaged inside the group.
func walTombstoneSeeds() [][]byte {
	var log []byte
	for _, p := range prepares(1, 4) {
		log = appendEntry(log, &p)
	}
	group := walTombstone(3, 2)
	log = appendEntry(log, &group)
	for _, p := range []consensus.Prepare{reprepared(3), reprepared(4)} {
		log = appendEntry(log, &p)
	}
	whole := append([]byte(nil), log...)
	bare := walTombstone(4, 0)
	withBare := appendEntry(append([]byte(nil), whole...), &bare)
	damaged := append([]byte(nil), whole...)
	damaged[len(damaged)-30] ^= 1
	return [][]byte{whole, whole[:len(whole)-10], withBare, damaged}
}

// refScanSingleFile is the single-file WAL's scan before segments (the
// whole file in memory): the latest record per op in op order, or a
// refusal, and where a torn tail starts (-1 when none).
func refScanSingleFile(data []byte) (entries []consensus.Prepare, tornAt int, refused, tombstones bool) {
	byOp := map[uint64]consensus.Prepare{}
	tornAt = -1
	for off := 0; off < len(data); {
		p, n, err := parseEntry(data[off:])
		if err != nil {
			if refDamageRefused(data, off) {
				return nil, -1, true, tombstones
			}
			tornAt = off
			break
		}
		if _, tomb := walTombstoneCount(&p); tomb {
			tombstones = true
		}
		byOp[p.Header.Op] = p
		off += n
	}
	ops := make([]uint64, 0, len(byOp))
	for op := range byOp {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	for _, op := range ops {
		entries = append(entries, byOp[op])
	}
	return entries, tornAt, false, tombstones
}

// refDamageRefused is the rule for the damaged record at off of the last
// (only) segment, over bytes in memory: a valid record of a later write
// after it refuses; valid records of its own write only, a torn hole
// before them cuts, else refuses; none after it refuses a record complete
// by its framing unless it holds a hole, else cuts.
func refDamageRefused(data []byte, off int) bool {
	firstSame := -1
	for i := off + 1; i+walHeaderBytes <= len(data); i++ {
		_, n, back, err := parseEntryBatch(data[i:])
		if err != nil || back > int64(i) {
			continue
		}
		if i-int(back) > off {
			return true
		}
		if firstSame < 0 {
			firstSame = i
		}
		i += n - 1
	}
	if firstSame >= 0 {
		return !holeEvidence(data[off:firstSame], int64(off))
	}
	if !completeRecord(data[off:]) {
		return false
	}
	n := walHeaderBytes + int(binary.LittleEndian.Uint32(data[off+4:]))
	return !holeEvidence(data[off:off+n], int64(off))
}

// FuzzWALScanMatchesSingleFileScan: for a log without tombstones, the
// streamed open of a single-file WAL (migrated to segment 0) accepts,
// refuses and cuts exactly as the in-memory scan it replaced.
func FuzzWALScanMatchesSingleFileScan(f *testing.F) {
	var valid []byte
	for _, p := range prepares(1, 3) {
		valid = appendEntry(valid, &p)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(append(append([]byte(nil), valid...), 'L', 'W', 'A', 'L'))
	mid := append([]byte(nil), valid...)
	mid[30] ^= 1
	f.Add(mid)
	f.Add(append(append([]byte(nil), valid...), make([]byte, 64)...))
	var holed []byte // one write; its first sector lost, its last record kept
	for _, p := range []consensus.Prepare{prep(1, strings.Repeat("a", 600)), prep(2, strings.Repeat("b", 600)), prep(3, "c")} {
		holed = appendEntry(holed, &p)
	}
	clear(holed[:tornHoleSectorBytes])
	f.Add(holed)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, tornAt, refused, tombstones := refScanSingleFile(data)
		if tombstones {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, walFileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, got, err := OpenWAL(dir)
		if refused {
			if !errors.Is(err, ErrWALCorrupt) {
				t.Fatalf("the in-memory scan refuses, the open says %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("the in-memory scan accepts, the open refuses: %v", err)
		}
		defer w.Close()
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("recovered %d entries, the in-memory scan %d", len(got), len(want))
		}
		if at, _ := w.TornTail(); (tornAt >= 0 && at != int64(tornAt)) || (tornAt < 0 && w.TornTailFile() != "") {
			t.Fatalf("torn tail at %d, the in-memory scan %d", at, tornAt)
		}
	})
}

// FuzzOpenSuperblockDamagedOlderCopy: any bytes in slot a (the older copy, sequence 1) next to a
// valid newer slot b either refuse the boot or boot with exactly b's state.
func FuzzOpenSuperblockDamagedOlderCopy(f *testing.F) {
	older, newer := sbState(1, 1), sbState(2, 2)
	a, b := encodeSuperblock(1, &older), encodeSuperblock(2, &newer)
	f.Add(a)
	bad := append([]byte(nil), a...)
	bad[40] ^= 4
	f.Add(bad)
	f.Add(a[:20])
	f.Fuzz(func(t *testing.T, slotA []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "superblock.a"), slotA, 0o644)
		os.WriteFile(filepath.Join(dir, "superblock.b"), b, 0o644)
		_, st, err := OpenSuperblock(dir, testIdentity)
		if err != nil {
			if !errors.Is(err, ErrSuperblockUnreadable) && !strings.Contains(err.Error(), "belongs to cluster") {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		if st.View < 2 || st.CommitMax < 2 {
			t.Fatalf("booted from state %+v, older than the valid copy", st.VsrState)
		}
	})
}

func FuzzDecodeSuperblock(f *testing.F) {
	st := sbState(3, 30)
	f.Add(encodeSuperblock(1, &st))
	st.ViewHeaders = viewHeadersFor(40, 4)
	f.Add(encodeSuperblock(2, &st))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, got, err := decodeSuperblock(b)
		if err != nil {
			return
		}
		if got.LogView > got.View {
			t.Fatal("decoded log_view above view")
		}
		if len(b) == superblockHeaderBytes+superblockPayloadBytes+superblockTrailerBytes {
			if again := encodeSuperblock(seq, got); string(again[:6]) != string(b[:6]) {
				t.Fatal("re-encoding differs in the header")
			}
		}
	})
}
