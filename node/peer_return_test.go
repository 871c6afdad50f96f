package node

import "testing"

// TestPeerReturnWakesOnAReturnedConnection: the resting groups wake when a
// peer's connection was down at the last check and is up now, and only
// then (not while it stays up or down, not for the node itself).
func TestPeerReturnWakesOnAReturnedConnection(t *testing.T) {
	up := []bool{true, false, false}
	wakes := 0
	w := newPeerReturn(func(r uint8) bool { return up[r] }, 0, 3, func() { wakes++ })
	steps := []struct {
		up1, up2 bool
		want     int
	}{
		{false, false, 0}, // nothing up yet (self is not a peer)
		{true, false, 1},  // peer 1 connects
		{true, false, 1},  // stays up
		{false, false, 1}, // drops
		{false, false, 1},
		{true, true, 2}, // both return at once: one wake-up
		{true, true, 2},
	}
	for i, s := range steps {
		up[1], up[2] = s.up1, s.up2
		w.check()
		if wakes != s.want {
			t.Fatalf("check %d (peer 1 %v, peer 2 %v): %d wake-ups, want %d", i, s.up1, s.up2, wakes, s.want)
		}
	}
}
