package node

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

func TestPeerHasHistory(t *testing.T) {
	for _, c := range []struct {
		view          uint32
		op, commitMax uint64
		newborn       bool
		want          bool
	}{
		{0, 0, 0, false, false},
		{0, 0, 0, true, false},
		{1, 0, 0, false, true},
		{0, 1, 0, false, true},
		{0, 0, 1, false, true},
		{0, 3, 0, true, false},  // a newborn primary's unacknowledged prepares
		{29, 1, 0, true, false}, // ...still while it looks for a view it can lead
	} {
		if got := peerHasHistory(c.view, c.op, c.commitMax, c.newborn); got != c.want {
			t.Errorf("peerHasHistory(view %d, op %d, commit %d, newborn %v) = %v, want %v",
				c.view, c.op, c.commitMax, c.newborn, got, c.want)
		}
	}
}

func TestSettleVerdict(t *testing.T) {
	for _, c := range []struct {
		histories, fresh, need int
		want                   peersVerdict
	}{
		{0, 0, 1, peersUndecided},
		{0, 1, 1, peersFresh},
		{0, 1, 2, peersUndecided},
		{1, 1, 1, peersHaveHistory}, // history wins within a round
		{1, 0, 2, peersHaveHistory},
	} {
		if got := settleVerdict(c.histories, c.fresh, c.need); got != c.want {
			t.Errorf("settleVerdict(%d, %d, %d) = %v, want %v", c.histories, c.fresh, c.need, got, c.want)
		}
	}
}

// TestNewbornPrimaryIsFreshUntilItCommits: replica 0 of three joined a
// new cluster (its settle found fresh peers) and prepares a client's
// first op before any backup runs. Its status must still read as fresh to
// the peers that are settling, else both would decide their storage was
// lost and the new cluster would never have a quorum; once the op
// commits it is history.
func TestNewbornPrimaryIsFreshUntilItCommits(t *testing.T) {
	const n = 3
	bus := &memBus{drivers: make([]atomic.Pointer[driver], n), down: make([]atomic.Bool, n)}
	dir := t.TempDir()
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	start := func(i int, newborn bool) *driver {
		d, store := newMemBusDriver(t, filepath.Join(dir, fmt.Sprint(i)), uint8(i), n, bus, &listApp{})
		d.newborn = newborn
		bus.drivers[i].Store(d)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.run(ctx) }()
		stops = append(stops, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
			store.Close()
		})
		return d
	}
	waitPosition := func(d *driver, what string, ok func(view uint32, op, commitMax uint64, newborn bool) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if ok(d.position()) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		view, op, commitMax, newborn := d.position()
		t.Fatalf("%s: position view %d op %d commit %d newborn %v", what, view, op, commitMax, newborn)
	}

	primary := start(0, true)
	proposed := make(chan outcome, 1)
	go func() {
		proposed <- primary.propose(context.Background(), consensus.Request{Client: consensus.Uint128{Lo: 7}, Operation: consensus.OperationRegister}, nil)
	}()
	waitPosition(primary, "the newborn primary prepares op 1", func(_ uint32, op, _ uint64, _ bool) bool { return op == 1 })
	if view, op, commitMax, newborn := primary.position(); !newborn || commitMax != 0 || peerHasHistory(view, op, commitMax, newborn) {
		t.Fatalf("newborn primary with an unacknowledged op: view %d op %d commit %d newborn %v; want fresh to settling peers",
			view, op, commitMax, newborn)
	}
	start(1, true) // backups settle fresh too
	start(2, true)
	if out := <-proposed; out.kind != consensus.ReplyCommitted || out.op != 1 {
		t.Fatalf("op 1 once the backups joined: %+v", out)
	}
	waitPosition(primary, "the primary is history once op 1 committed", func(view uint32, op, commitMax uint64, newborn bool) bool {
		return peerHasHistory(view, op, commitMax, newborn)
	})
	backup := bus.drivers[1].Load()
	waitPosition(backup, "a newborn backup holding op 1 is history", func(view uint32, op, commitMax uint64, newborn bool) bool {
		return !newborn && peerHasHistory(view, op, commitMax, newborn)
	})
}
