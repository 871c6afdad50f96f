package consensus

import (
	"reflect"
	"testing"
)

// TestAdvanceTicksEqualsTicking: AdvanceTicks(n) leaves a replica exactly
// as n calls of Tick do (same tick count, view, status, timers and
// outgoing messages), for a primary whose commit timer fires many times
// and a backup whose heartbeat timeout starts a view change and whose
// view-change timers then retransmit and escalate.
func TestAdvanceTicksEqualsTicking(t *testing.T) {
	for _, id := range []uint8{0, 1} {
		for _, n := range []uint64{1, 7, 49, 50, 51, 499, 500, 501, 1234, 5000} {
			a, err := New(DefaultConfig(id, 3))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(DefaultConfig(id, 3))
			for i := uint64(0); i < n; i++ {
				a.Tick()
			}
			b.AdvanceTicks(n)
			if a.Ticks() != b.Ticks() || a.View() != b.View() || a.Status() != b.Status() || a.NextTimerTick() != b.NextTimerTick() {
				t.Fatalf("replica %d after %d ticks: ticking gives tick %d view %d status %v next %d; AdvanceTicks gives %d %d %v %d",
					id, n, a.Ticks(), a.View(), a.Status(), a.NextTimerTick(), b.Ticks(), b.View(), b.Status(), b.NextTimerTick())
			}
			ra, rb := a.Ready(), b.Ready()
			if !reflect.DeepEqual(ra.Messages, rb.Messages) || !reflect.DeepEqual(ra.Superblock, rb.Superblock) {
				t.Fatalf("replica %d after %d ticks: Readys differ:\n%+v\n%+v", id, n, ra, rb)
			}
		}
	}
}

// TestNextTimerTickIsWhenTickFirstActs: until NextTimerTick a Tick only
// counts (no Ready work appears); at it, the timer acts.
func TestNextTimerTickIsWhenTickFirstActs(t *testing.T) {
	r, err := New(DefaultConfig(1, 3)) // a backup: its heartbeat timeout
	if err != nil {
		t.Fatal(err)
	}
	next := r.NextTimerTick()
	if next == NoTimer || next <= r.Ticks() {
		t.Fatalf("a fresh backup has no pending heartbeat timeout: next %d at tick %d", next, r.Ticks())
	}
	for r.Ticks()+1 < next {
		r.Tick()
		if r.HasReady() {
			t.Fatalf("tick %d (next timer at %d) produced work", r.Ticks(), next)
		}
	}
	r.Tick()
	if r.Status() != StatusViewChange || !r.HasReady() {
		t.Fatalf("at tick %d the heartbeat timeout did not start a view change (status %v)", r.Ticks(), r.Status())
	}
}
