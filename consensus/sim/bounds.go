package sim

// Liveness and convergence bounds, derived from the scenario's own timing
// so that a failure means a bug, not a tight bound (docs/simulator.md,
// "Liveness bounds"). Each term is a worst case the configuration allows;
// none is tuned to a seed.

// livenessBaseTicks: after the heal every client commits a request issued
// after it within this many ticks, plus catchUpTicks of the backlog.
//   - a restarted replica probes RequestStartView every RequestStartView
//     ticks up to ViewProbeAttemptsMax times before it elects;
//   - a dead or partitioned primary is noticed after HeartbeatTimeout;
//   - a view change that cannot finish escalates after ViewChangeStatus,
//     at most once per replica before the primary index wraps around;
//   - a client whose request was lost before the heal waits out its
//     response budget (clientResponseBudgetTicks) before it gives up and
//     issues a new request.
//
// The floor is the historic 3,000 ticks (30 s at 10 ms a tick).
func (s Scenario) livenessBaseTicks() uint64 {
	t := s.Timing
	derived := uint64(t.RequestStartView)*uint64(t.ViewProbeAttemptsMax) +
		uint64(t.HeartbeatTimeout) +
		uint64(s.Replicas)*uint64(t.ViewChangeStatus) +
		uint64(t.CommitBroadcast)
	return max(uint64(s.LivenessTicks), derived)
}

// convergenceBaseTicks: once the workload settles every replica holds and
// has applied every committed op within this many ticks, plus catchUpTicks
// of the backlog: a backup learns the commit from the next heartbeat
// (CommitBroadcast), a gap waits out its debounce (RepairGapDebounce,
// floored at 50 by the core) and a stalled session its retry
// (RepairRetry); a replica still Recovering probes for up to
// RequestStartView x ViewProbeAttemptsMax.
func (s Scenario) convergenceBaseTicks() uint64 {
	t := s.Timing
	derived := uint64(t.CommitBroadcast) + uint64(max(t.RepairGapDebounce, 50)) + 2*uint64(t.RepairRetry) +
		uint64(t.RequestStartView)*uint64(t.ViewProbeAttemptsMax)
	return max(uint64(s.ConvergenceTicks), derived)
}

// repairRoundTripTicks: one RequestPrepares out and its chunk back, with
// twice the mean network latency each way (latency is the minimum plus an
// exponential part of the configured mean) and a tick of processing at each
// end.
func (s Scenario) repairRoundTripTicks() uint64 {
	return 2 * uint64(s.Network.LatencyMinTicks+2*s.Network.LatencyMeanTicks+1)
}

// catchUpTicks: repair moves at most RepairChunkMax ops per round trip (one
// session, one chunk in flight: spec §3.9), so a replica backlog ops behind
// needs ceil(backlog / chunk) round trips. With the default chunk of 128 it
// is a round trip or two; with a chunk of 1 it is one round trip per op.
func (s Scenario) catchUpTicks(backlog uint64) uint64 {
	chunk := uint64(max(s.Timing.RepairChunkMax, 1))
	return (backlog + chunk - 1) / chunk * s.repairRoundTripTicks()
}

// backlog is the largest distance, over groups and live replicas, between
// the cluster's highest committed op and what a replica has applied.
func (w *world) backlog() uint64 {
	var worst uint64
	for gi := range w.checkers {
		top := w.checkers[gi].maxCommitted()
		for _, nd := range w.nodes {
			d := nd.replicas[gi]
			if !nd.up || d.g == nil {
				worst = max(worst, top)
				continue
			}
			if c := d.g.CommitMin(); c < top {
				worst = max(worst, top-c)
			}
		}
	}
	return worst
}
