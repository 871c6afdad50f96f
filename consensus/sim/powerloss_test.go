package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// amnesiaIgnoredSeedsMax bounds the search for the broken variant below.
const amnesiaIgnoredSeedsMax = 60

// forgetfulFactory is the real core with power-loss amnesia switched off:
// a replica that lost unsynced acknowledged prepares restarts as if its
// log were complete (the core before Restored.Amnesia).
func forgetfulFactory() Factory {
	f := CoreFactory()
	restart := f.Restart
	f.Restart = func(cfg consensus.Config, st consensus.Restored) (consensus.Group, error) {
		st.Amnesia = false
		if st.Superblock != nil {
			sb := *st.Superblock
			sb.Amnesiac = false
			st.Superblock = &sb
		}
		return restart(cfg, st)
	}
	return f
}

// TestCheckersCatchIgnoredAmnesia: with amnesia ignored, one power loss
// and ordinary crashes lose committed ops; the safety checkers must say
// so within a bounded number of seeds. The real core passes the same
// seeds.
func TestCheckersCatchIgnoredAmnesia(t *testing.T) {
	for seed := uint64(1); seed <= amnesiaIgnoredSeedsMax; seed++ {
		r := Run(seed, RunOptions{Factory: forgetfulFactory(), FaultTicks: 3000, Mutate: Profiles["powerloss-harsh"]})
		for _, v := range r.Violations {
			if safetyChecks[v.Check] {
				t.Logf("seed %d (n=%d): caught %s", seed, r.Scenario.Replicas, v)
				if ok := Run(seed, RunOptions{Factory: CoreFactory(), FaultTicks: 3000, Mutate: Profiles["powerloss-harsh"]}); len(ok.Violations) > 0 {
					t.Fatalf("seed %d fails on the real core too: %s", seed, ok.Violations[0])
				}
				return
			}
		}
	}
	t.Fatalf("amnesia ignored for %d seeds and no committed op was lost: the powerloss checkers do not bite", amnesiaIgnoredSeedsMax)
}
