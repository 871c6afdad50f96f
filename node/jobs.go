package node

import (
	"context"
	"sync"
	"time"
)

// backgroundJob is one of the node's periodic jobs: a step the scheduler
// calls every `every` with the clock's time. Jobs are steps, not loops, so
// a whole-node simulator can run every job of several nodes from its own
// single goroutine on virtual time.
type backgroundJob struct {
	name  string
	every time.Duration
	run   func(ctx context.Context, now time.Time)
}

// jobScheduler runs background jobs until ctx ends and returns when they
// have all stopped.
type jobScheduler interface {
	Run(ctx context.Context, jobs []backgroundJob)
}

// tickerScheduler runs each job on a goroutine of its own, paced by a
// loopClock ticker (production).
type tickerScheduler struct{ clock loopClock }

func (s tickerScheduler) Run(ctx context.Context, jobs []backgroundJob) {
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := s.clock.NewTicker(j.every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C():
					j.run(ctx, now)
				}
			}
		}()
	}
	wg.Wait()
}

// backgroundJobs lists the jobs this node's configuration enables:
// heartbeat eviction, the expired-token cleaner, retention, and (cluster
// mode) the ghost-session sweep.
func (n *Node) backgroundJobs() []backgroundJob {
	var jobs []backgroundJob
	if hb := n.cfg.Heartbeat; hb.Enabled && hb.Interval.Duration > 0 {
		// A connection silent for 1.2 × the interval is stale; checked
		// four times per interval.
		staleAfter := hb.Interval.Duration * 12 / 10
		jobs = append(jobs, backgroundJob{name: "heartbeat-eviction", every: max(hb.Interval.Duration/4, 10*time.Millisecond),
			run: func(_ context.Context, now time.Time) { n.evictStale(now, staleAfter) }})
	}
	if c := n.cfg.PersonalAccessToken.Cleaner; c.Enabled && c.Interval.Duration > 0 {
		jobs = append(jobs, backgroundJob{name: "token-cleaner", every: c.Interval.Duration, run: n.cleanExpiredTokens})
	}
	jobs = append(jobs, backgroundJob{name: "retention", every: retentionInterval,
		run: func(context.Context, time.Time) { n.applyRetention(n.clock.NowMicros()) }})
	if rate := n.cfg.Partition.ScrubBytesPerSecond.Bytes(); rate > 0 {
		var s scrubState
		budget := rate * uint64(scrubInterval) / uint64(time.Second)
		jobs = append(jobs, backgroundJob{name: "scrub", every: scrubInterval,
			run: func(context.Context, time.Time) { n.plane.scrubTurn(&s, budget) }})
	}
	jobs = append(jobs, backgroundJob{name: "partition-reopen", every: reopenRetryMin,
		run: func(_ context.Context, now time.Time) {
			n.plane.retryFailedOpens(now)
			n.plane.clearPartitionsLost()
		}})
	if n.topo.clustered {
		g := newGhostSweeper()
		ghostAfter := 2 * n.cfg.Cluster.HeartbeatTimeout.Duration
		jobs = append(jobs, backgroundJob{name: "ghost-sweep", every: ghostSweepInterval,
			run: func(ctx context.Context, now time.Time) { n.sweepGhosts(ctx, g, now, ghostAfter) }})
		jobs = append(jobs, backgroundJob{name: "partition-leadership", every: leadershipCheckEvery,
			run: func(_ context.Context, now time.Time) { n.logLeadership(now) }})
	}
	return jobs
}
