package bus

import (
	"reflect"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// TestBusSendSharedDeliversOneEncodingToEveryPeer: a prepare sent to two
// replicas with SendShared arrives at both, equal to what Send delivers.
func TestBusSendSharedDeliversOneEncodingToEveryPeer(t *testing.T) {
	arrivals := make([]chan consensus.Message, 3)
	for i := range arrivals {
		arrivals[i] = make(chan consensus.Message, 8)
	}
	c := newCluster(t, 3, func(id uint8, o *Options) {
		o.OnMessage = func(m consensus.Message) { arrivals[id] <- m }
	})
	waitFor(t, "connections", c.allConnected)
	body := []byte("a broadcast batch")
	p := consensus.Prepare{Header: consensus.PrepareHeader{View: 2, Op: 9, Operation: 160}, Body: body}
	p.Header.Checksum = consensus.PrepareChecksum(&p.Header, body)
	m := consensus.Message{Kind: consensus.MsgPrepare, Group: partGroup, From: 0, View: 2, Prepare: &p}
	c.nodes[0].bus.SendShared([]uint8{1, 2}, &m)
	for _, id := range []uint8{1, 2} {
		select {
		case got := <-arrivals[id]:
			want := m
			want.To = id
			if got.Kind != want.Kind || got.To != id || got.View != 2 || got.Prepare == nil ||
				!reflect.DeepEqual(*got.Prepare, p) {
				t.Fatalf("replica %d got %+v", id, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing arrived at replica %d", id)
		}
	}
	if st := c.nodes[0].bus.Stats(); st.FramesDroppedOversize+st.FramesDroppedNotConnected != 0 {
		t.Fatalf("drops: %+v", st)
	}
}
