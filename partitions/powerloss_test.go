package partitions

import (
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/vfs/vfstest"
)

// Power-loss tests: a partition log on a vfs.Mem, driven by a seeded workload (appends, syncs,
// consumer offsets, retention, purge), with the power cut at a random file-system operation (so
// inside an append, a roll, a reservation, a rename...), faults drawn from the seed, then Crash (or a
// process crash, or a clean close) and a reopen checked against a model of what was written and what
// was promised. Seeds are chosen as in journal/ (vfstest.ForSeeds).
func forSeeds(t *testing.T, body func(seed uint64, cov map[string]int) error) {
	t.Helper()
	vfstest.ForSeeds(t, "./partitions/", body)
}

func addMemStats(cov map[string]int, st vfs.MemStats) { vfstest.AddMemStats(cov, st) }
