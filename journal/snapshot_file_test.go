package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

func snap(op uint64, data string) consensus.Snapshot {
	return consensus.Snapshot{Op: op, Checksum: xxh3.Hash([]byte(data)), Data: []byte(data)}
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if s, err := ReadSnapshot(dir); s != nil || err != nil {
		t.Fatalf("absent snapshot: %v %v", s, err)
	}
	for _, s := range []consensus.Snapshot{snap(10, "first state"), snap(20, "second, larger state bytes")} {
		if err := WriteSnapshot(dir, s); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSnapshot(dir)
		if err != nil || got.Op != s.Op || got.Checksum != s.Checksum || !bytes.Equal(got.Data, s.Data) {
			t.Fatalf("read back %+v %v", got, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, snapshotFileName))
	if string(raw[len(raw)-20:len(raw)-16]) != "ISNP" {
		t.Fatalf("trailer magic %q", raw[len(raw)-20:len(raw)-16])
	}
	bad := snap(1, "x")
	bad.Checksum++
	if err := WriteSnapshot(dir, bad); err == nil {
		t.Fatal("snapshot with a wrong checksum field written")
	}
}

func TestSnapshotFileCorruptionRefused(t *testing.T) {
	dir := t.TempDir()
	WriteSnapshot(dir, snap(5, "state"))
	path := filepath.Join(dir, snapshotFileName)
	full, _ := os.ReadFile(path)
	for i := range full {
		b := append([]byte(nil), full...)
		b[i] ^= 0x80
		os.WriteFile(path, b, 0o644)
		if _, err := ReadSnapshot(dir); err == nil {
			t.Fatalf("flip at byte %d accepted", i)
		}
	}
	for n := 0; n < len(full); n++ {
		os.WriteFile(path, full[:n], 0o644)
		if _, err := ReadSnapshot(dir); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}
}

// TestSnapshotFileCrashBeforeRename: a stale snapshot.bin.tmp from a crash
// does not affect the committed snapshot, and the next write replaces it.
func TestSnapshotFileCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	WriteSnapshot(dir, snap(5, "committed"))
	os.WriteFile(filepath.Join(dir, snapshotFileName+".tmp"), []byte("torn"), 0o644)
	if s, err := ReadSnapshot(dir); err != nil || s.Op != 5 {
		t.Fatalf("after crash: %+v %v", s, err)
	}
	if err := WriteSnapshot(dir, snap(6, "next")); err != nil {
		t.Fatal(err)
	}
	if s, _ := ReadSnapshot(dir); s.Op != 6 {
		t.Fatalf("after next write: %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotFileName+".tmp")); !os.IsNotExist(err) {
		t.Fatal("temp file left behind")
	}
}
