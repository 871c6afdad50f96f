package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

var testIdentity = Identity{Cluster: consensus.Uint128{Lo: 0xabc, Hi: 0xdef}, ReplicaID: 1, ReplicaCount: 3}

func sbState(view uint32, commit uint64) SuperblockState {
	return SuperblockState{Identity: testIdentity,
		VsrState: consensus.VsrState{View: view, LogView: view, CommitMax: commit, CheckpointOp: commit / 2,
			AnchorTimestamp: commit*1000 + 7, AnchorChecksum: commit ^ 0x5a5a5a5a5a5a5a5a},
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
		if err != nil || !reflect.DeepEqual(*st, sbState(uint32(i+1), uint64(10*(i+1)))) {
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
	if len(b) != 28+82+8 || le.Uint32(b) != 0x53424C4B || le.Uint16(b[4:]) != 1 || le.Uint64(b[8:]) != 42 || le.Uint32(b[24:]) != 82 {
		t.Fatalf("header fields wrong: % x", b[:28])
	}
	p := b[28:]
	if le.Uint64(p[0:]) != 0xabc || le.Uint64(p[8:]) != 0xdef || p[16] != 1 || p[17] != 3 || le.Uint32(p[18:]) != 7 ||
		le.Uint32(p[22:]) != 6 || le.Uint64(p[26:]) != 70 || le.Uint64(p[34:]) != 35 || le.Uint64(p[42:]) != 70 ||
		le.Uint64(p[50:]) != 1 || le.Uint64(p[58:]) != 210 {
		t.Fatalf("payload fields wrong: % x", p[:66])
	}
	if le.Uint64(p[66:]) != 70007 || le.Uint64(p[74:]) != 70^0x5a5a5a5a5a5a5a5a {
		t.Fatalf("anchor fields wrong: % x", p[66:82])
	}
	if le.Uint64(b[110:]) != xxh3.Hash(b[:110]) {
		t.Fatal("trailer is not XXH3 of the preceding bytes")
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

// shortenedRecord re-frames the first payloadLen bytes of a current
// record's payload, as an older build wrote it.
func shortenedRecord(full []byte, payloadLen int) []byte {
	le := binary.LittleEndian
	rec := append([]byte(nil), full[:28+payloadLen]...)
	le.PutUint32(rec[24:], uint32(payloadLen))
	return le.AppendUint64(rec, xxh3.Hash(rec))
}

// TestSuperblockAnchorsRoundTrip: the checkpoint anchors (timestamp and
// prepare checksum of the op at checkpoint_op) survive a write and a
// reopen; records of the earlier 66- and 58-byte forms still read, with
// the fields they lack as zero.
func TestSuperblockAnchorsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	want := sbState(5, 900)
	want.AnchorTimestamp, want.AnchorChecksum = 1_764_460_800_000_123, 0xfedcba9876543210
	if err := sb.Write(want); err != nil {
		t.Fatal(err)
	}
	_, got, err := OpenSuperblock(dir, testIdentity)
	if err != nil || got.AnchorTimestamp != want.AnchorTimestamp || got.AnchorChecksum != want.AnchorChecksum || !reflect.DeepEqual(*got, want) {
		t.Fatalf("reopened %+v err %v, want %+v", got, err, want)
	}

	full := encodeSuperblock(3, &want)
	for _, tc := range []struct {
		payloadLen   int
		wantFrontier uint64
	}{{66, want.OffsetFrontier}, {58, 0}} {
		_, got, err := decodeSuperblock(shortenedRecord(full, tc.payloadLen))
		if err != nil {
			t.Fatalf("%d-byte payload: %v", tc.payloadLen, err)
		}
		if got.AnchorTimestamp != 0 || got.AnchorChecksum != 0 || got.OffsetFrontier != tc.wantFrontier ||
			got.CommitMax != want.CommitMax || got.CheckpointOp != want.CheckpointOp || got.CheckpointChecksum != want.CheckpointChecksum {
			t.Fatalf("%d-byte payload decoded %+v", tc.payloadLen, got)
		}
	}
	// Any other payload length is unreadable (74 would be a torn anchor pair).
	for _, n := range []int{57, 59, 65, 67, 74, 81, 83} {
		rec := shortenedRecord(append(full[:len(full)-8:len(full)-8], make([]byte, 8)...), n)
		if _, _, err := decodeSuperblock(rec); err == nil {
			t.Fatalf("%d-byte payload decoded", n)
		}
	}
}

// TestSuperblockCorruptOlderCopyBootsFromTheNewer (issue 15 point 7): one
// damaged byte anywhere in the OLDER copy boots from the newer copy, except
// in the header fields that prove it older (sequence) or a view/commit
// that would then claim to be ahead: those, a damaged NEWER copy, and both
// copies damaged refuse.
func TestSuperblockCorruptOlderCopyBootsFromTheNewer(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	sb.Write(sbState(1, 1)) // a: sequence 1 (older)
	sb.Write(sbState(2, 2)) // b: sequence 2 (newer)
	pathA, pathB := filepath.Join(dir, "superblock.a"), filepath.Join(dir, "superblock.b")
	fullA, _ := os.ReadFile(pathA)
	fullB, _ := os.ReadFile(pathB)
	for i := range fullA {
		bad := append([]byte(nil), fullA...)
		bad[i] ^= 0x04
		os.WriteFile(pathA, bad, 0o644)
		sb2, st, err := OpenSuperblock(dir, testIdentity)
		sequenceByte := i >= 8 && i < 16
		aheadByte := (i >= superblockHeaderBytes+18 && i < superblockHeaderBytes+22) ||
			(i >= superblockHeaderBytes+26 && i < superblockHeaderBytes+34)
		if sequenceByte || (aheadByte && err != nil) {
			if !errors.Is(err, ErrSuperblockUnreadable) {
				t.Fatalf("flip at byte %d (sequence/view/commit) of the older slot: err %v, want unreadable", i, err)
			}
			continue
		}
		if err != nil || st.View != 2 || st.CommitMax != 2 {
			t.Fatalf("flip at byte %d of the OLDER slot: %+v, %v; want a boot from the newer copy", i, st, err)
		}
		if d := sb2.OlderCopyDamage(); !strings.Contains(d, "superblock.a") || !strings.Contains(d, "older copy") {
			t.Fatalf("flip at byte %d: damage description %q", i, d)
		}
	}
	// The next write replaces the damaged older copy.
	bad := append([]byte(nil), fullA...)
	bad[40] ^= 0x04
	os.WriteFile(pathA, bad, 0o644)
	sb2, _, err := OpenSuperblock(dir, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb2.Write(sbState(3, 3)); err != nil {
		t.Fatal(err)
	}
	if sb3, st, err := OpenSuperblock(dir, testIdentity); err != nil || st.View != 3 || sb3.OlderCopyDamage() != "" {
		t.Fatalf("after the repairing write: %+v %v", st, err)
	}

	// A damaged NEWER copy refuses (the older one would forget its state).
	os.WriteFile(pathA, fullA, 0o644)
	badB := append([]byte(nil), fullB...)
	badB[50] ^= 0x04
	os.WriteFile(pathB, badB, 0o644)
	if _, _, err := OpenSuperblock(dir, testIdentity); !errors.Is(err, ErrSuperblockUnreadable) {
		t.Fatalf("damaged newer copy: %v, want unreadable", err)
	}
	// Both damaged refuse; a truncated copy refuses.
	badA := append([]byte(nil), fullA...)
	badA[50] ^= 0x04
	os.WriteFile(pathA, badA, 0o644)
	if _, _, err := OpenSuperblock(dir, testIdentity); !errors.Is(err, ErrSuperblockUnreadable) || !strings.Contains(err.Error(), "both") {
		t.Fatalf("both copies damaged: %v", err)
	}
	os.WriteFile(pathB, fullB, 0o644)
	os.WriteFile(pathA, fullA[:10], 0o644)
	if _, _, err := OpenSuperblock(dir, testIdentity); !errors.Is(err, ErrSuperblockUnreadable) {
		t.Fatalf("truncated slot: %v", err)
	}
	// One valid slot with the other absent is fine.
	os.Remove(pathA)
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

// viewHeadersFor is a StartView suffix of n headers from head downwards,
// every field set, with a blank (released) slot at the bottom.
func viewHeadersFor(head uint64, n int) []consensus.PrepareHeader {
	hs := make([]consensus.PrepareHeader, n)
	for i := range hs {
		op := head - uint64(i)
		hs[i] = consensus.PrepareHeader{View: 4, Op: op, Commit: op - 1, Timestamp: op * 1000, Parent: op ^ 0x77,
			Checksum: op ^ 0x99, Client: consensus.Uint128{Lo: op, Hi: 3}, Session: 5, Request: op + 2, ReqSum: 11,
			Operation: 30, UserID: 7}
	}
	if n > 1 {
		hs[n-1] = consensus.PrepareHeader{Op: head - uint64(n-1)}
	}
	return hs
}

// TestSuperblockViewHeadersRoundTrip: the view headers (the StartView
// suffix made durable with log_view, consensus finding 6) survive a write
// and a reopen, up to the 128-header bound; a superblock without them keeps
// the 82-byte payload, and an 82-byte record reads with none.
func TestSuperblockViewHeadersRoundTrip(t *testing.T) {
	for _, n := range []int{1, 3, consensus.ViewHeadersMax} {
		dir := t.TempDir()
		sb, _, _ := OpenSuperblock(dir, testIdentity)
		want := sbState(6, 200)
		want.ViewHeaders = viewHeadersFor(300, n)
		if err := sb.Write(want); err != nil {
			t.Fatalf("%d headers: %v", n, err)
		}
		_, got, err := OpenSuperblock(dir, testIdentity)
		if err != nil || !reflect.DeepEqual(*got, want) {
			t.Fatalf("%d headers: reopened %+v err %v, want %+v", n, got, err, want)
		}
		rec := encodeSuperblock(1, &want)
		if pl := binary.LittleEndian.Uint32(rec[24:]); pl != uint32(84+n*93) {
			t.Fatalf("%d headers: payload length %d, want %d", n, pl, 84+n*93)
		}
	}
	plain := sbState(6, 200)
	rec := encodeSuperblock(1, &plain)
	if pl := binary.LittleEndian.Uint32(rec[24:]); pl != 82 {
		t.Fatalf("no view headers: payload length %d, want 82", pl)
	}
	if _, got, err := decodeSuperblock(rec); err != nil || got.ViewHeaders != nil {
		t.Fatalf("82-byte payload: %+v %v", got, err)
	}
	over := sbState(6, 200)
	over.ViewHeaders = viewHeadersFor(300, consensus.ViewHeadersMax+1)
	sb, _, _ := OpenSuperblock(t.TempDir(), testIdentity)
	if err := sb.Write(over); err == nil || !strings.Contains(err.Error(), "view headers exceed") {
		t.Fatalf("129 view headers written: %v", err)
	}
}

// TestSuperblockViewHeadersMalformed: a count that disagrees with the
// payload length, a zero or oversized count, or a header with a body
// length is unreadable, never a panic.
func TestSuperblockViewHeadersMalformed(t *testing.T) {
	st := sbState(6, 200)
	st.ViewHeaders = viewHeadersFor(50, 3)
	good := encodeSuperblock(1, &st)
	reframe := func(mutate func(p []byte) []byte) []byte {
		le := binary.LittleEndian
		p := mutate(append([]byte(nil), good[28:len(good)-8]...))
		rec := append(append([]byte(nil), good[:28]...), p...)
		le.PutUint32(rec[24:], uint32(len(p)))
		return le.AppendUint64(rec, xxh3.Hash(rec))
	}
	cases := map[string]func(p []byte) []byte{
		"count above the headers": func(p []byte) []byte { binary.LittleEndian.PutUint16(p[82:], 4); return p },
		"count below the headers": func(p []byte) []byte { binary.LittleEndian.PutUint16(p[82:], 2); return p },
		"zero count":              func(p []byte) []byte { binary.LittleEndian.PutUint16(p[82:], 0); return p },
		"count over the bound": func(p []byte) []byte {
			binary.LittleEndian.PutUint16(p[82:], 129)
			return append(p, make([]byte, 126*93)...)
		},
		"header with a body length": func(p []byte) []byte { binary.LittleEndian.PutUint32(p[84+89:], 1); return p },
		"torn last header":          func(p []byte) []byte { return p[:len(p)-1] },
		"count without headers":     func(p []byte) []byte { return p[:84] },
	}
	for name, mutate := range cases {
		if _, got, err := decodeSuperblock(reframe(mutate)); err == nil {
			t.Fatalf("%s: decoded %+v", name, got)
		}
	}
	if _, _, err := decodeSuperblock(reframe(func(p []byte) []byte { return p })); err != nil {
		t.Fatalf("unchanged record: %v", err)
	}
}

// TestSuperblockAmnesiacFlag: VsrState.Amnesiac rides in the header's
// flags (bit 0, reserved = 0 before), survives a reopen and the node's
// superblock log encoding; unknown flag bits refuse the record.
func TestSuperblockAmnesiacFlag(t *testing.T) {
	dir := t.TempDir()
	sb, _, _ := OpenSuperblock(dir, testIdentity)
	want := sbState(5, 900)
	want.Amnesiac = true
	if err := sb.Write(want); err != nil {
		t.Fatal(err)
	}
	_, got, err := OpenSuperblock(dir, testIdentity)
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("reopened %+v err %v, want %+v", got, err, want)
	}
	rec := encodeSuperblock(7, &want)
	if rec[6] != 1 || rec[7] != 0 {
		t.Fatalf("flags bytes %x, want 01 00", rec[6:8])
	}
	want.Amnesiac = false
	if rec := encodeSuperblock(7, &want); rec[6] != 0 {
		t.Fatalf("flags byte %x without amnesia, want 0 (the pre-flag layout)", rec[6])
	}
	bad := append([]byte(nil), rec...)
	bad[6] = 2
	binary.LittleEndian.PutUint64(bad[len(bad)-8:], xxh3.Hash(bad[:len(bad)-8]))
	if _, _, err := decodeSuperblock(bad); err == nil {
		t.Fatal("a record with an unknown flag bit decoded")
	}
}
