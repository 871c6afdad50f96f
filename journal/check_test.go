package journal

import (
	"os"
	"strings"
	"testing"
)

// TestCheckAndTruncateWALAtDamage: the offline check names a damaged synced record without changing the
// file; the explicit repair cuts the WAL there and the WAL opens again with the records before it.
func TestCheckAndTruncateWALAtDamage(t *testing.T) {
	dir := t.TempDir()
	w, _ := openWAL(t, dir)
	if err := w.Append(prepares(1, 4)...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if f := CheckMetadata(dir); len(f) != 0 {
		t.Fatalf("sound WAL: findings %v", f)
	}
	path := segPath(dir, 1)
	data, _ := os.ReadFile(path)
	third := recordStarts(t, data)[2]
	data[third+40] ^= 1
	os.WriteFile(path, data, 0o644)
	f := CheckMetadata(dir)
	if len(f) != 1 || !strings.Contains(f[0], "byte") || !strings.Contains(f[0], "interior corruption") {
		t.Fatalf("findings %v", f)
	}
	if st, _ := os.Stat(path); st.Size() != int64(len(data)) {
		t.Fatal("check changed the file")
	}
	cut, err := TruncateWALAtDamage(dir)
	if err != nil || cut == nil || cut.File != walSegmentName(1) || cut.At != third || cut.Dropped != int64(len(data))-third {
		t.Fatalf("truncate: %+v err %v", cut, err)
	}
	if _, rec := openWAL(t, dir); len(rec) != 2 {
		t.Fatalf("after the repair %d records, want 2", len(rec))
	}
}
