package node

import (
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// primaryWatch lets a metadata backup suspect its primary as soon as the
// primary's process is gone instead of one heartbeat_timeout later
// (issue 8 point 8: with 10,000 partitions the failover has to fit in
// 2 × heartbeat_timeout, and waiting for the timeout alone spends half of
// that). A process that exits or is killed has its sockets closed by the
// kernel, so the replica bus connection to it drops at once; a live peer
// that lost a connection redials within a round trip (transport/bus
// redials a dropped connection at once). So a connection to the view's
// primary that was up in this view and has stayed down for goneAfter
// means the primary is gone: the backup acts as on its heartbeat timeout
// (consensus SuspectPrimary). A primary that hangs or is cut off keeps
// its connection and is still found by the heartbeat timeout.
//
// The connection must have been seen up in the current view first: at a
// cold start the peers connect in their own time, and that is no failure.
type primaryWatch struct {
	connected func(replica uint8) bool
	replicas  uint32
	goneAfter time.Duration

	view   uint32    // the view watched
	seenUp bool      // the primary's connection was up in that view
	lostAt time.Time // when it was last seen going down; zero while up
}

func newPrimaryWatch(connected func(uint8) bool, replicas int, heartbeatTimeout time.Duration) *primaryWatch {
	return &primaryWatch{connected: connected, replicas: uint32(replicas),
		goneAfter: max(heartbeatTimeout/primaryGoneDivisor, primaryGoneMin)}
}

// primaryGoneDivisor: a lost connection counts as a gone primary after
// heartbeat_timeout / 5 (1 s by default), long enough for a live peer to
// redial many times over.
const (
	primaryGoneDivisor = 5
	primaryGoneMin     = 100 * time.Millisecond
)

// check runs after a tick of g (driver goroutine); true when it made g
// suspect its primary.
func (w *primaryWatch) check(g consensus.Group, now time.Time) bool {
	view := g.View()
	if view != w.view {
		w.view, w.seenUp, w.lostAt = view, false, time.Time{}
	}
	if g.Status() != consensus.StatusNormal || g.IsPrimary() {
		return false
	}
	if w.connected(uint8(view % w.replicas)) {
		w.seenUp, w.lostAt = true, time.Time{}
		return false
	}
	if !w.seenUp {
		return false
	}
	if w.lostAt.IsZero() {
		w.lostAt = now
		return false
	}
	if now.Sub(w.lostAt) < w.goneAfter {
		return false
	}
	w.seenUp, w.lostAt = false, time.Time{} // once per loss
	return g.SuspectPrimary()
}
