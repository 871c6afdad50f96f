package journal

import (
	"os"
	"path/filepath"
	"testing"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, walFileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, rec, err := OpenWAL(dir)
		if err != nil {
			return
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
