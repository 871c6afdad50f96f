package node

import (
	"flag"
	"testing"
)

// make sim-meta SEEDS=N runs a sweep; a failing seed prints its repro.
var (
	metaSimSeeds = flag.Int("metasim.seeds", 6, "seeds of the metadata simulator (TestMetaSim)")
	metaSimFirst = flag.Uint64("metasim.first", 1, "first seed of TestMetaSim")
	metaSimSteps = flag.Uint64("metasim.steps", 20_000, "faulty steps (1 ms of virtual time each) per seed")
	// metaSimEveryFault: issue 13 point 3 counts seeds with crash, storage
	// and network faults all enabled; a third of the seeds draw no
	// crashes, and most draw no storage fault. Skipped seeds cost nothing,
	// and every seed keeps its number and scenario (regression seeds stay
	// valid).
	metaSimEveryFault   = flag.Bool("metasim.everyfault", false, "run only the seeds whose scenario enables crash, storage and network faults (skip the others)")
	metaSimOnlyMessages = flag.Bool("metasim.messages", false, "run only the partitions seeds (partition planes and messages; skip metadata-only seeds)")
)

// metaSimHealSteps bounds the run after the heal (60 s of virtual time).
const metaSimHealSteps = 60_000

// TestMetaSim runs the metadata simulator over a range of seeds.
func TestMetaSim(t *testing.T) {
	var total metaSimStats
	clean, skipped := 0, 0
	for seed := *metaSimFirst; seed < *metaSimFirst+uint64(*metaSimSeeds); seed++ {
		if sc, _, _ := metaScenarioOf(seed); (*metaSimEveryFault && !sc.everyFaultKind()) || (*metaSimOnlyMessages && !sc.partitions) {
			skipped++
			continue
		}
		w, err := newMetaSimWorld(seed, metaSimBreakage{})
		if err == nil {
			err = w.run(*metaSimSteps, metaSimHealSteps)
		}
		if err != nil {
			t.Errorf("seed %d (%+v): %v\nrepro: go test ./node/ -run 'TestMetaSim$' -metasim.first=%d -metasim.seeds=1 -metasim.steps=%d -v",
				seed, w.scenario(), err, seed, *metaSimSteps)
			continue
		}
		total.add(w.stats)
		clean++
		if testing.Verbose() {
			t.Logf("seed %d: %+v", seed, w.stats)
		}
	}
	t.Logf("total over the %d clean seeds of %d (%d skipped by -metasim.everyfault or -metasim.messages): %+v",
		clean, *metaSimSeeds, skipped, total)
}

func (w *metaSimWorld) scenario() any {
	if w == nil {
		return nil
	}
	return w.sc
}

func (s *metaSimStats) add(o metaSimStats) {
	s.Steps += o.Steps
	s.Ticks += o.Ticks
	s.Crashes += o.Crashes
	s.PowerLosses += o.PowerLosses
	s.Partitions += o.Partitions
	s.FramesSent += o.FramesSent
	s.FramesDropped += o.FramesDropped
	s.Proposals += o.Proposals
	s.Committed += o.Committed
	s.Retries += o.Retries
	s.Ambiguous += o.Ambiguous
	s.Evictions += o.Evictions
	s.Registers += o.Registers
	s.Applies += o.Applies
	s.Installs += o.Installs
	s.Checkpoints += o.Checkpoints
	s.FencedSteps += o.FencedSteps
	s.Wedged += o.Wedged
	s.WALsSetAside += o.WALsSetAside
	s.Wipes += o.Wipes
	s.LostRejoins += o.LostRejoins
	s.BitRot += o.BitRot
	s.PrimaryGone += o.PrimaryGone
	s.Reopens += o.Reopens
	s.PartitionOpens += o.PartitionOpens
	s.PartitionsAtEnd += o.PartitionsAtEnd
	s.BeyondBudget += o.BeyondBudget
	s.StalledBeyondBudget += o.StalledBeyondBudget
	s.Messages.add(o.Messages)
}

// TestMetaSimIsDeterministic: the same seed gives the same trace.
func TestMetaSimIsDeterministic(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine, about 5 s: not under -race")
	}
	for _, seed := range []uint64{2, 3, 64, 5063, 10174} { // 5063 and 10174: partition planes, faults
		hash := func() (uint64, uint64) {
			w, err := newMetaSimWorld(seed, metaSimBreakage{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.run(20_000, metaSimHealSteps); err != nil {
				t.Fatal(err)
			}
			return w.trace.sum(), w.trace.n
		}
		h1, n1 := hash()
		h2, n2 := hash()
		if h1 != h2 || n1 != n2 {
			t.Fatalf("seed %d gave traces %x (%d events) and %x (%d events)", seed, h1, n1, h2, n2)
		}
		t.Logf("seed %d: trace %x, %d events", seed, h1, n1)
	}
}

// metaSimRegressionSeeds: every seed the metadata simulator failed
// (docs/simulator.md, "Metadata simulator"), replayed at the sweep's length.
var metaSimRegressionSeeds = []uint64{62, 64, 97, 102, 136, 193, 218, 222, 267, 286, 291, 300, 5063, 10516, 11509, 11542, 16313, 17037, 18092, 24670, 27549, 33332, 34207, 37528, 47118, 47430, 47846, 59820, 74876, 82965, 125156, 130217}

func TestMetaSimRegressionSeeds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a few seconds, one goroutine: not under -short or -race")
	}
	for _, seed := range metaSimRegressionSeeds {
		w, err := newMetaSimWorld(seed, metaSimBreakage{})
		if err == nil {
			err = w.run(100_000, metaSimHealSteps)
		}
		if err != nil {
			t.Errorf("seed %d (%+v): %v\nrepro: go test ./node/ -run 'TestMetaSim$' -metasim.first=%d -metasim.seeds=1 -metasim.steps=100000 -v",
				seed, w.scenario(), err, seed)
		}
	}
}
