// Package vfstest is what the seeded power-loss tests of the storage
// packages share (journal/, partitions/): the seed selection flags and
// runner, and the vfs.Mem coverage counters. Test code only.
package vfstest

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

// A plain `go test` runs each power-loss test for -powerloss.budget;
// `-powerloss.seeds=N` (or LODESTREAM_POWERLOSS_SEEDS=N) runs N seeds,
// `-powerloss.seed=S` one.
var (
	seeds  = flag.Int("powerloss.seeds", 0, "seeds per power-loss test (0: as many as fit in -powerloss.budget; env LODESTREAM_POWERLOSS_SEEDS)")
	first  = flag.Uint64("powerloss.first", 1, "first seed of the power-loss tests")
	seed   = flag.Uint64("powerloss.seed", 0, "run only this seed of the power-loss tests")
	budget = flag.Duration("powerloss.budget", 2*time.Second, "time per power-loss test when no seed count is given")
)

// ForSeeds runs body over the selected seeds, failing with a repro line
// (for the package at pkgPath, e.g. "./journal/") on the first error; it
// logs how many seeds ran and the coverage the bodies counted in cov.
func ForSeeds(t *testing.T, pkgPath string, body func(seed uint64, cov map[string]int) error) {
	t.Helper()
	n := *seeds
	if v := os.Getenv("LODESTREAM_POWERLOSS_SEEDS"); n == 0 && v != "" {
		n, _ = strconv.Atoi(v)
	}
	from := *first
	if *seed != 0 {
		from, n = *seed, 1
	}
	cov := map[string]int{}
	deadline := time.Now().Add(*budget)
	ran := 0
	for s := from; ; s++ {
		if (n > 0 && ran >= n) || (n == 0 && ran > 0 && time.Now().After(deadline)) {
			break
		}
		if err := body(s, cov); err != nil {
			t.Fatalf("seed %d: %v\nrepro: go test %s -run '^%s$' -powerloss.seed=%d -v", s, err, pkgPath, t.Name(), s)
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
	t.Logf("%d seeds (%d..%d):%s", ran, from, from+uint64(ran)-1, b.String())
}

// AddMemStats adds a vfs.Mem's fault and crash counters to cov.
func AddMemStats(cov map[string]int, st vfs.MemStats) {
	cov["crashes"] += st.Crashes
	cov["writes_kept"] += st.WritesKept
	cov["writes_torn"] += st.WritesTorn
	cov["writes_lost"] += st.WritesLost
	cov["dirops_lost"] += st.DirOpsLost
	cov["sync_failures"] += st.SyncFailures
	cov["enospc"] += st.NoSpace
	cov["flips"] += st.Flips
}

// OneSeed reports whether -powerloss.seed picked a single seed (a repro:
// tests may then trace what they do).
func OneSeed() bool { return *seed != 0 }
