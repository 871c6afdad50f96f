package bus

import (
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

func withFetchTo(f Fetch, to uint8) Fetch {
	f.To = to
	return f
}

// TestBusFetchRoundTrip: a FetchRequest from a lagging replica (1) reaches
// the peer (0) with To set, in order among the consensus messages of the
// same connection, and the peer's ~100 KiB reply comes back whole.
func TestBusFetchRoundTrip(t *testing.T) {
	arrivals := make([]chan any, 2)
	for i := range arrivals {
		arrivals[i] = make(chan any, 64)
	}
	c := newCluster(t, 2, func(id uint8, o *Options) {
		o.OnMessage = func(m consensus.Message) { arrivals[id] <- m }
		o.OnForward = func(f Forward) { arrivals[id] <- f }
		o.OnFetch = func(f Fetch) { arrivals[id] <- f }
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
	peer, lagging := c.nodes[0].bus, c.nodes[1].bus

	before := consensus.Message{Kind: consensus.MsgCommit, Group: partGroup, From: 1, View: 3, CommitMin: 1, HeartbeatCounter: 1}
	req := Fetch{Kind: FetchRequest, From: 1, Group: partGroup, Nonce: sampleFetchNonce, Offset: 500, EndOffset: 10_000, BytesMax: 128 << 10}
	fwd := Forward{Kind: ForwardLogout, From: 1, View: 3, Client: sampleClient, Nonce: sampleFwdNonce, Session: 1, Request: 2}
	lagging.Send(0, &before)
	lagging.SendFetch(0, &req)
	lagging.SendForward(0, &fwd)
	for i, want := range []any{withTo(before, 0), withFetchTo(req, 0), Forward{Kind: fwd.Kind, From: 1, To: 0, View: 3,
		Client: fwd.Client, Nonce: fwd.Nonce, Session: 1, Request: 2}} {
		if got := next(0); !reflect.DeepEqual(got, want) {
			t.Fatalf("arrival %d at the peer: got %+v want %+v", i, got, want)
		}
	}

	reply := Fetch{Kind: FetchReply, From: 0, Group: req.Group, Nonce: req.Nonce, Offset: 500, EndOffset: 1_700,
		FirstOffset: 100, NextOffset: 20_000, Status: FetchOK, Records: sampleRecords(100 << 10)}
	peer.SendFetch(1, &reply)
	got, ok := next(1).(Fetch)
	if !ok || !reflect.DeepEqual(got, withFetchTo(reply, 1)) {
		t.Fatalf("reply: got %+v", got)
	}
	miss := Fetch{Kind: FetchReply, From: 0, Group: req.Group, Nonce: req.Nonce, Offset: 5, EndOffset: 5,
		FirstOffset: 100, NextOffset: 20_000, Status: FetchBelowRetained}
	peer.SendFetch(1, &miss)
	if got := next(1); !reflect.DeepEqual(got, withFetchTo(miss, 1)) {
		t.Fatalf("below_retained reply: got %+v", got)
	}

	if st := peer.Stats(); st.FramesReceived != 3 || st.FramesInvalid != 0 || st.FramesDroppedNoHandler != 0 {
		t.Fatalf("peer stats %+v", st)
	}
	if st := lagging.Stats(); st.FramesReceived != 2 || st.FramesInvalid != 0 {
		t.Fatalf("lagging stats %+v", st)
	}
	waitFor(t, "peer sends counted", func() bool { return peer.Stats().FramesSent == 2 })
}

// TestBusFetchWithoutHandler: with no OnFetch, a valid fetch frame is
// counted and dropped (not invalid); a fetch frame from a spoofed sender or
// with a corrupt body is invalid; the connection keeps delivering.
func TestBusFetchWithoutHandler(t *testing.T) {
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
	encode := func(f Fetch) []byte {
		frame, err := codec.EncodeFetch(nil, &f)
		if err != nil {
			t.Fatal(err)
		}
		return frame
	}
	valid := encode(Fetch{Kind: FetchReply, From: 0, Group: partGroup, Nonce: sampleFetchNonce, Offset: 1, EndOffset: 2,
		Records: sampleRecords(300)})
	spoofed := encode(Fetch{Kind: FetchRequest, From: 2, Group: partGroup, BytesMax: 1})
	corrupt := encode(Fetch{Kind: FetchReply, From: 0, Group: partGroup, Offset: 1, EndOffset: 2, Records: sampleRecords(300)})
	corrupt[HeaderBytes+10] ^= 1
	good := consensus.Message{Kind: consensus.MsgCommit, Group: metaGroup, From: 0, View: 3, CommitMin: 9}
	frame, err := codec.Encode(nil, &good)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{valid, spoofed, corrupt, frame} {
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
		t.Fatal("message after the fetch frames not delivered")
	}
	if st := target.bus.Stats(); st.FramesDroppedNoHandler != 1 || st.FramesInvalid != 2 || st.FramesReceived != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !target.bus.Connected(0) {
		t.Fatal("fetch frames closed the connection")
	}
}

// TestBusFetchBeforeHandshakeRefused: a connection whose first frame is a
// (valid) fetch frame instead of a hello is refused like any other frame:
// closed, counted as unknown_command, never handed to OnFetch.
func TestBusFetchBeforeHandshakeRefused(t *testing.T) {
	var fetched atomic.Int64
	c := newCluster(t, 2, func(id uint8, o *Options) {
		o.OnFetch = func(Fetch) { fetched.Add(1) }
	})
	waitFor(t, "connections", c.allConnected)
	target := c.nodes[1]
	for _, f := range []Fetch{
		{Kind: FetchRequest, From: 0, Group: partGroup, BytesMax: 1},
		{Kind: FetchReply, From: 0, Group: partGroup, Offset: 1, EndOffset: 2, Records: sampleRecords(1000)},
	} {
		frame, err := NewCodec(testCluster).EncodeFetch(nil, &f)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := net.Dial("tcp", target.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc)
		_ = nc.Close()
	}
	waitFor(t, "refusals", func() bool { return target.bus.Stats().Refused(RefusedUnknownCommand) == 2 })
	if n := fetched.Load(); n != 0 {
		t.Fatalf("OnFetch called %d times before a handshake", n)
	}
	if st := target.bus.Stats(); st.FramesReceived != 0 || st.ConnectionsAccepted != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !c.allConnected() {
		t.Fatal("the refusals disturbed the established connection")
	}
}

// TestBusSendFetchDrops: SendFetch shares Send's queue and drop
// accounting; a reply above max_message_size is dropped as oversize.
func TestBusSendFetchDrops(t *testing.T) {
	mb := testBusConfig()
	mb.PeerQueueCapacity, mb.MaxBatch = 4, 1
	b, _ := pipeBus(t, mb)                                                        // the peer never reads
	b.SendFetch(0, &Fetch{Kind: FetchRequest, BytesMax: 1})                       // self
	b.SendFetch(9, &Fetch{Kind: FetchRequest, BytesMax: 1})                       // not in the roster
	b.SendFetch(1, &Fetch{Kind: FetchRequest})                                    // bytes_max 0: does not encode
	b.SendFetch(1, &Fetch{Kind: FetchReply, Status: 7})                           // status out of range
	b.SendFetch(1, &Fetch{Kind: FetchKind(ForwardLogout)})                        // not a fetch kind
	records := sampleRecords(int(FetchRecordsMax(mb.MaxMessageSize.Bytes())) + 1) // one byte too many
	b.SendFetch(1, &Fetch{Kind: FetchReply, From: 0, Offset: 1, EndOffset: 2, Records: records})
	if st := b.Stats(); st.FramesDroppedNotConnected != 2 || st.FramesDroppedEncode != 3 || st.FramesDroppedOversize != 1 {
		t.Fatalf("stats %+v", st)
	}
	const sends = 20
	m := consensus.Message{Kind: consensus.MsgCommit, From: 0, View: 1}
	for i := range sends {
		if i%2 == 0 {
			b.Send(1, &m)
		} else {
			b.SendFetch(1, &Fetch{Kind: FetchReply, From: 0, Offset: 1, EndOffset: 2, Records: records[:len(records)-1]})
		}
	}
	dropped := b.Stats().FramesDroppedQueueFull
	if dropped < sends-5 || dropped > sends-4 {
		t.Fatalf("dropped %d of %d with capacity 4", dropped, sends)
	}
}

// TestMemNetworkFetch: the in-memory bus carries fetch frames through the
// codec in send order with the other frames, on the same per-pair queue
// bound, counts fetch frames to a replica without a handler and drops
// oversize replies.
func TestMemNetworkFetch(t *testing.T) {
	const maxMessage = 64 << 10
	n := NewMemNetwork(testCluster, 3, maxMessage)
	var got [3][]any
	buses := make([]*MemBus, 3)
	for i := range 2 {
		buses[i] = n.JoinWithFetch(uint8(i), func(m consensus.Message) { got[i] = append(got[i], m) },
			func(f Forward) { got[i] = append(got[i], f) }, func(f Fetch) { got[i] = append(got[i], f) })
	}
	buses[2] = n.JoinWithForward(2, func(m consensus.Message) { got[2] = append(got[2], m) }, nil)

	req := Fetch{Kind: FetchRequest, From: 1, Group: partGroup, Nonce: sampleFetchNonce, Offset: 7, EndOffset: 70, BytesMax: 4096}
	hb := consensus.Message{Kind: consensus.MsgCommit, Group: partGroup, From: 1, View: 4, CommitMin: 5}
	buses[1].SendFetch(0, &req)
	buses[1].Send(0, &hb)
	buses[1].SendFetch(0, &req)
	buses[1].SendFetch(0, &req) // fourth frame 1→0: the queue of 3 is full
	if st := buses[1].Stats(); st.FramesDroppedQueueFull != 1 || st.FramesSent != 3 {
		t.Fatalf("stats %+v", st)
	}
	if len(got[0]) != 0 {
		t.Fatal("delivered before Deliver")
	}
	if d := n.Deliver(0); d != 3 {
		t.Fatalf("delivered %d", d)
	}
	if want := []any{withFetchTo(req, 0), withTo(hb, 0), withFetchTo(req, 0)}; !reflect.DeepEqual(got[0], want) {
		t.Fatalf("got %+v want %+v", got[0], want)
	}

	reply := Fetch{Kind: FetchReply, From: 0, Group: partGroup, Nonce: req.Nonce, Offset: 7, EndOffset: 40,
		FirstOffset: 1, NextOffset: 100, Status: FetchOK, Records: sampleRecords(5000)}
	buses[0].SendFetch(1, &reply)
	buses[0].SendFetch(2, &reply) // no fetch handler at 2
	n.Deliver(0)
	if !reflect.DeepEqual(got[1], []any{withFetchTo(reply, 1)}) || len(got[2]) != 0 {
		t.Fatalf("got %+v / %+v", got[1], got[2])
	}
	if st := buses[2].Stats(); st.FramesDroppedNoHandler != 1 || st.FramesReceived != 0 || st.FramesInvalid != 0 {
		t.Fatalf("bus 2 stats %+v", st)
	}

	big := reply
	big.Records = sampleRecords(maxMessage - HeaderBytes + 1)
	buses[0].SendFetch(1, &big)                                // oversize
	buses[0].SendFetch(1, &Fetch{Kind: FetchReply, Status: 5}) // does not encode
	buses[0].SendFetch(0, &req)                                // self
	buses[2].Close()
	buses[0].SendFetch(2, &reply)
	if st := buses[0].Stats(); st.FramesDroppedOversize != 1 || st.FramesDroppedEncode != 1 || st.FramesDroppedNotConnected != 2 {
		t.Fatalf("bus 0 stats %+v", st)
	}
	if n.Pending() != 0 {
		t.Fatalf("%d frames in flight after drops", n.Pending())
	}
}
