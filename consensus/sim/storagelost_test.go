package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// nackingFactory is the real core without the no-nack rule of lost
// storage (a replica restarted with Restored.StorageLost withholds its
// nacks until its journal holds the log of a view it joined: nackable,
// maybeClearStorageLost). The core has no switch for that rule alone, and
// the simulator must not add one, so this variant drops StorageLost from
// the restart, which ends both of its rules, and restores the other one
// — no election from a Recovering replica, only a primary's StartView
// ends Recovering — as far as a configuration can: the replica probes
// ViewProbeAttemptsMax = 100 times before it elects (10,000 ticks at the
// default RequestStartView of 100, which the test's scenarios keep: no
// run of the test is that long). A wiped replica keeps a zero superblock
// so that it is not taken for a fresh one. What is left is the core
// before the rule: a lost replica nacks the ops it adopted header-only
// from a StartView in this incarnation, although it may have
// acknowledged them before its storage was lost.
func nackingFactory() Factory {
	f := CoreFactory()
	restart := f.Restart
	f.Restart = func(cfg consensus.Config, st consensus.Restored) (consensus.Group, error) {
		if st.StorageLost {
			st.StorageLost = false
			cfg.ViewProbeAttemptsMax = 100
			if st.Superblock == nil {
				st.Superblock = &consensus.VsrState{}
			}
		}
		return restart(cfg, st)
	}
	return f
}

// storageLostNacksSeedsMax bounds the search in
// TestCheckersCatchStorageLostNacks.
const storageLostNacksSeedsMax = 500

// storageLostNackHunt is the storagelost-harsh profile with every crash
// a loss of the journal (no wiped replicas: finding 18, open, is theirs),
// crashes more often, and the default probe cadence (nackingFactory's
// election horizon: 100 probes of 100 ticks).
func storageLostNackHunt(s *Scenario) {
	Profiles["storagelost-harsh"](s)
	s.StorageLossPerCrash = 1
	s.StorageWipeShare = 0
	s.CrashPerTick = 0.005
	s.Timing.RequestStartView = defaultTiming.RequestStartView
}

// TestCheckersCatchStorageLostNacks: with the no-nack rule of lost
// storage switched off (nackingFactory), a replica that lost its journal
// rejoins through a StartView, holds ops it acknowledged before the loss
// only as headers, and nacks them in the next view change; with a
// replica that never held the op it cuts a committed op. The safety
// checkers must say so within a bounded number of seeds, before the
// broken variant's election horizon, and the real core passes that seed.
func TestCheckersCatchStorageLostNacks(t *testing.T) {
	const electionHorizon = 100 * 100 // ticks before nackingFactory's Recovering replica could elect
	for seed := uint64(1); seed <= storageLostNacksSeedsMax; seed++ {
		r := Run(seed, RunOptions{Factory: nackingFactory(), FaultTicks: 3000, Mutate: storageLostNackHunt})
		for _, v := range r.Violations {
			if !safetyChecks[v.Check] {
				continue
			}
			t.Logf("seed %d (n=%d): caught %s", seed, r.Scenario.Replicas, v)
			if v.Tick >= electionHorizon {
				t.Fatalf("seed %d: violation at tick %d, past the election horizon: not the no-nack rule alone", seed, v.Tick)
			}
			if r.Coverage.StorageLostRestarts == 0 {
				t.Fatalf("seed %d: no replica restarted after losing storage", seed)
			}
			if ok := Run(seed, RunOptions{Factory: CoreFactory(), FaultTicks: 3000, Mutate: storageLostNackHunt}); len(ok.Violations) > 0 {
				t.Fatalf("seed %d fails on the real core too: %s", seed, ok.Violations[0])
			}
			return
		}
	}
	t.Fatalf("the no-nack rule of lost storage was off for %d seeds and no committed op was lost: the storagelost checkers do not bite", storageLostNacksSeedsMax)
}

// TestStorageLossKinds: what each kind of loss leaves for the restart,
// and that the lost entries still count for the quorum audit.
func TestStorageLossKinds(t *testing.T) {
	build := func() *storage {
		s := &storage{}
		snap := consensus.Snapshot{Op: 2, Data: []byte("app"), Checksum: consensus.SnapshotChecksum([]byte("app"))}
		rd := consensus.Ready{Snapshot: &snap, Entries: []consensus.Prepare{entry(2, 2), entry(3, 3), entry(4, 4)},
			Superblock: &consensus.VsrState{View: 3, LogView: 2, CommitMax: 3, CheckpointOp: 2, AnchorChecksum: 2}}
		for _, w := range planWrites(&rd) {
			s.apply(w)
		}
		return s
	}
	s := build()
	s.loseJournal()
	st, _ := s.restore()
	if len(st.Entries) != 0 || st.Superblock == nil || st.Superblock.CheckpointOp != 2 || st.Snapshot == nil || st.Snapshot.Op != 2 {
		t.Fatalf("journal loss: restored %d entries, superblock %+v, snapshot %v", len(st.Entries), st.Superblock, st.Snapshot)
	}
	if !s.lostToFault(4, 4) || s.holds(4, 4) || !s.holds(2, 2) {
		t.Fatal("journal loss: op 4 should count as lost after its ack, op 2 stays covered by the snapshot")
	}
	rd := consensus.Ready{Entries: []consensus.Prepare{entry(3, 30)}}
	for _, w := range planWrites(&rd) {
		s.apply(w)
	}
	if st, _ := s.restore(); len(st.Entries) != 1 || st.Entries[0].Header.Checksum != 30 {
		t.Fatalf("journal loss: later appends not kept: %v", ops(st.Entries))
	}

	s = build()
	s.loseJournal()
	s.loseCheckpoint()
	st, _ = s.restore()
	if len(st.Entries) != 0 || st.Snapshot != nil || st.Superblock == nil || st.Superblock.View != 3 ||
		st.Superblock.CheckpointOp != 0 || st.Superblock.AnchorChecksum != 0 {
		t.Fatalf("data loss: restored %d entries, superblock %+v, snapshot %v", len(st.Entries), st.Superblock, st.Snapshot)
	}
	rd = consensus.Ready{Entries: []consensus.Prepare{entry(1, 1), entry(2, 2)}}
	for _, w := range planWrites(&rd) {
		s.apply(w)
	}
	if st, _ := s.restore(); len(st.Entries) != 2 {
		t.Fatalf("data loss: entries from op 1 must be kept (no drain floor left): %v", ops(st.Entries))
	}
}
