package bus

import (
	"reflect"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// TestBusForwardRoundTrip: a ForwardRegister from a backup (1) reaches the
// primary (0) with To set, the primary's result comes back, and forward
// frames keep their place among the consensus messages of the same
// connection (both callbacks run on the reader goroutine in arrival order).
func TestBusForwardRoundTrip(t *testing.T) {
	arrivals := make([]chan any, 2)
	for i := range arrivals {
		arrivals[i] = make(chan any, 64)
	}
	c := newCluster(t, 2, func(id uint8, o *Options) {
		o.OnMessage = func(m consensus.Message) { arrivals[id] <- m }
		o.OnForward = func(f Forward) { arrivals[id] <- f }
	})
	waitFor(t, "connections", c.allConnected)
	next := func(id uint8) any {
		t.Helper()
		select {
		case a := <-arrivals[id]:
			return a
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing arrived at %d", id)
			return nil
		}
	}
	primary, backup := c.nodes[0].bus, c.nodes[1].bus

	before := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 1, View: 7, CommitMin: 1, HeartbeatCounter: 1}
	reg := Forward{Kind: ForwardRegister, From: 1, View: 7, Client: sampleClient, Nonce: sampleFwdNonce, UserID: 42}
	after := before
	after.CommitMin = 2
	backup.Send(0, &before)
	backup.SendForward(0, &reg)
	backup.Send(0, &after)
	wantReg := reg
	wantReg.To = 0
	for i, want := range []any{withTo(before, 0), wantReg, withTo(after, 0)} {
		if got := next(0); !reflect.DeepEqual(got, want) {
			t.Fatalf("arrival %d at the primary: got %+v want %+v", i, got, want)
		}
	}

	res := Forward{Kind: ForwardRegisterResult, From: 0, View: 7, Client: reg.Client, Nonce: reg.Nonce,
		Epoch: 17, Watermark: 3, Outcome: RegisterOutcomeOk}
	primary.SendForward(1, &res)
	wantRes := res
	wantRes.To = 1
	if got := next(1); !reflect.DeepEqual(got, wantRes) {
		t.Fatalf("result: got %+v want %+v", got, wantRes)
	}

	out := Forward{Kind: ForwardLogout, From: 1, View: 7, Client: reg.Client, Nonce: sampleNonce, Session: 17, Request: ^uint64(0)}
	backup.SendForward(0, &out)
	wantOut := out
	wantOut.To = 0
	if got := next(0); !reflect.DeepEqual(got, wantOut) {
		t.Fatalf("logout: got %+v want %+v", got, wantOut)
	}
	lres := Forward{Kind: ForwardLogoutResult, From: 0, View: 7, Client: out.Client, Nonce: out.Nonce, Commit: 18,
		Outcome: LogoutOutcomeNotPrimary}
	primary.SendForward(1, &lres)
	wantLres := lres
	wantLres.To = 1
	if got := next(1); !reflect.DeepEqual(got, wantLres) {
		t.Fatalf("logout result: got %+v want %+v", got, wantLres)
	}

	if st := primary.Stats(); st.FramesReceived != 4 || st.FramesInvalid != 0 || st.FramesDroppedNoHandler != 0 {
		t.Fatalf("primary stats %+v", st)
	}
	waitFor(t, "backup sends counted", func() bool { return backup.Stats().FramesSent == 4 })
}

func withTo(m consensus.Message, to uint8) consensus.Message {
	m.To = to
	return m
}

// TestBusForwardWithoutHandler: with no OnForward, a valid forward frame
// is counted and dropped (not invalid), and the connection keeps
// delivering; a forward frame from a spoofed sender is invalid.
func TestBusForwardWithoutHandler(t *testing.T) {
	c := newCluster(t, 3, nil)
	waitFor(t, "connections", c.allConnected)
	c.stop(0) // replaced by the raw peer below
	target := c.nodes[1]
	nc, herr := rawPeer(t, target.addr, 0, 1, nil)
	if herr != nil {
		t.Fatal(herr)
	}
	waitFor(t, "raw peer installed", func() bool { return target.bus.Connected(0) })
	codec := NewCodec(testCluster)
	fwd, err := codec.EncodeForward(nil, &Forward{Kind: ForwardRegister, From: 0, View: 3, Client: sampleClient, Nonce: sampleFwdNonce})
	if err != nil {
		t.Fatal(err)
	}
	spoofed, err := codec.EncodeForward(nil, &Forward{Kind: ForwardRegister, From: 2, View: 3, Client: sampleClient})
	if err != nil {
		t.Fatal(err)
	}
	good := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 0, View: 3, CommitMin: 9}
	frame, err := codec.Encode(nil, &good)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{fwd, spoofed, frame} {
		if _, err := nc.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-target.inbox:
		if want := withTo(good, 1); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("message after the forward frames not delivered")
	}
	if st := target.bus.Stats(); st.FramesDroppedNoHandler != 1 || st.FramesInvalid != 1 || st.FramesReceived != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !target.bus.Connected(0) {
		t.Fatal("forward frames closed the connection")
	}
}

// TestBusSendForwardDrops: SendForward shares Send's queue and drop
// accounting.
func TestBusSendForwardDrops(t *testing.T) {
	mb := testBusConfig()
	mb.PeerQueueCapacity, mb.MaxBatch = 4, 1
	b, _ := pipeBus(t, mb)                                                         // the peer never reads
	b.SendForward(0, &Forward{Kind: ForwardRegister})                              // self
	b.SendForward(9, &Forward{Kind: ForwardRegister})                              // not in the roster
	b.SendForward(1, &Forward{Kind: ForwardRegisterResult, Outcome: 200})          // does not encode
	b.SendForward(1, &Forward{Kind: ForwardKind(consensus.MsgStartView), From: 0}) // not a forward kind
	if st := b.Stats(); st.FramesDroppedNotConnected != 2 || st.FramesDroppedEncode != 2 {
		t.Fatalf("stats %+v", st)
	}
	const sends = 20
	m := consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1}
	for i := range sends {
		if i%2 == 0 {
			b.Send(1, &m)
		} else {
			b.SendForward(1, &Forward{Kind: ForwardLogout, From: 0, View: 1})
		}
	}
	dropped := b.Stats().FramesDroppedQueueFull
	if dropped < sends-5 || dropped > sends-4 {
		t.Fatalf("dropped %d of %d with capacity 4", dropped, sends)
	}
}

// TestMemNetworkForward: the in-memory bus carries forward frames through
// the codec in send order with the consensus messages, on the same
// per-pair queue bound, and counts forwards to a replica without a
// handler.
func TestMemNetworkForward(t *testing.T) {
	n := NewMemNetwork(testCluster, 3, 1<<20)
	var got [3][]any
	buses := make([]*MemBus, 3)
	for i := range 2 {
		buses[i] = n.JoinWithForward(uint8(i), func(m consensus.Message) { got[i] = append(got[i], m) },
			func(f Forward) { got[i] = append(got[i], f) })
	}
	buses[2] = n.Join(2, func(m consensus.Message) { got[2] = append(got[2], m) })

	reg := Forward{Kind: ForwardRegister, From: 1, View: 4, Client: sampleClient, Nonce: sampleFwdNonce, UserID: 7}
	hb := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 1, View: 4, CommitMin: 5}
	buses[1].SendForward(0, &reg)
	buses[1].Send(0, &hb)
	buses[1].SendForward(0, &reg)
	buses[1].SendForward(0, &reg) // fourth frame 1→0: the queue of 3 is full
	if st := buses[1].Stats(); st.FramesDroppedQueueFull != 1 || st.FramesSent != 3 {
		t.Fatalf("stats %+v", st)
	}
	if len(got[0]) != 0 {
		t.Fatal("delivered before Deliver")
	}
	if d := n.Deliver(0); d != 3 {
		t.Fatalf("delivered %d", d)
	}
	wantReg := reg
	wantReg.To = 0
	if want := []any{wantReg, withTo(hb, 0), wantReg}; !reflect.DeepEqual(got[0], want) {
		t.Fatalf("got %+v want %+v", got[0], want)
	}

	res := Forward{Kind: ForwardRegisterResult, From: 0, View: 4, Client: reg.Client, Nonce: reg.Nonce, Epoch: 9,
		Outcome: RegisterOutcomeClientIDOwnedByAnotherUser}
	buses[0].SendForward(1, &res)
	buses[0].SendForward(2, &res) // no handler at 2
	n.Deliver(0)
	wantRes := res
	wantRes.To = 1
	if !reflect.DeepEqual(got[1], []any{wantRes}) || len(got[2]) != 0 {
		t.Fatalf("got %+v / %+v", got[1], got[2])
	}
	if st := buses[2].Stats(); st.FramesDroppedNoHandler != 1 || st.FramesReceived != 0 || st.FramesInvalid != 0 {
		t.Fatalf("bus 2 stats %+v", st)
	}

	buses[0].SendForward(1, &Forward{Kind: ForwardLogoutResult, Outcome: 5})
	buses[0].SendForward(0, &reg) // self
	buses[2].Close()
	buses[0].SendForward(2, &res)
	if st := buses[0].Stats(); st.FramesDroppedEncode != 1 || st.FramesDroppedNotConnected != 2 {
		t.Fatalf("bus 0 stats %+v", st)
	}
}
