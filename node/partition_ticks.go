package node

import (
	"math"

	"github.com/lodestream/lodestream/consensus"
)

// Quiet ticks are skipped (issue 8 point 8). A group only acts on a tick
// when one of its timers is due (consensus NextTimerTick); every other
// tick just counts. With 10,000 groups awake (all of them, after the node
// leading them failed) ticking each every 10 ms is what the node spends
// its CPU on, bound by cache misses on the groups' state. So the shard
// gives a group its ticks only when they are due (timerAt, in shard
// ticks), in one AdvanceTicks that is exactly that many Ticks, and brings
// it up to date (catchUp) before anything else is done to it, since
// Step, Propose, Advance and the rest arm timers relative to its tick
// count; after each of those it reschedules the group. A resting group's
// ticks stay frozen (partition_rest.go): it owes none when it wakes.

// tickSkipper is a group whose quiet ticks may be skipped (the core; test
// fakes without it tick every time).
type tickSkipper interface {
	Ticks() uint64
	NextTimerTick() uint64
	AdvanceTicks(n uint64)
}

// startTicking (shard goroutine) makes e tick from now on: a group handed
// to the shard or woken from rest owes no ticks and runs at the next tick.
func (s *partitionShard) startTicking(e *partitionEntry) {
	e.tickedAt, e.timerAt = s.tickNo, s.tickNo+1
}

// catchUp gives an awake group the ticks it is owed before something else
// is done to it.
func (s *partitionShard) catchUp(e *partitionEntry) {
	if e.resting || e.tickedAt >= s.tickNo {
		return
	}
	n := s.tickNo - e.tickedAt
	e.tickedAt = s.tickNo
	e.group.SetNow(s.clock.NowMicros())
	if sk, ok := e.group.(tickSkipper); ok {
		sk.AdvanceTicks(n)
		return
	}
	for ; n > 0; n-- {
		e.group.Tick()
	}
}

// schedule sets the shard tick at which e must run next: its next timer,
// or sooner when its quiet count reaches a point where it may rest or must
// probe its primary (noteQuiet). Without a tick skipper: the next tick.
func (s *partitionShard) schedule(e *partitionEntry) {
	sk, ok := e.group.(tickSkipper)
	if !ok || e.resting {
		e.timerAt = s.tickNo + 1
		return
	}
	due := uint64(math.MaxUint64)
	if next := sk.NextTimerTick(); next != consensus.NoTimer {
		due = s.tickNo + max(next-min(next, sk.Ticks()), 1)
	}
	if r := uint64(s.restAfterTicks); r > 0 {
		due = min(due, s.tickNo+r-uint64(e.quietTicks)%r)
	}
	e.timerAt = due
}

// dueNow: e must run at this tick (a timer or its quiet count is due, or
// something the tick itself looks after: a fence, a backlog).
func (s *partitionShard) dueNow(e *partitionEntry) bool {
	return s.tickNo >= e.timerAt || e.fence.fenced() || len(e.backlog) > 0
}
