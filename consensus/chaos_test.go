package consensus

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestChaos drives small clusters through random message loss, reordering,
// duplication, crashes and restarts (never more than f down at once). The
// harness checks persist-before-send and that applied logs never diverge on
// every Ready; after the faults stop the cluster must converge: every
// replica applies the same ops and a new proposal commits.
func TestChaos(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 8
	}
	for seed := 1; seed <= seeds; seed++ {
		for _, n := range []int{2, 3, 4, 5} {
			t.Run(fmt.Sprintf("n%d_seed%d", n, seed), func(t *testing.T) { runChaos(t, n, uint64(seed)) })
		}
	}
}

var chaosDebug = false

func runChaos(t *testing.T, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	h := newHarness(n, func(c *Config) {
		c.Seed = seed
		c.PrepareQueueDepth = 4
		c.JournalSlots = 64
		c.RepairGapDebounceTicks = 50
	}, t.Fatalf)
	f := (n - 1) / 2
	down := func() int {
		c := 0
		for _, u := range h.up {
			if !u {
				c++
			}
		}
		return c
	}
	proposed := 0
	for step := 0; step < 3000; step++ {
		switch x := rng.IntN(100); {
		case x < 30:
			for i, r := range h.replicas {
				if h.up[i] && r.IsPrimary() {
					proposed++
					h.propose(i, Request{Body: []byte(fmt.Sprintf("op-%d", proposed))})
				}
			}
		case x < 55:
			for i := range h.replicas {
				h.tick(i)
			}
		case x < 85:
			// Deliver a random prefix, with loss, duplication and reordering.
			k := rng.IntN(len(h.queue) + 1)
			batch := append([]Message(nil), h.queue[:k]...)
			h.queue = h.queue[k:]
			rng.Shuffle(len(batch), func(a, b int) { batch[a], batch[b] = batch[b], batch[a] })
			for _, m := range batch {
				if !h.up[m.To] || rng.IntN(10) == 0 {
					continue
				}
				h.replicas[m.To].Step(m)
				h.drain(int(m.To))
				if rng.IntN(20) == 0 {
					h.replicas[m.To].Step(m)
					h.drain(int(m.To))
				}
			}
		case x < 88:
			i := rng.IntN(n)
			if h.up[i] && down() < f {
				h.paused[i] = true // let work pile up, then crash part-way through persisting it
				for k := 0; k < rng.IntN(4); k++ {
					h.tick(i)
				}
				h.paused[i] = false
				h.crashMidReady(i, rng.IntN(3))
			} else if !h.up[i] {
				if err := h.restart(i); err != nil {
					t.Fatalf("restart %d: %v", i, err)
				}
			}
		case x < 89:
			// Toggle a one-way link failure (partitions form and heal).
			a, b := uint8(rng.IntN(n)), uint8(rng.IntN(n))
			if a != b {
				k := [2]uint8{a, b}
				h.dropped[k] = !h.dropped[k]
			}
		case x < 90:
			i := rng.IntN(n)
			if h.up[i] && h.replicas[i].CommitMin() == uint64(len(h.stores[i].applied)) {
				_ = h.checkpoint(i, 0)
			}
		default:
			if rng.IntN(50) == 0 {
				// Whole-cluster restart: probes go unanswered, elect on recovered logs.
				for i := range h.replicas {
					h.crash(i)
				}
				for i := range h.replicas {
					if err := h.restart(i); err != nil {
						t.Fatalf("restart %d: %v", i, err)
					}
				}
			}
			for i := range h.replicas {
				h.tick(i)
			}
			h.deliverAll()
		}
		if t.Failed() {
			return
		}
	}
	// Heal: everyone up, lossless network, plenty of time.
	clear(h.dropped)
	for i := range h.replicas {
		if !h.up[i] {
			if err := h.restart(i); err != nil {
				t.Fatalf("restart %d: %v", i, err)
			}
		}
	}
	for round := 0; round < 6000; round++ {
		for i := range h.replicas {
			h.tick(i)
		}
		h.deliverAll()
		for i, r := range h.replicas {
			if r.NeedsCheckpoint() {
				_ = h.checkpoint(i, 0)
			}
		}
		if round%500 == 100 && round < 5000 {
			for i, r := range h.replicas {
				if r.IsPrimary() {
					h.propose(i, Request{Body: []byte("final")})
				}
			}
		}
	}
	var primaries int
	for i, r := range h.replicas {
		if r.IsPrimary() {
			primaries++
		}
		if r.Status() != StatusNormal {
			t.Fatalf("seed %d: replica %d stuck in status %d view %d", seed, i, r.Status(), r.View())
		}
	}
	if primaries != 1 {
		t.Fatalf("seed %d: %d primaries after healing", seed, primaries)
	}
	if chaosDebug {
		for i, r := range h.replicas {
			t.Logf("replica %d status %d view %d logview %d op %d cmin %d cmax %d primary %v transfer %d repair %+v journal %s floor %d ckpt %d",
				i, r.status, r.view, r.logView, r.op, r.commitMin, r.commitMax, r.IsPrimary(), r.transfer.stage, r.repair, journalSpan(r), r.journal.floor, r.checkpointOp)
		}
	}
	c0 := h.replicas[0].CommitMin()
	for i, r := range h.replicas {
		if r.CommitMin() != c0 || len(h.stores[i].applied) != int(c0) {
			t.Fatalf("seed %d: replica %d commit %d applied %d, replica 0 commit %d", seed, i, r.CommitMin(),
				len(h.stores[i].applied), c0)
		}
	}
	if c0 == 0 {
		t.Fatalf("seed %d: nothing committed", seed)
	}
}
