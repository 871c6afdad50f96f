package consensus

import "math"

// Skipping quiet ticks (issue 8 point 8). A replica only acts on a tick
// when one of the timers its status consults reaches its deadline; every
// other Tick just counts. A driver with thousands of groups may therefore
// leave a group alone until NextTimerTick and then call AdvanceTicks,
// which is exactly that many calls of Tick: it jumps from deadline to
// deadline and runs Tick at each. Anything else the driver does to the
// group (Step, Propose, Advance, Checkpoint, HandOver, ...) must first
// bring the tick count up to date with AdvanceTicks, since those arm
// timers relative to it, and must then read NextTimerTick again.

// NoTimer is NextTimerTick when no consulted timer is armed.
const NoTimer = math.MaxUint64

// Ticks is the replica's tick count.
func (r *Replica) Ticks() uint64 { return r.ticks }

// NextTimerTick is the tick count at which the next Tick may act: the
// earliest deadline of the timers the replica's status consults (NoTimer
// when none is armed). Every Tick that ends below it only counts.
func (r *Replica) NextTimerTick() uint64 {
	next := uint64(NoTimer)
	arm := func(t *timer) {
		if t.armed && t.deadline < next {
			next = t.deadline
		}
	}
	switch r.status {
	case StatusNormal:
		if r.isPrimaryIndex() {
			if r.logView == r.view {
				arm(&r.commitTimer)
				arm(&r.prepareTimer)
			}
		} else {
			arm(&r.heartbeatTimer)
		}
	case StatusViewChange:
		arm(&r.vc.statusTimer)
		arm(&r.vc.svcTimer)
		arm(&r.vc.dvcTimer)
		arm(&r.vc.rsvTimer)
	case StatusRecovering:
		arm(&r.recovery.probeTimer)
	}
	arm(&r.repair.debounce)
	if r.repair.active {
		arm(&r.repair.retryTimer)
	}
	if r.transfer.stage != transferIdle {
		arm(&r.transfer.timer)
	}
	return next
}

// AdvanceTicks has the effect of n calls of Tick: the ticks that reach no
// deadline are counted in one step, Tick runs at each one that does.
func (r *Replica) AdvanceTicks(n uint64) {
	for n > 0 {
		next := r.NextTimerTick()
		if next == NoTimer || r.ticks+n < next {
			r.ticks += n
			return
		}
		// Count up to the tick before the deadline, then tick into it.
		if skip := next - 1 - r.ticks; next > r.ticks+1 {
			r.ticks += skip
			n -= skip
		}
		r.Tick()
		n--
	}
}
