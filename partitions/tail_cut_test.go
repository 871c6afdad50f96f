package partitions

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// segmentFiles reads a log directory's segment, index and hole-marker files by name.
func segmentFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, logSuffix) && !strings.HasSuffix(n, indexSuffix) && !strings.HasSuffix(n, lostSuffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}

func sameSegmentFiles(t *testing.T, got, want string) {
	t.Helper()
	g, w := segmentFiles(t, got), segmentFiles(t, want)
	gn, wn := make([]string, 0, len(g)), make([]string, 0, len(w))
	for n := range g {
		gn = append(gn, n)
	}
	for n := range w {
		wn = append(wn, n)
	}
	slices.Sort(gn)
	slices.Sort(wn)
	if !slices.Equal(gn, wn) {
		t.Fatalf("files %v, want %v", gn, wn)
	}
	for n, b := range w {
		if !bytes.Equal(g[n], b) {
			t.Fatalf("%s differs: %d bytes, want %d", n, len(g[n]), len(b))
		}
	}
}

type logStep struct {
	skipTo uint64 // a SkipTo when set, else an append of 3 messages stamped at time
	time   uint64
}

func runSteps(t *testing.T, l *Log, steps []logStep) {
	t.Helper()
	for _, s := range steps {
		if s.skipTo != 0 {
			if err := l.SkipTo(s.skipTo); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := l.Append(makeBatch(t, l.NextOffset(), 3, 500, s.time)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCutTailThenAnotherHistoryMatchesALogThatOnlyHadIt: a log that applied one history past
// offset `at`, cut back there and applied another, has the files of a log that applied only the
// other (whole-node simulator finding 20), whether the cut lands inside a segment, on a segment's
// start, or in a hole; the cut survives a reopen.
func TestCutTailThenAnotherHistoryMatchesALogThatOnlyHadIt(t *testing.T) {
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1024}
	common := []logStep{{time: 100}, {time: 101}, {time: 102}, {time: 103}, {time: 104}} // 0..14
	dropped := []logStep{{time: 200}, {time: 201}, {skipTo: 40}, {time: 202}, {time: 203}, {skipTo: 90}, {time: 204},
		{time: 205}, {time: 206}, {time: 207}, {time: 208}}
	kept := []logStep{{time: 300}, {skipTo: 30}, {time: 301}, {time: 302}, {time: 303}, {time: 304}, {time: 305}}
	extending := append([]logStep{{skipTo: 40}}, dropped...) // the dropped history first extends the hole
	type cutCase struct {
		name    string
		before  []logStep // the common history up to the cut
		dropped []logStep // nil: dropped
		at      uint64
		reopen  bool // the log is reopened between the dropped history and the cut
	}
	var cases []cutCase
	for _, reopen := range []bool{false, true} {
		suffix := ""
		if reopen {
			// At open a segment followed by a recorded hole ends where the next one starts
			// (whole-node simulator seed 1097: the cut at a hole's end appended into it).
			suffix = ", reopened before the cut"
		}
		cases = append(cases,
			cutCase{"inside a segment" + suffix, common[:3], nil, 9, reopen},
			cutCase{"at the end of the common history" + suffix, common, nil, 15, reopen},
			cutCase{"in a hole" + suffix, append(append([]logStep{}, common...), logStep{skipTo: 20}), nil, 20, reopen},
			cutCase{"in a hole the dropped history extended" + suffix,
				append(append([]logStep{}, common...), logStep{skipTo: 20}, logStep{skipTo: 25}), nil, 25, reopen},
			cutCase{"inside a hole that goes on past the cut" + suffix,
				append(append([]logStep{}, common...), logStep{skipTo: 17}), extending, 17, reopen})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cutDir, onlyDir := t.TempDir(), t.TempDir()
			cut, only := openLog(t, cutDir, opts), openLog(t, onlyDir, opts)
			runSteps(t, cut, tc.before)
			runSteps(t, only, tc.before)
			if cut.NextOffset() != tc.at {
				t.Fatalf("the common history ends at %d, the test cuts at %d", cut.NextOffset(), tc.at)
			}
			if tc.dropped != nil {
				runSteps(t, cut, tc.dropped)
			} else {
				runSteps(t, cut, dropped)
			}
			if tc.reopen {
				if err := cut.Close(); err != nil {
					t.Fatal(err)
				}
				cut = openLog(t, cutDir, opts)
			}
			if err := cut.CutTail(tc.at); err != nil {
				t.Fatalf("CutTail(%d): %v", tc.at, err)
			}
			if cut.NextOffset() != tc.at {
				t.Fatalf("next offset %d after the cut, want %d", cut.NextOffset(), tc.at)
			}
			if err := cut.Close(); err != nil {
				t.Fatal(err)
			}
			cut = openLog(t, cutDir, opts)
			defer cut.Close()
			defer only.Close()
			runSteps(t, cut, kept)
			runSteps(t, only, kept)
			if cut.NextOffset() != only.NextOffset() {
				t.Fatalf("next offset %d, want %d", cut.NextOffset(), only.NextOffset())
			}
			sameSegmentFiles(t, cutDir, onlyDir)
		})
	}
}

// TestCutTailRefusesWhatItCannotCut: inside a record, or at or below the first segment's start.
func TestCutTailRefusesWhatItCannotCut(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSizeBytes: 1 << 20})
	defer l.Close()
	fillLog(t, l, 4, 3, 100) // 0..11
	for _, at := range []uint64{0, 4} {
		if err := l.CutTail(at); err == nil {
			t.Fatalf("CutTail(%d) was accepted", at)
		}
	}
	if err := l.CutTail(12); err != nil || l.NextOffset() != 12 {
		t.Fatalf("a cut at the end: %v, next %d; want a no-op", err, l.NextOffset())
	}
	if err := l.CutTail(6); err != nil || l.NextOffset() != 6 {
		t.Fatalf("CutTail(6): %v, next %d", err, l.NextOffset())
	}
	if got := decodePoll(t, poll(t, l, wire.PollOffset, 0, 100)); len(got) != 6 || got[5] != 5 {
		t.Fatalf("after the cut a poll serves %v, want 0..5", got)
	}
}

// TestCutTailAtARollKeepsTheEmptySegment: a cut at the start of the segment the append that
// filled the one before rolled to leaves that empty segment, as the log that never went past it
// has (a cluster replica's files must stay its peers'; metadata simulator seed 35).
func TestCutTailAtARollKeepsTheEmptySegment(t *testing.T) {
	opts := Options{SegmentSizeBytes: 4096, IndexIntervalBytes: 1024, RollFullAtOpen: true}
	common := []logStep{{time: 100}, {time: 101}, {time: 102}} // fills segment 0: rolls at 9
	cutDir, onlyDir := t.TempDir(), t.TempDir()
	cut, only := openLog(t, cutDir, opts), openLog(t, onlyDir, opts)
	defer cut.Close()
	defer only.Close()
	runSteps(t, cut, common)
	runSteps(t, only, common)
	at := only.NextOffset()
	if _, err := os.Stat(filepath.Join(onlyDir, segmentBaseName(at)+logSuffix)); err != nil {
		t.Fatalf("the test expects segment 0 full and a roll at %d: %v", at, err)
	}
	runSteps(t, cut, []logStep{{time: 200}})
	if err := cut.CutTail(at); err != nil {
		t.Fatalf("CutTail(%d): %v", at, err)
	}
	sameSegmentFiles(t, cutDir, onlyDir)
}

// TestCutTailKeepsRotBelowTheCutAsDamage: the records a cut keeps are the
// caller's applied ones. Rot in the last kept batch, at the segment's end
// after the cut, is set apart as damage (repaired later with a peer's
// copy), never cut as a torn tail with its offsets skipped as lost
// (whole-node simulator seed 47745: a replica lost a committed batch its
// peers kept, and its files differed from theirs).
func TestCutTailKeepsRotBelowTheCutAsDamage(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{ServeAroundSealedDamage: true, RollFullAtOpen: true})
	defer l.Close()
	var bases []uint64
	var positions []uint64
	for i := 0; i < 4; i++ {
		bases = append(bases, l.NextOffset())
		loc, err := l.Append(makeBatch(t, l.NextOffset(), 3, 200, uint64(1000+i)))
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, loc.Position)
	}
	// A payload byte of the third batch rots on disk under the open log.
	flipByteInPlace(t, filepath.Join(dir, segmentBaseName(0)+logSuffix), int64(positions[2]+wire.BatchHeaderSize+60))
	if err := l.CutTail(bases[3]); err != nil {
		t.Fatalf("CutTail(%d): %v", bases[3], err)
	}
	if got := l.NextOffset(); got != bases[3] {
		t.Fatalf("after the cut the log continues at %d, want %d (the rotted batch kept as damage)", got, bases[3])
	}
	damaged := l.DamagedRanges()
	if len(damaged) != 1 || damaged[0].FirstOffset != bases[2] || damaged[0].EndOffset != bases[3] {
		t.Fatalf("damaged ranges %+v, want the rotted batch [%d, %d)", damaged, bases[2], bases[3])
	}
	if lost, _ := filepath.Glob(filepath.Join(dir, "*"+lostSuffix)); len(lost) != 0 {
		t.Fatalf("the cut recorded a hole: %v", lost)
	}
}
