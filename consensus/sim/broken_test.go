package sim

import (
	"strings"
	"testing"
)

// safetyChecks are the checks a minority commit must trip (liveness and
// convergence failures alone would not prove the safety checkers bite).
var safetyChecks = map[string]bool{
	checkAgreement: true, checkCommittedChanged: true, checkApplyOrder: true, checkAckInLog: true,
	checkExactlyOnce: true, checkSnapshot: true, checkTimestamp: true, checkCachedReply: true,
}

// minorityCommitSeedsMax bounds the search: with a replication quorum of 1
// on n = 3 or 5 under partitions, a violation must show within this many
// seeds.
const minorityCommitSeedsMax = 30

// TestCheckersCatchMinorityCommit runs the real core with the testing
// override that lets a primary commit on its own (a minority) and asserts
// that the checkers report it: the quorum audit at the first such commit,
// and, with the audit off, the end-to-end safety checks within a bounded
// number of seeds.
func TestCheckersCatchMinorityCommit(t *testing.T) {
	broken := func(s *Scenario) {
		s.Replicas = 3 + 2*int(s.Seed%2) // 3 or 5
		s.TestingReplicationQuorum = 1
		s.FaultyStorage = make([]bool, s.Replicas)
		s.MaxDown = 1
		s.Network.PartitionProbability = 0.01
		s.Network.UnpartitionProbability = 0.005
		s.Network.PartitionStabilityTicks = 200
		s.ClientsPerGroup = 2
		s.ThinkTicksMax = 5
	}
	audited := Run(1, RunOptions{Factory: CoreFactory(), FaultTicks: 3000, Mutate: broken})
	if len(audited.Violations) == 0 || audited.Violations[0].Check != checkCommitBelowQuorum {
		t.Fatalf("quorum audit did not flag a commit on one replica: %v", audited.Violations)
	}
	t.Logf("audit: %s", audited.Violations[0])
	for seed := uint64(1); seed <= minorityCommitSeedsMax; seed++ {
		r := Run(seed, RunOptions{Factory: CoreFactory(), FaultTicks: 3000, Mutate: broken, SkipQuorumAudit: true})
		for _, v := range r.Violations {
			if safetyChecks[v.Check] {
				t.Logf("seed %d (n=%d): caught %s", seed, r.Scenario.Replicas, v)
				return
			}
			if v.Check == "panic" && strings.Contains(v.Detail, "quorum") {
				t.Fatalf("seed %d: core panicked instead of running the broken variant: %s", seed, v)
			}
		}
	}
	t.Fatalf("a replication quorum of 1 went unnoticed for %d seeds: the safety checkers do not bite", minorityCommitSeedsMax)
}
