package journal

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// refPrep is a prepare with a real identity checksum (references are
// verified against it).
func refPrep(op uint64, view uint32, size int) consensus.Prepare {
	p := plPrep(op, view, size)
	p.Header.Checksum = consensus.PrepareChecksum(&p.Header, p.Body)
	return p
}

// fakeSegments stands in for the partition log: bodies by place.
type fakeSegments map[BodyRef][]byte

func (f fakeSegments) put(p consensus.Prepare, pos uint64) BodyRef {
	r := BodyRef{Segment: 0, Position: pos, Length: uint64(len(p.Body))}
	f[r] = append([]byte(nil), p.Body...)
	return r
}

func (f fakeSegments) resolve(_ uint64, r BodyRef) ([]byte, error) {
	b, ok := f[r]
	if !ok {
		return nil, fmt.Errorf("nothing at byte %d", r.Position)
	}
	return append([]byte(nil), b...), nil
}

func sameEntries(t *testing.T, got, want []consensus.Prepare) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("recovered %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Header != want[i].Header || !bytes.Equal(got[i].Body, want[i].Body) {
			t.Fatalf("entry %d: op %d, want op %d (bodies equal %v)", i, got[i].Header.Op, want[i].Header.Op,
				bytes.Equal(got[i].Body, want[i].Body))
		}
	}
}

// TestPrepareLogReferencesResolveAtOpen: prepares written as references
// come back with their bodies, read through the resolver; inline ones as
// before; the log remembers which are references.
func TestPrepareLogReferencesResolveAtOpen(t *testing.T) {
	dir := t.TempDir()
	segs := fakeSegments{}
	l, _ := openPL(t, dir, 0)
	entries := []consensus.Prepare{refPrep(1, 1, 300), refPrep(2, 1, 40), refPrep(3, 1, 5000), refPrep(4, 1, 10)}
	refs := []BodyRef{segs.put(entries[0], 0), {}, segs.put(entries[2], 300)}
	if err := l.WriteRefs(0, entries, refs); err != nil {
		t.Fatal(err)
	}
	if l.RefCount() != 2 {
		t.Fatalf("RefCount %d, want 2", l.RefCount())
	}
	if l.Bytes() >= 5000 {
		t.Fatalf("WAL holds %d bytes: the 5,000-byte body was written inline", l.Bytes())
	}
	l.Close()
	l2, got, err := OpenPrepareLog(dir, 0, WithBodyResolver(segs.resolve))
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, entries)
	if l2.RefCount() != 2 {
		t.Fatalf("reopened RefCount %d, want 2", l2.RefCount())
	}
	if _, _, err := OpenPrepareLog(dir, 0); err == nil {
		t.Fatal("opened a log of references without a resolver")
	}
}

// TestPrepareLogUnresolvedReferenceIsDamage: a live reference whose body
// is gone or different is damage, reported like a record that does not
// parse; the amnesiac cut removes it and what follows.
func TestPrepareLogUnresolvedReferenceIsDamage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(fakeSegments, BodyRef)
	}{
		{"gone", func(f fakeSegments, r BodyRef) { delete(f, r) }},
		{"other bytes", func(f fakeSegments, r BodyRef) { f[r][7] ^= 0xff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			segs := fakeSegments{}
			l, _ := openPL(t, dir, 0)
			entries := plRangeRef(1, 5, 1, 200)
			refs := writeAsRefs(t, l, segs, entries)
			l.Close()
			tc.spoil(segs, refs[2]) // op 3
			_, got, err := OpenPrepareLog(dir, 0, WithBodyResolver(segs.resolve))
			if !errors.Is(err, ErrPrepareLogDamaged) {
				t.Fatalf("open: %v, want ErrPrepareLogDamaged", err)
			}
			sameEntries(t, got, entries[:2])
			cut, _, _, err := CutPrepareLogAtDamage(dir, 0, WithBodyResolver(segs.resolve))
			if err != nil || !cut {
				t.Fatalf("cut %v, %v", cut, err)
			}
			_, got, err = OpenPrepareLog(dir, 0, WithBodyResolver(segs.resolve))
			if err != nil {
				t.Fatalf("open after the cut: %v", err)
			}
			sameEntries(t, got, entries[:2])
		})
	}
}

// writeAsRefs puts each entry's body in segs, one after another, and
// writes every entry as a reference to it.
func writeAsRefs(t *testing.T, l *PrepareLog, segs fakeSegments, entries []consensus.Prepare) []BodyRef {
	t.Helper()
	refs := make([]BodyRef, len(entries))
	var pos uint64
	for i := range entries {
		refs[i] = segs.put(entries[i], pos)
		pos += uint64(len(entries[i].Body))
	}
	if err := l.WriteRefs(0, entries, refs); err != nil {
		t.Fatal(err)
	}
	return refs
}

func plRangeRef(from, to uint64, view uint32, size int) []consensus.Prepare {
	var out []consensus.Prepare
	for op := from; op <= to; op++ {
		out = append(out, refPrep(op, view, size))
	}
	return out
}

// TestPrepareLogInlineRefsSupersedesReferences: once InlineRefs wrote the
// matching prepares with their bodies, their old references are never
// read again (the bytes they name may be gone), and the others still are.
func TestPrepareLogInlineRefsSupersedesReferences(t *testing.T) {
	dir := t.TempDir()
	segs := fakeSegments{}
	l, _ := openPL(t, dir, 0)
	entries := plRangeRef(1, 4, 1, 100)
	refs := writeAsRefs(t, l, segs, entries)
	n, err := l.InlineRefs(func(_ uint64, r BodyRef) bool { return r.Position >= 200 }, segs.resolve)
	if err != nil || n != 2 {
		t.Fatalf("InlineRefs: %d, %v; want 2", n, err)
	}
	if l.RefCount() != 2 || l.HasRefs(func(_ uint64, r BodyRef) bool { return r.Position >= 200 }) {
		t.Fatalf("RefCount %d after inlining two of four", l.RefCount())
	}
	l.Close()
	delete(segs, refs[2]) // the staged tail the caller cut
	delete(segs, refs[3])
	_, got, err := OpenPrepareLog(dir, 0, WithBodyResolver(segs.resolve))
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, entries)
}

// TestPrepareLogTruncationForgetsReferences: a truncation removes the
// references of the ops it removes (their bytes may then go), keeps those
// its own Write puts back as the same prepare, and Reclaim forgets those
// below the checkpoint.
func TestPrepareLogTruncationForgetsReferences(t *testing.T) {
	dir := t.TempDir()
	segs := fakeSegments{}
	l, _ := openPL(t, dir, 0)
	entries := plRangeRef(1, 6, 1, 100)
	refs := writeAsRefs(t, l, segs, entries)
	// From op 4: op 4 comes back as the same prepare (inline), 5 and 6 go.
	if err := l.Write(4, []consensus.Prepare{entries[3]}); err != nil {
		t.Fatal(err)
	}
	if l.RefCount() != 3 {
		t.Fatalf("RefCount %d after truncating from op 4, want 3 (ops 1-3)", l.RefCount())
	}
	// From op 3, op 3 re-appended as a reference (the same prepare) stays one.
	if err := l.WriteRefs(3, []consensus.Prepare{entries[2]}, []BodyRef{refs[2]}); err != nil {
		t.Fatal(err)
	}
	if l.RefCount() != 3 {
		t.Fatalf("RefCount %d, want 3", l.RefCount())
	}
	if err := l.Reclaim(3); err != nil {
		t.Fatal(err)
	}
	if l.RefCount() != 1 {
		t.Fatalf("RefCount %d after reclaiming below op 3, want 1", l.RefCount())
	}
	l.Close()
	for _, r := range refs[3:] {
		delete(segs, r)
	}
	_, got, err := OpenPrepareLog(dir, 1, WithBodyResolver(segs.resolve))
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, entries[:3])
}

// TestPrepareLogRefusesAReferenceOfAnotherLength: a reference must name
// exactly the body's bytes.
func TestPrepareLogRefusesAReferenceOfAnotherLength(t *testing.T) {
	l, _ := openPL(t, t.TempDir(), 0)
	p := refPrep(1, 1, 100)
	if err := l.WriteRefs(0, []consensus.Prepare{p}, []BodyRef{{Position: 0, Length: 99}}); err == nil {
		t.Fatal("wrote a reference of 99 bytes for a 100-byte body")
	}
}
