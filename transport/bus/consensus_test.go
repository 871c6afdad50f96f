package bus

import (
	"fmt"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// TestConsensusOverMemBus drives three real consensus replicas whose every
// message crosses the codec (MemNetwork encodes and decodes), proposes,
// cuts the primary off to force a view change, and proposes again: the
// fields the codec carries per kind are enough for replication, acks,
// heartbeats, the view change and the old primary's catch-up.
func TestConsensusOverMemBus(t *testing.T) {
	const n = 3
	net := NewMemNetwork(testCluster, 256, 1<<20)
	reps := make([]*consensus.Replica, n)
	buses := make([]*MemBus, n)
	inbox := make([][]consensus.Message, n)
	for i := range n {
		cfg := consensus.DefaultConfig(uint8(i), n)
		cfg.GroupID = partGroup
		cfg.Seed = uint64(i + 1)
		cfg.Incarnation = consensus.Uint128{Lo: uint64(i + 1)}
		r, err := consensus.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = r
		buses[i] = net.Join(uint8(i), func(m consensus.Message) { inbox[i] = append(inbox[i], m) })
	}
	committed := map[uint64]bool{}
	down := -1 // replica cut off from the network
	step := func() {
		for i, r := range reps {
			for _, m := range inbox[i] {
				if i != down {
					r.Step(m)
				}
			}
			inbox[i] = inbox[i][:0]
			for r.HasReady() {
				rd := r.Ready()
				for _, m := range rd.Messages {
					m.From = uint8(i)
					if i != down {
						buses[i].Send(m.To, &m)
					}
				}
				for _, rep := range rd.Replies {
					if rep.Kind == consensus.ReplyCommitted {
						committed[rep.Tag] = true
					}
				}
				r.Advance(rd)
			}
		}
		net.Drop(func(from, to uint8) bool { return int(from) == down || int(to) == down })
		net.Deliver(0)
	}
	propose := func(primary int, tag uint64) {
		reps[primary].Propose(consensus.Request{Client: consensus.Uint128{Lo: 7}, Operation: 160,
			Body: []byte(fmt.Sprintf("op-%d", tag)), Tag: tag})
	}
	run := func(ticks int, done func() bool) bool {
		for range ticks {
			for _, r := range reps {
				r.Tick()
			}
			step()
			step()
			if done() {
				return true
			}
		}
		return false
	}
	for tag := uint64(1); tag <= 5; tag++ {
		propose(0, tag)
	}
	if !run(500, func() bool { return len(committed) == 5 }) {
		t.Fatalf("view 0: committed %d of 5", len(committed))
	}
	down = 0
	newPrimary := -1
	if !run(5000, func() bool {
		for i, r := range reps {
			if i != down && r.IsPrimary() && r.View() > 0 {
				newPrimary = i
				return true
			}
		}
		return false
	}) {
		t.Fatal("no view change without the primary")
	}
	t.Logf("replica %d is primary of view %d", newPrimary, reps[newPrimary].View())
	for tag := uint64(6); tag <= 8; tag++ {
		propose(newPrimary, tag)
	}
	if !run(2000, func() bool { return len(committed) == 8 }) {
		t.Fatalf("view %d: committed %d of 8", reps[newPrimary].View(), len(committed))
	}
	down = -1 // the old primary returns and catches up (StartView, repair)
	if !run(5000, func() bool {
		return reps[0].CommitMin() == reps[newPrimary].CommitMin() && reps[0].View() == reps[newPrimary].View()
	}) {
		t.Fatalf("old primary stuck at view %d commit %d (primary commit %d)", reps[0].View(), reps[0].CommitMin(), reps[newPrimary].CommitMin())
	}
	for i, b := range buses {
		if st := b.Stats(); st.FramesInvalid != 0 || st.FramesDroppedEncode != 0 {
			t.Fatalf("replica %d stats %+v", i, st)
		}
	}
}
