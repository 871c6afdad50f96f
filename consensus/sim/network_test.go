package sim

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func testNetwork(n int, opts NetworkOptions, seed uint64) *network {
	if opts.LinkCapacityMax == 0 {
		opts.LinkCapacityMax = 64
	}
	return newNetwork(n, opts, newRNG(seed))
}

func TestNetworkDeliversWithinLatencyBounds(t *testing.T) {
	nw := testNetwork(3, NetworkOptions{LatencyMinTicks: 2, LatencyMeanTicks: 3, LinkCapacityMax: 1000}, 1)
	nw.tick(10)
	for i := 0; i < 200; i++ {
		nw.send(consensus.Message{Kind: consensus.MsgCommit, From: 0, To: 1, CommitMin: uint64(i)})
	}
	got := 0
	for now := uint64(10); now < 10+2+50*3+2; now++ {
		nw.tick(now)
		for _, p := range nw.deliverDue() {
			if p.deliverTick < 12 {
				t.Fatalf("packet delivered at %d, below min latency", p.deliverTick)
			}
			got++
		}
	}
	if got != 200 {
		t.Fatalf("delivered %d of 200 packets on a lossless link", got)
	}
}

func TestNetworkDropsAndDuplicates(t *testing.T) {
	nw := testNetwork(2, NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 1, DropProbability: 0.5, DuplicateProbability: 0.5, LinkCapacityMax: 10000}, 2)
	for i := 0; i < 1000; i++ {
		nw.send(consensus.Message{From: 0, To: 1})
	}
	if nw.stats.Dropped < 400 || nw.stats.Dropped > 600 {
		t.Fatalf("dropped %d of 1000 at p=0.5", nw.stats.Dropped)
	}
	if nw.stats.Duplicated < 200 || nw.stats.Duplicated > 300 {
		t.Fatalf("duplicated %d of ~500 survivors at p=0.5", nw.stats.Duplicated)
	}
	if want := int(1000 - nw.stats.Dropped + nw.stats.Duplicated); nw.inFlight() != want {
		t.Fatalf("in flight %d, want %d", nw.inFlight(), want)
	}
}

func TestNetworkCapacityEvicts(t *testing.T) {
	nw := testNetwork(2, NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 1, LinkCapacityMax: 8}, 3)
	for i := 0; i < 100; i++ {
		nw.send(consensus.Message{From: 0, To: 1})
	}
	if nw.inFlight() != 8 || nw.stats.Evicted != 92 {
		t.Fatalf("in flight %d evicted %d, want 8 and 92", nw.inFlight(), nw.stats.Evicted)
	}
}

func TestNetworkPartitionBlocksAndHeals(t *testing.T) {
	nw := testNetwork(5, NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 1, PartitionProbability: 1, UnpartitionProbability: 0}, 4)
	nw.tick(1)
	if !nw.partitioned {
		t.Fatal("partition with probability 1 did not start")
	}
	cut := 0
	for from := 0; from < 5; from++ {
		for to := 0; to < 5; to++ {
			if nw.blocked[nw.link(from, to)] {
				cut++
				before := nw.stats.Dropped
				nw.send(consensus.Message{From: uint8(from), To: uint8(to)})
				if nw.stats.Dropped != before+1 {
					t.Fatalf("packet %d->%d crossed a partition", from, to)
				}
			}
		}
	}
	if cut == 0 {
		t.Fatal("partition cut no link")
	}
	nw.heal()
	nw.tick(2)
	for l, b := range nw.blocked {
		if b {
			t.Fatalf("link %d still blocked after heal", l)
		}
	}
}

func TestNetworkPartitionDropsPacketsInFlight(t *testing.T) {
	nw := testNetwork(2, NetworkOptions{LatencyMinTicks: 5, LatencyMeanTicks: 1}, 5)
	nw.send(consensus.Message{From: 0, To: 1})
	nw.blocked[nw.link(0, 1)] = true
	nw.tick(100)
	if got := len(nw.deliverDue()); got != 0 {
		t.Fatalf("delivered %d packets across a partition that formed in flight", got)
	}
}

func TestNetworkClogHoldsPackets(t *testing.T) {
	nw := testNetwork(2, NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 1}, 6)
	nw.clogUntil[nw.link(0, 1)] = 500
	nw.send(consensus.Message{From: 0, To: 1})
	nw.send(consensus.Message{From: 1, To: 0})
	nw.tick(400)
	due := nw.deliverDue()
	if len(due) != 1 || due[0].msg.From != 1 {
		t.Fatalf("before the clog clears only 1->0 may arrive, got %d packets", len(due))
	}
	nw.tick(500)
	if len(nw.deliverDue()) != 1 {
		t.Fatal("clogged packet not delivered once the clog cleared")
	}
}

func TestNetworkCopiesMessages(t *testing.T) {
	nw := testNetwork(2, NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 1}, 7)
	p := &consensus.Prepare{Header: consensus.PrepareHeader{Op: 1}, Body: []byte{1, 2, 3}}
	hs := []consensus.PrepareHeader{{Op: 9}}
	nw.send(consensus.Message{From: 0, To: 1, Prepare: p, Suffix: hs, ChunkData: []byte{4}})
	p.Header.Op, p.Body[0], hs[0].Op = 77, 77, 77
	nw.tick(1000)
	m := nw.deliverDue()[0].msg
	if m.Prepare.Header.Op != 1 || m.Prepare.Body[0] != 1 || m.Suffix[0].Op != 9 || m.ChunkData[0] != 4 {
		t.Fatalf("sender mutation leaked into a packet in flight: %+v", m)
	}
}

func TestNetworkDeterministic(t *testing.T) {
	run := func() []uint64 {
		opts := NetworkOptions{LatencyMinTicks: 1, LatencyMeanTicks: 4, DropProbability: 0.1, DuplicateProbability: 0.1,
			ReorderProbability: 0.2, PartitionProbability: 0.01, UnpartitionProbability: 0.05, PartitionStabilityTicks: 10,
			ClogProbability: 0.01, ClogMeanTicks: 20}
		nw := testNetwork(3, opts, 42)
		var order []uint64
		for now := uint64(1); now < 2000; now++ {
			nw.tick(now)
			for i := 0; i < 3; i++ {
				nw.send(consensus.Message{From: uint8(i), To: uint8((i + 1) % 3), CommitMin: now})
			}
			for _, p := range nw.deliverDue() {
				order = append(order, p.msg.CommitMin<<8|uint64(p.msg.From))
			}
		}
		return order
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("same seed delivered %d then %d packets", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed diverged at delivery %d", i)
		}
	}
}
