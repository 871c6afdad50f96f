package journal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// legacyTruncRecord is the truncation record of older releases ("LWTR",
// no payload): it removes every op >= from, with no exceptions.
func legacyTruncRecord(from uint64) []byte {
	b := make([]byte, walHeaderBytes)
	le := binary.LittleEndian
	le.PutUint32(b, truncMagic)
	le.PutUint64(b[8:], from)
	le.PutUint64(b[16:], entryChecksum(b[:16], nil))
	return b
}

// A Write that truncates and re-appends, cut by a crash at any byte,
// never loses a prepare the log held before and still holds after the
// Write (the same prepare re-appended): consensus.Restored.JournalIntact
// depends on it. Ops 1-5 are written; then a view change keeps 3 and 4,
// replaces 5 and adds 6. At every cut the log holds 1-4 with their
// prepares, and 5 and 6 each hold the old prepare, the new one or none,
// as the cut allows.
func TestPrepareLogTruncationKeepsReappendedPrepares(t *testing.T) {
	dir := t.TempDir()
	l, _ := openPL(t, dir, 0)
	before := plRange(1, 5, 1, 40)
	if err := l.Write(0, before); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "00000000000000000001.pwal")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	start := st.Size()
	after := []consensus.Prepare{plPrep(3, 1, 40), plPrep(4, 1, 40), plPrep(5, 2, 40), plPrep(6, 2, 40)}
	if err := l.Write(3, after); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := start; cut <= int64(len(whole)); cut++ {
		crashed := t.TempDir()
		if err := os.WriteFile(filepath.Join(crashed, "00000000000000000001.pwal"), whole[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l, entries, err := OpenPrepareLog(crashed, 0)
		if err != nil {
			t.Fatalf("cut at byte %d: open: %v", cut, err)
		}
		l.Close()
		got := map[uint64]uint64{}
		for _, p := range entries {
			got[p.Header.Op] = p.Header.Checksum
		}
		for op := uint64(1); op <= 4; op++ {
			if got[op] != plPrep(op, 1, 40).Header.Checksum {
				t.Fatalf("cut at byte %d: op %d holds checksum %d, want the prepare it held before (%d)", cut, op, got[op], plPrep(op, 1, 40).Header.Checksum)
			}
		}
		if c, ok := got[5]; ok && c != plPrep(5, 1, 40).Header.Checksum && c != plPrep(5, 2, 40).Header.Checksum {
			t.Fatalf("cut at byte %d: op 5 holds an unknown checksum %d", cut, c)
		}
		if cut == int64(len(whole)) && (got[5] != plPrep(5, 2, 40).Header.Checksum || got[6] != plPrep(6, 2, 40).Header.Checksum) {
			t.Fatalf("whole write: ops 5 and 6 hold %d and %d, want the new prepares", got[5], got[6])
		}
	}
}

// The truncation record of older releases removes every op >= from.
func TestPrepareLogReadsLegacyTruncationRecords(t *testing.T) {
	dir := t.TempDir()
	var data []byte
	for _, p := range plRange(1, 5, 1, 40) {
		data = appendEntry(data, &p)
	}
	data = append(data, legacyTruncRecord(3)...)
	p := plPrep(3, 2, 40)
	data = appendEntry(data, &p)
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000001.pwal"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, entries := openPL(t, dir, 0)
	defer l.Close()
	if len(entries) != 3 || entries[2].Header.Checksum != p.Header.Checksum {
		t.Fatalf("entries %v, want ops 1, 2 and the new 3", entries)
	}
}
