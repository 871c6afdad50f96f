package consensus

// timer is a one-shot deadline in ticks. The replica owns the tick counter;
// timers only remember when they fire.
type timer struct {
	armed    bool
	deadline uint64
}

func (t *timer) start(now uint64, afterTicks uint64) {
	t.armed = true
	t.deadline = now + max(afterTicks, 1)
}

func (t *timer) stop() { t.armed = false }

// fired reports (once) that the deadline passed; the timer disarms itself.
func (t *timer) fired(now uint64) bool {
	if t.armed && now >= t.deadline {
		t.armed = false
		return true
	}
	return false
}

// backoffTicks is the prepare retransmit wait: b = base x 2^min(attempts,4),
// then b + uniform(0..b) from the seeded PRNG (spec §3.3).
func backoffTicks(rng *prng, baseTicks uint32, attempts uint32) uint64 {
	b := uint64(baseTicks) << min(attempts, 4)
	return b + rng.uniform(b)
}
