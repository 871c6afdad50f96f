package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// FuzzOpenPrepareLogWithReferences: any prepare WAL file, with any bytes
// where its segment references point, either opens (every entry that came
// through a reference verifies against its checksum, and a reopen reads
// the same entries) or is reported damaged; it never panics.
func FuzzOpenPrepareLogWithReferences(f *testing.F) {
	seedDir := f.TempDir()
	segs := fakeSegments{}
	l, _, err := OpenPrepareLog(seedDir, 0)
	if err != nil {
		f.Fatal(err)
	}
	entries := plRangeRef(1, 4, 1, 64)
	if err := l.WriteRefs(0, entries[:3], []BodyRef{segs.put(entries[0], 0), {}, segs.put(entries[2], 64)}); err != nil {
		f.Fatal(err)
	}
	if err := l.WriteRefs(3, entries[2:], []BodyRef{{}, segs.put(entries[3], 128)}); err != nil {
		f.Fatal(err)
	}
	l.Close()
	valid, err := os.ReadFile(filepath.Join(seedDir, "00000000000000000001.pwal"))
	if err != nil {
		f.Fatal(err)
	}
	var body []byte
	for _, p := range entries {
		body = append(body, p.Body...)
	}
	f.Add(valid, body)
	f.Add(valid[:len(valid)-7], body)
	f.Add(valid, body[:100])
	flipped := append([]byte(nil), body...)
	flipped[70] ^= 1
	f.Add(valid, flipped)
	f.Fuzz(func(t *testing.T, file, segment []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000001.pwal"), file, 0o644); err != nil {
			t.Fatal(err)
		}
		resolve := func(_ uint64, r BodyRef) ([]byte, error) {
			if r.Position > uint64(len(segment)) || r.Length > uint64(len(segment))-r.Position {
				return nil, errors.New("outside the segment")
			}
			return bytes.Clone(segment[r.Position : r.Position+r.Length]), nil
		}
		l, got, err := OpenPrepareLog(dir, 0, WithBodyResolver(resolve))
		if err != nil {
			if !errors.Is(err, ErrPrepareLogDamaged) {
				t.Fatalf("open: %v (want ok or ErrPrepareLogDamaged)", err)
			}
			l.Close()
			return
		}
		l.Close()
		for _, p := range got {
			if p.Header.Checksum == consensus.PrepareChecksum(&p.Header, p.Body) {
				continue
			}
			if _, isRef := l.refs[p.Header.Op]; isRef {
				t.Fatalf("op %d came through a reference that does not verify", p.Header.Op)
			}
		}
		_, again, err := OpenPrepareLog(dir, 0, WithBodyResolver(resolve))
		if err != nil {
			t.Fatalf("reopen of a log that opened: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("reopen read %d entries, the open %d", len(again), len(got))
		}
		for i := range got {
			if again[i].Header != got[i].Header || !bytes.Equal(again[i].Body, got[i].Body) {
				t.Fatalf("entry %d differs on reopen", i)
			}
		}
	})
}
