package sim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// regressionSeed is one line of testdata/regression_seeds.txt.
type regressionSeed struct {
	seed      uint64
	profile   string
	tickClock bool
	ticks     int
	line      int
}

func (s regressionSeed) String() string {
	out := fmt.Sprintf("go test ./consensus/sim/ -run TestSimSweep -sim.seed=%d -sim.v", s.seed)
	if s.profile != "" {
		out += " -sim.profile=" + s.profile
	}
	if s.tickClock {
		out += " -sim.tickclock"
	}
	if s.ticks > 0 {
		out += fmt.Sprintf(" -sim.ticks=%d", s.ticks)
	}
	return out
}

func loadRegressionSeeds(path string) ([]regressionSeed, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("regression seeds: %w", err)
	}
	defer f.Close()
	var out []regressionSeed
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		seed, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || seed == 0 {
			return nil, fmt.Errorf("%s:%d: seed %q is not a positive integer", path, n, fields[0])
		}
		s := regressionSeed{seed: seed, line: n}
		for _, opt := range fields[1:] {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "profile":
				if _, ok := Profiles[v]; !ok {
					return nil, fmt.Errorf("%s:%d: unknown profile %q", path, n, v)
				}
				s.profile = v
			case "tickclock":
				s.tickClock = true
			case "ticks":
				t, err := strconv.Atoi(v)
				if err != nil || t <= 0 {
					return nil, fmt.Errorf("%s:%d: ticks %q is not a positive integer", path, n, v)
				}
				s.ticks = t
			default:
				return nil, fmt.Errorf("%s:%d: unknown option %q", path, n, opt)
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// TestSimRegressions replays every seed that ever failed
// (testdata/regression_seeds.txt): a fixed range only proves that range,
// but a seed that once broke the core must never break it again.
func TestSimRegressions(t *testing.T) {
	seeds, err := loadRegressionSeeds("testdata/regression_seeds.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) == 0 {
		t.Fatal("no regression seeds")
	}
	for _, s := range seeds {
		opts := RunOptions{Factory: CoreFactory(), FaultTicks: s.ticks, TickClock: s.tickClock}
		if s.profile != "" {
			opts.Mutate = Profiles[s.profile]
		}
		r := Run(s.seed, opts)
		if len(r.Violations) > 0 {
			t.Errorf("regression seed %d (line %d) fails again: %s\nreproduce: %s", s.seed, s.line, r.Violations[0], s)
		}
	}
}
