package node

import "time"

// loopClock is how an event loop reads the wall clock and paces its 10 ms
// tick. Production uses the system clock; a whole-node deterministic
// simulator supplies a virtual one, so several nodes can run in one
// process under one scheduler (issue: whole-node simulation).
type loopClock interface {
	NowMicros() uint64
	NewTicker(d time.Duration) loopTicker
}

// loopTicker is the part of time.Ticker a loop uses.
type loopTicker interface {
	C() <-chan time.Time
	Stop()
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) NowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

func (systemClock) NewTicker(d time.Duration) loopTicker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (s systemTicker) C() <-chan time.Time { return s.t.C }
func (s systemTicker) Stop()               { s.t.Stop() }
