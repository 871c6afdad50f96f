package bus

import (
	"reflect"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// TestMemNetwork: the in-memory bus carries every kind through the codec
// in send order, bounds each pair's queue and delivers only when asked.
func TestMemNetwork(t *testing.T) {
	n := NewMemNetwork(testCluster, 4, 1<<20)
	var got [3][]consensus.Message
	buses := make([]*MemBus, 3)
	for i := range buses {
		buses[i] = n.Join(uint8(i), func(m consensus.Message) { got[i] = append(got[i], m) })
	}
	var sent []consensus.Message
	for _, tc := range goldenCases()[:4] {
		m := tc.msg
		m.From, m.To = 0, 1
		buses[0].Send(1, &m)
		sent = append(sent, m)
	}
	extra := consensus.Message{Kind: consensus.MsgCommit, From: 0, To: 1}
	buses[0].Send(1, &extra) // fifth frame to 1: queue of 4 is full
	buses[0].Send(2, &extra)
	if st := buses[0].Stats(); st.FramesDroppedQueueFull != 1 || st.FramesSent != 5 {
		t.Fatalf("stats %+v", st)
	}
	if len(got[1]) != 0 || n.Pending() != 5 {
		t.Fatal("delivered before Deliver")
	}
	if n.Drop(func(from, to uint8) bool { return to == 2 }) != 1 {
		t.Fatal("drop")
	}
	if d := n.Deliver(0); d != 4 {
		t.Fatalf("delivered %d", d)
	}
	if !reflect.DeepEqual(got[1], sent) || len(got[2]) != 0 {
		t.Fatalf("got %+v", got[1])
	}
	buses[1].Close()
	if buses[0].Connected(1) {
		t.Fatal("closed bus still connected")
	}
	buses[0].Send(1, &extra)
	if st := buses[0].Stats(); st.FramesDroppedNotConnected != 1 {
		t.Fatalf("stats %+v", st)
	}
}
