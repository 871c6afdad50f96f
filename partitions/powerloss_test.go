package partitions

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/vfs"
)

// Power-loss tests: a partition log on a vfs.Mem, driven by a seeded workload (appends, syncs,
// consumer offsets, retention, purge), with the power cut at a random file-system operation (so
// inside an append, a roll, a reservation, a rename...), faults drawn from the seed, then Crash (or a
// process crash, or a clean close) and a reopen checked against a model of what was written and what
// was promised. Same convention as journal/: a plain `go test` runs each for -powerloss.budget;
// `-powerloss.seeds=N` (or LODESTREAM_POWERLOSS_SEEDS=N) runs N seeds, `-powerloss.seed=S` one.
var (
	powerLossSeeds  = flag.Int("powerloss.seeds", 0, "seeds per power-loss test (0: as many as fit in -powerloss.budget; env LODESTREAM_POWERLOSS_SEEDS)")
	powerLossFirst  = flag.Uint64("powerloss.first", 1, "first seed of the power-loss tests")
	powerLossSeed   = flag.Uint64("powerloss.seed", 0, "run only this seed of the power-loss tests")
	powerLossBudget = flag.Duration("powerloss.budget", 2*time.Second, "time per power-loss test when no seed count is given")
)

// forSeeds runs body over the selected seeds, failing with a repro line on the first error; it logs
// how many seeds ran and the coverage the bodies counted in cov.
func forSeeds(t *testing.T, body func(seed uint64, cov map[string]int) error) {
	t.Helper()
	n := *powerLossSeeds
	if v := os.Getenv("LODESTREAM_POWERLOSS_SEEDS"); n == 0 && v != "" {
		n, _ = strconv.Atoi(v)
	}
	first := *powerLossFirst
	if *powerLossSeed != 0 {
		first, n = *powerLossSeed, 1
	}
	cov := map[string]int{}
	deadline := time.Now().Add(*powerLossBudget)
	ran := 0
	for seed := first; ; seed++ {
		if (n > 0 && ran >= n) || (n == 0 && ran > 0 && time.Now().After(deadline)) {
			break
		}
		if err := body(seed, cov); err != nil {
			t.Fatalf("seed %d: %v\nrepro: go test ./partitions/ -run '^%s$' -powerloss.seed=%d -v", seed, err, t.Name(), seed)
		}
		ran++
	}
	keys := make([]string, 0, len(cov))
	for k := range cov {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, cov[k])
	}
	t.Logf("%d seeds (%d..%d):%s", ran, first, first+uint64(ran)-1, b.String())
}

func addMemStats(cov map[string]int, st vfs.MemStats) {
	cov["crashes"] += st.Crashes
	cov["writes_kept"] += st.WritesKept
	cov["writes_torn"] += st.WritesTorn
	cov["writes_lost"] += st.WritesLost
	cov["dirops_lost"] += st.DirOpsLost
	cov["sync_failures"] += st.SyncFailures
	cov["enospc"] += st.NoSpace
	cov["flips"] += st.Flips
}
