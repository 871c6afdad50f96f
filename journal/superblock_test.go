package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

var testIdentity = Identity{Cluster: consensus.Uint128{Lo: 0xabc, Hi: 0xdef}, ReplicaID: 1, ReplicaCount: 3}

func sbState(view uint32, commit uint64) SuperblockState {
	return SuperblockState{Identity: testIdentity,
		VsrState:           consensus.VsrState{View: view, LogView: view, CommitMax: commit, CheckpointOp: commit / 2},
		CheckpointChecksum: consensus.Uint128{Lo: commit, Hi: 1}, OffsetFrontier: commit * 3}
}

func TestSuperblockAlternatesSlots(t *testing.T) {
	dir := t.TempDir()
	sb, st, err := OpenSuperblock(dir, testIdentity)
	if err != nil || st != nil {
		t.Fatalf("fresh open: %v %v", st, err)
	}
	wantSlot := []string{"superblock.a", "superblock.b", "superblock.a", "superblock.b"}
	for i, slot := range wantSlot {
		if err := sb.Write(sbState(uint32(i+1), uint64(10*(i+1)))); err != nil {
			t.Fatal(err)
		}
		_, seq, err := readSlot(t, filepath.Join(dir, slot))
		if err != nil || seq != uint64(i+1) {
			t.Fatalf("write %d: slot %s seq %d err %v", i+1, slot, seq, err)
		}
		_, st, err := OpenSuperblock(dir, testIdentity)
		if err != nil || *st != sbState(uint32(i+1), uint64(10*(i+1))) {
			t.Fatalf("write %d: reopened %+v err %v", i+1, st, err)
		}
	}
	// A reopened superblock continues the sequence in the older slot.
	sb2, _, _ := OpenSuperblock(dir, testIdentity)
	if sb2.Sequence() != 4 {
		t.Fatalf("sequence %d", sb2.Sequence())
	}
	if err := sb2.Write(sbState(9, 90)); err != nil {
		t.Fatal(err)
	}
	if _, seq, _ := readSlot(t, filepath.Join(dir, "superblock.a")); seq != 5 {
		t.Fatalf("fifth write went to the wrong slot (a seq %d)", seq)
	}
}

func readSlot(t *testing.T, path string) (*SuperblockState, uint64, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	seq, st, err := decodeSuperblock(b)
	return st, seq, err
}

func TestSuperblockLayout(t *testing.T) {
	st := sbState(7, 70)
	st.LogView = 6
	b := encodeSuperblock(42, &st)
	le := binary.LittleEndian
	if len(b) != 28+66+8 || le.Uint32(b) != 0x53424C4B || le.Uint16(b[4:]) != 1 || le.Uint64(b[8:]) != 42 || le.Uint32(b[24:]) != 66 {
		t.Fatalf("header fields wrong: % x", b[:28])
	}
	p := b[28:]
	if le.Uint64(p[0:]) != 0xabc || le.Uint64(p[8:]) != 0xdef || p[16] != 1 || p[17] != 3 || le.Uint32(p[18:]) != 7 ||
		le.Uint32(p[22:]) != 6 || le.Uint64(p[26:]) != 70 || le.Uint64(p[34:]) != 35 || le.Uint64(p[42:]) != 70 ||
		le.Uint64(p[50:]) != 1 || le.Uint64(p[58:]) != 210 {
		t.Fatalf("payload fields wrong: % x", p[:66])
	}
	if le.Uint64(b[94:]) != xxh3.Hash(b[:94]) {
		t.Fatal("trailer is not XXH3 of the preceding bytes")
	}
	// Legacy 58-byte payload: accepted with frontier 0.
	legacy := append([]byte(nil), b[:28+58]...)
	le.PutUint32(legacy[24:], 58)
	legacy = le.AppendUint64(legacy, xxh3.Hash(legacy))
	_, got, err := decodeSuperblock(legacy)
	if err != nil || got.OffsetFrontier != 0 || got.CommitMax != 70 {
		t.Fatalf("legacy record: %+v %v", got, err)
	}
	// log_view above view is rejected on read and write.
	bad := sbState(3, 1)
	bad.LogView = 4
	if _, _, err := decodeSuperblock(encodeSuperblock(1, &bad)); err == nil {
		t.Fatal("log_view > view decoded")
	}
	sb, _, _ := OpenSuperblock(t.TempDir(), testIdentity)
	if err := sb.Write(bad); err == nil {
		t.Fatal("log_view > view written")
	}
}

func TestSuperblockCorruptSlotRefuses(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	sb.Write(sbState(1, 1))
	sb.Write(sbState(2, 2))
	full, _ := os.ReadFile(filepath.Join(dir, "superblock.a"))
	for i := range full {
		bad := append([]byte(nil), full...)
		bad[i] ^= 0x04
		os.WriteFile(filepath.Join(dir, "superblock.a"), bad, 0o644)
		_, _, err := OpenSuperblock(dir, testIdentity)
		if !errors.Is(err, ErrSuperblockUnreadable) {
			t.Fatalf("flip at byte %d of the OLDER slot: err %v, want unreadable", i, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "superblock.a"), full[:10], 0o644)
	if _, _, err := OpenSuperblock(dir, testIdentity); !errors.Is(err, ErrSuperblockUnreadable) {
		t.Fatalf("truncated slot: %v", err)
	}
	// One valid slot with the other absent is fine.
	os.Remove(filepath.Join(dir, "superblock.a"))
	if _, st, err := OpenSuperblock(dir, testIdentity); err != nil || st.View != 2 {
		t.Fatalf("single slot: %+v %v", st, err)
	}
}

func TestSuperblockIdentityMismatch(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	sb.Write(sbState(1, 1))
	for _, id := range []Identity{
		{Cluster: consensus.Uint128{Lo: 1}, ReplicaID: 1, ReplicaCount: 3},
		{Cluster: testIdentity.Cluster, ReplicaID: 2, ReplicaCount: 3},
		{Cluster: testIdentity.Cluster, ReplicaID: 1, ReplicaCount: 5},
	} {
		if _, _, err := OpenSuperblock(dir, id); err == nil || !strings.Contains(err.Error(), "refusing to boot") {
			t.Fatalf("identity %+v: err %v", id, err)
		}
	}
	other := sbState(2, 2)
	other.ReplicaID = 0
	if err := sb.Write(other); err == nil {
		t.Fatal("write with a foreign identity accepted")
	}
}

// TestSuperblockCrashBeforeRename: a crash after writing the temp file but
// before the rename leaves superblock.X.tmp; the newest record is still
// the previous one and the next write succeeds.
func TestSuperblockCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	sb.Write(sbState(1, 10))
	sb.Write(sbState(2, 20))
	next := sbState(3, 30)
	os.WriteFile(filepath.Join(dir, "superblock.a.tmp"), encodeSuperblock(3, &next)[:50], 0o644)
	sb2, st, err := OpenSuperblock(dir, testIdentity)
	if err != nil || st.View != 2 {
		t.Fatalf("after crash: %+v %v", st, err)
	}
	if err := sb2.Write(next); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := OpenSuperblock(dir, testIdentity); st.View != 3 {
		t.Fatalf("after recovery write: %+v", st)
	}
}
