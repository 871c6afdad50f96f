package node

// peerReturn wakes the resting partition groups when a replica bus
// connection comes back (issue 8 point 8; whole-node simulator seed
// 26316). A group rests once its primary broadcast its final commit; a
// backup cut off meanwhile (a network partition, a peer that restarted
// after the others rested) heard none of it and stays in an old view, its
// polls capped at an old commit, until the partition's next write. When a
// connection to a peer returns, every resting group wakes for a few
// commit intervals: primaries broadcast their commit again, which brings
// such a backup up to date, and the groups rest again. A return is rare
// (a restart, a healed partition); a cost of one wake-up per group.
type peerReturn struct {
	connected func(replica uint8) bool
	self      uint8
	up        []bool // each peer's connection, as last seen
	wake      func() // wakes every shard's resting groups
}

func newPeerReturn(connected func(uint8) bool, self uint8, replicas int, wake func()) *peerReturn {
	return &peerReturn{connected: connected, self: self, up: make([]bool, replicas), wake: wake}
}

// check (every tick) wakes the resting groups when a peer's connection
// was down at the last check and is up now.
func (w *peerReturn) check() {
	returned := false
	for r := range w.up {
		if uint8(r) == w.self {
			continue
		}
		c := w.connected(uint8(r))
		returned = returned || (c && !w.up[r])
		w.up[r] = c
	}
	if returned {
		w.wake()
	}
}
