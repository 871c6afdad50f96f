package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	flagSeeds     = flag.Int("sim.seeds", 10, "TestSimSweep: number of seeds to run")
	flagSeed      = flag.Uint64("sim.seed", 0, "TestSimSweep: run exactly this seed (0: sweep)")
	flagFirst     = flag.Uint64("sim.first", 1, "TestSimSweep: first seed of the sweep")
	flagTicks     = flag.Int("sim.ticks", 0, "override the faulty-phase length in ticks (0: per seed)")
	flagVerbose   = flag.Bool("sim.v", false, "print the event trace of each run")
	flagProfile   = flag.String("sim.profile", "", "reshape every scenario with a named profile (crashy, handover, async, skip, powerloss, powerloss-harsh, storagelost)")
	flagTickClock = flag.Bool("sim.tickclock", false, "withhold the wall clock (SetNow) from the core")
	flagWorkers   = flag.Int("sim.workers", 0, "seeds run in parallel (0: GOMAXPROCS); each run stays single-threaded")
)

// reproLine is the one command that replays a failing seed.
func reproLine(seed uint64) string {
	line := fmt.Sprintf("go test ./consensus/sim/ -run TestSimSweep -sim.seed=%d -sim.v", seed)
	if *flagTicks > 0 {
		line += fmt.Sprintf(" -sim.ticks=%d", *flagTicks)
	}
	if *flagTickClock {
		line += " -sim.tickclock"
	}
	if *flagProfile != "" {
		line += " -sim.profile=" + *flagProfile
	}
	return line
}

type sweepSummary struct {
	seeds, ticks, committed, viewChanges, crashes, acks, violations uint64
	failing                                                         []uint64
	byCheck                                                         map[string]int // failing seeds per first violated check
	cov                                                             Coverage
}

func (s *sweepSummary) add(r Result) {
	s.seeds++
	s.ticks += r.Ticks
	s.committed += r.CommittedOps
	s.viewChanges += r.ViewChanges
	s.crashes += r.Crashes
	s.acks += r.Acks
	s.cov.add(r.Coverage)
	if len(r.Violations) > 0 {
		s.violations += uint64(len(r.Violations))
		s.failing = append(s.failing, r.Seed)
		if s.byCheck == nil {
			s.byCheck = map[string]int{}
		}
		s.byCheck[r.Violations[0].Check]++
	}
}

func (s *sweepSummary) String() string {
	checks := make([]string, 0, len(s.byCheck))
	for k, v := range s.byCheck {
		checks = append(checks, fmt.Sprintf("%s:%d", k, v))
	}
	slices.Sort(checks)
	failing := s.failing
	if len(failing) > 100 {
		failing = failing[:100] // the first hundred are plenty to triage
	}
	c := s.cov
	return fmt.Sprintf("sim sweep: seeds=%d ticks=%d committed_ops=%d view_changes=%d crashes=%d acks=%d violations=%d failing_seeds=%d by_check=%v first_failing=%v\n"+
		"  coverage: restarts=%d crashes_mid_persist=%d torn_records=%d crashes_mid_send=%d state_transfers=%d checkpoints=%d partitions=%d clogs=%d filters=%d dropped=%d duplicated=%d evicted=%d cached_replies=%d abandoned=%d truncations=%d held_readys=%d outdated_dropped=%d skipped_ticks=%d power_losses=%d rack_power_losses=%d page_caches_lost=%d amnesiac_restarts=%d lost_ops=%d\n"+
		"  storage: losses=%d lost_replicas=%d wipes=%d refused=%d over_tolerance=%d lost_restarts=%d rejoins=%d over_tolerance_runs=%d\n"+
		"  delivered: %s",
		s.seeds, s.ticks, s.committed, s.viewChanges, s.crashes, s.acks, s.violations, len(s.failing), checks, failing,
		c.Restarts, c.CrashesMidPersist, c.TornRecords, c.CrashesMidSend, c.StateTransfers, c.Checkpoints, c.Partitions,
		c.Clogs, c.Filters, c.Dropped, c.Duplicated, c.Evicted, c.CachedReplies, c.Abandoned, c.Truncations, c.HeldReadys, c.OutdatedDropped, c.SkippedTicks, c.PowerLosses, c.RackPowerLosses, c.PageCachesLost, c.AmnesiacRestarts, c.LostOps,
		c.StorageLosses, c.StorageLostReplicas, c.StorageWipes, c.StorageLossesRefused, c.StorageLossesOverTolerance, c.StorageLostRestarts, c.StorageLostRejoins, c.StorageOverToleranceRuns,
		c.deliveredString())
}

// runSeeds runs seeds in parallel workers and hands results back in seed
// order. Each run is one goroutine and owns all its state.
func runSeeds(seeds []uint64, opts func(seed uint64) RunOptions, each func(Result)) {
	workers := *flagWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	results := make([]Result, len(seeds))
	done := make([]chan struct{}, len(seeds))
	for i := range done {
		done[i] = make(chan struct{})
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = Run(seeds[i], opts(seeds[i]))
				close(done[i])
			}
		}()
	}
	go func() {
		for i := range seeds {
			next <- i
		}
		close(next)
	}()
	for i := range seeds {
		<-done[i]
		each(results[i])
		results[i] = Result{}
	}
	wg.Wait()
}

// TestSimSweep runs -sim.seeds seeds from -sim.first (or exactly
// -sim.seed) against the real core and fails on any violation, printing
// a one-line command per failing seed.
func TestSimSweep(t *testing.T) {
	var seeds []uint64
	if *flagSeed != 0 {
		seeds = []uint64{*flagSeed}
	} else {
		for i := 0; i < *flagSeeds; i++ {
			seeds = append(seeds, *flagFirst+uint64(i))
		}
	}
	var profile func(*Scenario)
	if *flagProfile != "" {
		var ok bool
		if profile, ok = Profiles[*flagProfile]; !ok {
			t.Fatalf("unknown -sim.profile %q", *flagProfile)
		}
	}
	opts := func(uint64) RunOptions {
		o := RunOptions{Factory: CoreFactory(), FaultTicks: *flagTicks, TickClock: *flagTickClock, Mutate: profile}
		if *flagVerbose && len(seeds) == 1 {
			o.Verbose = os.Stdout
		}
		return o
	}
	start := time.Now()
	var sum sweepSummary
	runSeeds(seeds, opts, func(r Result) {
		sum.add(r)
		if len(r.Violations) == 0 {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "seed %d: %d violation(s) (%s)\n", r.Seed, len(r.Violations), r.Scenario)
		for i, v := range r.Violations {
			if i == 5 {
				fmt.Fprintf(&b, "  ...\n")
				break
			}
			fmt.Fprintf(&b, "  %s\n", v)
		}
		fmt.Fprintf(&b, "reproduce: %s", reproLine(r.Seed))
		t.Error(b.String())
	})
	line := fmt.Sprintf("%s elapsed=%s", &sum, time.Since(start).Round(time.Millisecond))
	t.Log(line)
	fmt.Println(line)
}

// TestSimDeterministic: the same seed gives the same event trace.
func TestSimDeterministic(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		a := Run(seed, RunOptions{Factory: CoreFactory(), FaultTicks: 1500})
		b := Run(seed, RunOptions{Factory: CoreFactory(), FaultTicks: 1500})
		if a.TraceHash != b.TraceHash || a.Events != b.Events || a.Ticks != b.Ticks {
			t.Fatalf("seed %d: trace %x/%d events/%d ticks, then %x/%d/%d", seed, a.TraceHash, a.Events, a.Ticks, b.TraceHash, b.Events, b.Ticks)
		}
		if a.Events < 100 {
			t.Fatalf("seed %d: only %d events traced; the hash compares nothing", seed, a.Events)
		}
	}
	// Profiles whose faults draw from the run's PRNG on paths of their
	// own: the same seed still replays the same trace, faults included.
	for _, pc := range []struct {
		profile string
		seeds   []uint64
	}{{"storagelost", []uint64{1, 2, 5}}, {"storagelost-harsh", []uint64{2}}} {
		for _, seed := range pc.seeds {
			opts := RunOptions{Factory: CoreFactory(), FaultTicks: 1500, Mutate: Profiles[pc.profile]}
			a, b := Run(seed, opts), Run(seed, opts)
			if a.TraceHash != b.TraceHash || a.Events != b.Events || a.Ticks != b.Ticks || a.Coverage != b.Coverage {
				t.Fatalf("%s seed %d: trace %x/%d events/%d ticks, then %x/%d/%d", pc.profile, seed, a.TraceHash, a.Events, a.Ticks, b.TraceHash, b.Events, b.Ticks)
			}
			if a.Coverage.StorageLostRestarts == 0 {
				t.Fatalf("%s seed %d: no restart after a storage loss; the hash does not cover the fault", pc.profile, seed)
			}
		}
	}
}
