package client

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// fakeLog is the partition state a scripted cluster shares, with the server's retry recognition
// (node/partition_dedup.go): a send whose request id has the top bit set and whose (client id,
// request id, body) was stored before answers its original confirmation and stores nothing.
type fakeLog struct {
	mu     sync.Mutex
	seen   map[string]uint64 // client id | request id | body → base offset
	stored []string          // one entry per stored batch (its body, as a string)
}

func (l *fakeLog) apply(h wire.RequestHeader, body []byte) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]uint64{}
	}
	key := fmt.Sprintf("%s|%d|%s", h.Client, h.Request, body)
	base, replay := l.seen[key]
	if !replay || h.Request&sendRequestFlag == 0 {
		base = uint64(len(l.stored))
		l.stored = append(l.stored, string(body))
		l.seen[key] = base
	}
	conf := wire.SendConfirmation{StreamID: 1, TopicID: 1, PartitionID: 1, BaseOffset: base}
	return wire.EncodeReply(nil, h, wire.OK, wire.AppendSendMessagesReply(nil, &conf))
}

func (l *fakeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.stored)
}

// onSend routes every SendMessages frame of fc (header and body) to send; everything else keeps the
// fake cluster's script. Call before dialing.
func (fc *fakeCluster) onSend(send func(node int, h wire.RequestHeader, body []byte) [][]byte) {
	for i, s := range fc.nodes {
		i, s, next := i, s, s.handle
		s.handle = func(f wire.Frame) [][]byte {
			if h := s.header(f); h.Operation == wire.OpSendMessages {
				return send(i, h, f.Body)
			}
			return next(f)
		}
	}
}

// sendFrames returns the SendMessages frames node i received, decoded.
func (fc *fakeCluster) sendFrames(i int) []wire.Frame { return fc.frames(i, wire.OpSendMessages) }

func byID(p uint32) wire.Partitioning {
	return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: p}
}

func sendTo(c *Client, t *testing.T, partition uint32, payload string) (wire.SendConfirmation, error) {
	msgs := []wire.BatchMessageInput{{ID: [16]byte{1}, Payload: []byte(payload)}}
	conf, err := c.SendMessages(testCtx(t), wire.NumericID(1), wire.NumericID(1),
		byID(partition), msgs)
	if err != nil {
		return wire.SendConfirmation{}, err
	}
	return conf[0], nil
}

// sameIdentity fails unless every frame carries the same client id, request id (top bit set) and
// body.
func sameIdentity(t *testing.T, frames []wire.Frame) {
	t.Helper()
	if len(frames) == 0 {
		t.Fatal("no frames")
	}
	h0, _ := wire.DecodeRequestHeader(frames[0].Header[:])
	if h0.Request&sendRequestFlag == 0 {
		t.Fatalf("request id %#x lacks the retry-recognition bit", h0.Request)
	}
	for i, f := range frames[1:] {
		h, _ := wire.DecodeRequestHeader(f.Header[:])
		if h.Client != h0.Client || h.Request != h0.Request || !bytes.Equal(f.Body, frames[0].Body) {
			t.Fatalf("attempt %d: client %s request %#x (body equal %v), first attempt client %s request %#x",
				i+2, h.Client, h.Request, bytes.Equal(f.Body, frames[0].Body), h0.Client, h0.Request)
		}
	}
}

// The owner map starts at the leader, learns a partition's owner by trying (58, then the roster
// walk), and sends there directly afterwards; a partition with no entry goes to the leader.
func TestClusterOwnerMapLearnedByWalkAndCached(t *testing.T) {
	fc := newFakeCluster(t, 3) // metadata leader: node 0 throughout
	var log fakeLog
	owner := map[uint32]int{0: 0, 1: 2}
	fc.onSend(func(node int, h wire.RequestHeader, body []byte) [][]byte {
		req, err := wire.DecodeSendMessages(body)
		if err != nil || owner[req.Partitioning.PartitionID] != node {
			return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
		}
		return [][]byte{log.apply(h, body)}
	})
	c := fc.mustDial([]int{1})
	if _, ok := c.PartitionOwner(wire.NumericID(1), wire.NumericID(1), byID(1)); ok {
		t.Fatal("owner known before any send")
	}
	if _, err := sendTo(c, t, 1, "a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.PartitionOwner(wire.NumericID(1), wire.NumericID(1), byID(1)); got != fc.nodes[2].addr() {
		t.Fatalf("owner of partition 1 cached as %q, want node 2", got)
	}
	for i, want := range []int{1, 1, 1} { // leader refused, walk: node 1 refused, node 2 accepted
		if got := len(fc.sendFrames(i)); got != want {
			t.Fatalf("first send: node %d got %d frames, want %d", i, got, want)
		}
	}
	sameIdentity(t, append(append(fc.sendFrames(0), fc.sendFrames(1)...), fc.sendFrames(2)...))
	if _, err := sendTo(c, t, 1, "b"); err != nil {
		t.Fatal(err)
	}
	if len(fc.sendFrames(0)) != 1 || len(fc.sendFrames(1)) != 1 || len(fc.sendFrames(2)) != 2 {
		t.Fatal("the second send to partition 1 did not go straight to its cached owner")
	}
	// Partition 0 has no entry: it goes to the leader (node 0), which accepts.
	if _, err := sendTo(c, t, 0, "c"); err != nil {
		t.Fatal(err)
	}
	if len(fc.sendFrames(0)) != 2 || c.Addr() != fc.nodes[0].addr() || log.count() != 3 {
		t.Fatalf("partition 0: on %s, node 0 frames %d, stored %d", c.Addr(), len(fc.sendFrames(0)), log.count())
	}
}

// Leadership moves twice during one incident: the cached owner refuses (it moved to node 1), and
// node 1 refuses as well by the time the send reaches it (it moved on to node 2). The client
// refreshes the map after each refusal, ends on node 2 with one stored copy and caches it.
func TestClusterOwnerMovesTwiceDuringOneSend(t *testing.T) {
	fc := newFakeCluster(t, 3)
	var log fakeLog
	var owner atomic.Int32
	var moveOn atomic.Bool // node 1 hands over to node 2 at its first send
	fc.script(func(int) int { return int(owner.Load()) }, nil)
	fc.onSend(func(node int, h wire.RequestHeader, body []byte) [][]byte {
		if node == 1 && moveOn.Swap(false) {
			owner.Store(2)
		}
		if node != int(owner.Load()) {
			return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
		}
		return [][]byte{log.apply(h, body)}
	})
	c := fc.mustDial([]int{0})
	if _, err := sendTo(c, t, 1, "first"); err != nil {
		t.Fatal(err)
	}
	before := len(fc.sendFrames(0))
	owner.Store(1)
	moveOn.Store(true)
	conf, err := sendTo(c, t, 1, "second")
	if err != nil {
		t.Fatalf("send across two moves: %v", err)
	}
	if got, _ := c.PartitionOwner(wire.NumericID(1), wire.NumericID(1), byID(1)); got != fc.nodes[2].addr() || c.Addr() != got {
		t.Fatalf("owner cached %q, client on %s, want node 2", got, c.Addr())
	}
	second := append(append(fc.sendFrames(0)[before:], fc.sendFrames(1)...), fc.sendFrames(2)...)
	if len(second) != 3 {
		t.Fatalf("%d attempts, want 3 (node 0 refused, node 1 refused, node 2 accepted)", len(second))
	}
	sameIdentity(t, second)
	if log.count() != 2 || conf.BaseOffset != 1 {
		t.Fatalf("stored %d batches, confirmation %+v", log.count(), conf)
	}
}

// Every node refuses for a while (no primary yet): the client walks the roster in rounds with
// exponential backoff and jitter between them, not a tight loop, and succeeds once a node accepts.
func TestClusterNotOwnerBacksOffBetweenRounds(t *testing.T) {
	fc := newFakeCluster(t, 3)
	var log fakeLog
	var acceptFrom atomic.Int64
	fc.onSend(func(node int, h wire.RequestHeader, body []byte) [][]byte {
		if node != 2 || time.Now().UnixNano() < acceptFrom.Load() {
			return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
		}
		return [][]byte{log.apply(h, body)}
	})
	c := fc.mustDial([]int{0})
	const refusing = 1200 * time.Millisecond
	acceptFrom.Store(time.Now().Add(refusing).UnixNano())
	if _, err := sendTo(c, t, 1, "x"); err != nil {
		t.Fatal(err)
	}
	attempts := len(fc.sendFrames(0)) + len(fc.sendFrames(1)) + len(fc.sendFrames(2))
	// Rounds of 3 attempts separated by 25-50, 50-100, 100-200, 200-400, 400-800 ms, ... pauses:
	// about 6 rounds fit in 1.2 s. Without backoff the walk would run hundreds of rounds.
	if attempts > 3*9 {
		t.Fatalf("%d attempts in %s: the walk does not back off", attempts, refusing)
	}
	if log.count() != 1 {
		t.Fatalf("stored %d", log.count())
	}
	for n := 1; n < 12; n++ {
		d, ceil := backoffOf(n), min(ownerBackoffMin<<(n-1), ownerBackoffMax)
		if d < ceil/2 || d > ceil {
			t.Fatalf("round %d backoff %s outside [%s, %s]", n, d, ceil/2, ceil)
		}
	}
}

// The primary stores a send and dies before answering (connection closed, no reply); leadership
// moves to node 1. The client reconnects under the same client id and replays the same request id
// and bytes there; the dedup window answers the original confirmation: stored once, no error.
func TestClusterSendLostReplyReplayedExactlyOnce(t *testing.T) {
	fc := newFakeCluster(t, 3)
	var log fakeLog
	var dead atomic.Bool
	fc.script(func(int) int {
		if dead.Load() {
			return 1
		}
		return 0
	}, nil)
	fc.onSend(func(node int, h wire.RequestHeader, body []byte) [][]byte {
		switch {
		case node == 0 && !dead.Load():
			out := log.apply(h, body)
			if log.count() == 2 { // the second send: stored, then the node dies
				dead.Store(true)
				return [][]byte{hangUp}
			}
			return [][]byte{out}
		case node == 1 && dead.Load():
			return [][]byte{log.apply(h, body)}
		}
		return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
	})
	c := fc.mustDial([]int{0})
	client := c.ClientID()
	if _, err := sendTo(c, t, 1, "one"); err != nil {
		t.Fatal(err)
	}
	conf, err := sendTo(c, t, 1, "two")
	if err != nil {
		t.Fatalf("a send whose reply was lost in a failover must succeed within the budget: %v", err)
	}
	if log.count() != 2 || conf.BaseOffset != 1 {
		t.Fatalf("stored %d batches (want 2: no duplicate), confirmation %+v", log.count(), conf)
	}
	sameIdentity(t, append(fc.sendFrames(0)[1:], fc.sendFrames(1)...))
	if st := c.SendStats(); st.Replayed != 1 || st.Retried != 1 {
		t.Fatalf("stats %+v, want one replayed send", st)
	}
	if c.ClientID() != client || c.Addr() != fc.nodes[1].addr() {
		t.Fatalf("client id %s (was %s) on %s", c.ClientID(), client, c.Addr())
	}
	for _, f := range fc.frames(1, wire.OpRegister) {
		if h, _ := wire.DecodeRequestHeader(f.Header[:]); h.Client != client {
			t.Fatalf("signed in on node 1 under %s, want the kept client id %s", h.Client, client)
		}
	}
}

// A reply that never comes within the attempt timeout is replayed on a fresh connection; when the
// budget ends with no reply at all, the caller gets an *ExactlyOnceError wrapping the timeout.
func TestClusterSendBudgetEndsWithOutcomeUnknown(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.onSend(func(int, wire.RequestHeader, []byte) [][]byte { return nil }) // never answers
	c := fc.mustDial([]int{0}, WithResponseTimeout(900*time.Millisecond), WithSendAttemptTimeout(200*time.Millisecond))
	_, err := sendTo(c, t, 1, "lost")
	var eo *ExactlyOnceError
	if !errors.As(err, &eo) || !IsTimeout(err) {
		t.Fatalf("got %T %v, want *ExactlyOnceError wrapping a *TimeoutError", err, err)
	}
	frames := append(fc.sendFrames(0), fc.sendFrames(1)...)
	if len(frames) < 2 || eo.Attempts != len(frames) {
		t.Fatalf("%d attempts (error says %d), want the send replayed after each attempt timeout", len(frames), eo.Attempts)
	}
	sameIdentity(t, frames)
}

// 59 (a replay below the server's window) is an explicit *ExactlyOnceError carrying the code.
func TestClusterSendAlreadyAppliedIsExplicit(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.onSend(func(_ int, h wire.RequestHeader, _ []byte) [][]byte {
		return [][]byte{replyStatus(h, wire.ErrRequestAlreadyApplied)}
	})
	c := fc.mustDial([]int{0})
	_, err := sendTo(c, t, 1, "old")
	var eo *ExactlyOnceError
	if !errors.As(err, &eo) || CodeOf(err) != wire.ErrRequestAlreadyApplied || len(fc.sendFrames(0)) != 1 {
		t.Fatalf("got %T %v after %d frames", err, err, len(fc.sendFrames(0)))
	}
}

// A single node keeps its dedup window in memory only: a send whose connection broke without a
// reply is not replayed after the reconnect (the node may have restarted and forgotten it), it is
// an explicit *ExactlyOnceError.
func TestClusterSingleNodeUnknownSendNotReplayed(t *testing.T) {
	fc := newFakeCluster(t, 1)
	var log fakeLog
	var drop atomic.Bool
	drop.Store(true)
	fc.onSend(func(_ int, h wire.RequestHeader, body []byte) [][]byte {
		out := log.apply(h, body)
		if drop.Swap(false) {
			return [][]byte{hangUp}
		}
		return [][]byte{out}
	})
	c := fc.mustDial([]int{0})
	_, err := sendTo(c, t, 1, "maybe")
	var eo *ExactlyOnceError
	if !errors.As(err, &eo) || len(fc.sendFrames(0)) != 1 {
		t.Fatalf("got %T %v after %d frames, want *ExactlyOnceError and no replay", err, err, len(fc.sendFrames(0)))
	}
	if _, err := sendTo(c, t, 1, "next"); err != nil || log.count() != 2 {
		t.Fatalf("next send after reconnect: %v, stored %d", err, log.count())
	}
}

// A reconnect keeps the client id and continues the metadata request counter: the client table
// keeps its watermark across a rebind, so ids restarting at 1 would be answered from its cache.
func TestClusterReconnectKeepsClientIDAndCounter(t *testing.T) {
	fc := newFakeCluster(t, 2)
	c := fc.mustDial([]int{0}, WithResponseTimeout(300*time.Millisecond))
	client := c.ClientID()
	var lost atomic.Bool
	fc.script(nil, func(_ int, h wire.RequestHeader) [][]byte {
		if h.Request == 2 && lost.CompareAndSwap(false, true) {
			return nil
		}
		return [][]byte{replyOK(h, nil)}
	})
	if err := c.DeleteStream(testCtx(t), wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteStream(testCtx(t), wire.NumericID(2)); !IsTimeout(err) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if err := c.DeleteStream(testCtx(t), wire.NumericID(3)); err != nil {
		t.Fatal(err)
	}
	regs := fc.frames(0, wire.OpRegister)
	deletes := fc.frames(0, wire.OpDeleteStream)
	if len(regs) != 2 || len(deletes) != 3 {
		t.Fatalf("%d sign-ins, %d deletes", len(regs), len(deletes))
	}
	for _, f := range regs {
		if h, _ := wire.DecodeRequestHeader(f.Header[:]); h.Client != client {
			t.Fatalf("sign-in under %s, want the kept client id %s", h.Client, client)
		}
	}
	if h, _ := wire.DecodeRequestHeader(deletes[2].Header[:]); h.Request != 3 || h.Client != client {
		t.Fatalf("after the reconnect: request %d client %s, want 3 and %s", h.Request, h.Client, client)
	}
}

// A flapping roster: every metadata answer names another leader. The redirect cap bounds each
// settlement, and writes still complete (they go wherever the client stands when nobody refuses).
func TestClusterFlappingRosterBounded(t *testing.T) {
	fc := newFakeCluster(t, 3)
	var calls atomic.Int32
	fc.script(func(int) int { return int(calls.Add(1)) % 3 }, nil)
	start := time.Now()
	c := fc.mustDial([]int{0})
	registers := fc.count(0, wire.OpRegister, 0) + fc.count(1, wire.OpRegister, 0) + fc.count(2, wire.OpRegister, 0)
	if registers > 1+DefaultMaxRedirects {
		t.Fatalf("%d sign-ins while the roster flapped, want at most 1 + %d", registers, DefaultMaxRedirects)
	}
	for i := 0; i < 5; i++ {
		if err := c.DeleteStream(testCtx(t), wire.NumericID(uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
}

// A send whose first copy's outcome is unknown and whose later attempts are all refused (58) ends
// as an *ExactlyOnceError carrying the unknown cause, never the 58: a 58 would read as "never
// admitted, safe to send again".
func TestClusterSendUnknownThenRefusedKeepsCause(t *testing.T) {
	fc := newFakeCluster(t, 2)
	var first atomic.Bool
	first.Store(true)
	fc.onSend(func(_ int, h wire.RequestHeader, _ []byte) [][]byte {
		if first.Swap(false) {
			return [][]byte{hangUp}
		}
		return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
	})
	c := fc.mustDial([]int{0}, WithResponseTimeout(600*time.Millisecond))
	_, err := sendTo(c, t, 1, "x")
	var eo *ExactlyOnceError
	if !errors.As(err, &eo) || CodeOf(err) == wire.ErrTransientNotAccepted || CodeOf(err) != wire.ErrDisconnected {
		t.Fatalf("got %T %v (code %s), want *ExactlyOnceError carrying Disconnected", err, err, CodeOf(err))
	}
	if eo.Attempts < 2 {
		t.Fatalf("%d attempts, want replays after the lost reply", eo.Attempts)
	}
}

// A transport that carries no binary request identity (HTTP) cannot have its sends recognised:
// an unknown outcome is an *ExactlyOnceError at once, with no replay.
func TestClusterSendWithoutRequestIdentityNotReplayed(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.onSend(func(_ int, h wire.RequestHeader, _ []byte) [][]byte {
		return [][]byte{replyStatus(h, wire.ErrTransientNotCommitted)}
	})
	c := fc.mustDial([]int{0})
	c.mu.Lock()
	c.cfg.transport = Transport("http") // as a frame-less transport would be configured
	c.mu.Unlock()
	_, err := sendTo(c, t, 1, "x")
	var eo *ExactlyOnceError
	if !errors.As(err, &eo) || CodeOf(err) != wire.ErrTransientNotCommitted || len(fc.sendFrames(0))+len(fc.sendFrames(1)) != 1 {
		t.Fatalf("got %T %v after %d frames, want *ExactlyOnceError and no replay", err, err, len(fc.sendFrames(0))+len(fc.sendFrames(1)))
	}
}
