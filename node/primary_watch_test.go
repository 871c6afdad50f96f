package node

import (
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// watchedGroup is the part of a group primaryWatch looks at.
type watchedGroup struct {
	consensus.Group
	view      uint32
	status    consensus.Status
	primary   bool
	suspected int
}

func (g *watchedGroup) View() uint32             { return g.view }
func (g *watchedGroup) Status() consensus.Status { return g.status }
func (g *watchedGroup) IsPrimary() bool          { return g.primary }
func (g *watchedGroup) SuspectPrimary() bool     { g.suspected++; return true }

func TestPrimaryWatchSuspectsOnlyALostConnection(t *testing.T) {
	up := map[uint8]bool{}
	w := newPrimaryWatch(func(r uint8) bool { return up[r] }, 3, 5*time.Second)
	if w.goneAfter != time.Second {
		t.Fatalf("goneAfter = %s, want heartbeat_timeout/5 = 1s", w.goneAfter)
	}
	g := &watchedGroup{view: 3, status: consensus.StatusNormal} // primary is replica 0
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	// Cold start: never connected in this view, never suspected.
	for i := 0; i < 50; i++ {
		if w.check(g, at(time.Duration(i)*time.Second)) {
			t.Fatal("suspected a primary never connected in this view")
		}
	}
	up[0] = true
	w.check(g, at(60*time.Second))
	// A short drop that heals within goneAfter is no failure.
	up[0] = false
	w.check(g, at(61*time.Second))
	if w.check(g, at(61*time.Second+900*time.Millisecond)) {
		t.Fatal("suspected before goneAfter")
	}
	up[0] = true
	w.check(g, at(62*time.Second))
	up[0] = false
	w.check(g, at(63*time.Second))
	if w.check(g, at(63*time.Second+900*time.Millisecond)) {
		t.Fatal("the healed drop's time counted towards the new one")
	}
	if !w.check(g, at(64*time.Second)) || g.suspected != 1 {
		t.Fatalf("not suspected after goneAfter (suspected %d)", g.suspected)
	}
	// Once per loss.
	if w.check(g, at(70*time.Second)) || g.suspected != 1 {
		t.Fatal("suspected twice for one loss")
	}
	// A new view starts over: its primary (replica 1) must be seen up first.
	g.view = 4
	if w.check(g, at(80*time.Second)) || w.check(g, at(90*time.Second)) {
		t.Fatal("suspected the new view's primary, never seen up")
	}
	// Not a Normal backup: nothing to suspect.
	up[1] = true
	w.check(g, at(91*time.Second))
	up[1] = false
	g.status = consensus.StatusViewChange
	w.check(g, at(92*time.Second))
	if w.check(g, at(99*time.Second)) {
		t.Fatal("suspected during a view change")
	}
	g.status, g.primary = consensus.StatusNormal, true
	if w.check(g, at(120*time.Second)) || g.suspected != 1 {
		t.Fatal("the primary suspected itself")
	}
}
