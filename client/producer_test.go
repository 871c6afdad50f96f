package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// sendRecorder is a fake server that signs in and records every SendMessages it receives. fail,
// when set, picks the status for a send; hold, when set, blocks the reply until it is closed.
type sendRecorder struct {
	*fakeServer
	mu    sync.Mutex
	sends []wire.SendMessagesRequest
	fail  func(wire.SendMessagesRequest) wire.ErrorCode
	hold  chan struct{}
	got   chan struct{} // one token per received send
}

func newSendRecorder(t *testing.T) *sendRecorder {
	r := &sendRecorder{got: make(chan struct{}, 1024)}
	r.fakeServer = newFakeServer(t, nil)
	r.handle = func(f wire.Frame) [][]byte {
		h := r.header(f)
		switch h.Operation {
		case wire.OpRegister:
			return [][]byte{registerReply(h, 7)}
		case wire.OpSendMessages:
			req, err := wire.DecodeSendMessages(f.Body)
			if err != nil {
				t.Errorf("send body: %v", err)
				return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
			}
			req.Partitioning.Key = append([]byte(nil), req.Partitioning.Key...)
			r.mu.Lock()
			r.sends = append(r.sends, req)
			fail, hold := r.fail, r.hold
			r.mu.Unlock()
			r.got <- struct{}{}
			if hold != nil {
				<-hold
			}
			if fail != nil {
				if code := fail(req); code != wire.OK {
					return [][]byte{replyStatus(h, code)}
				}
			}
			return [][]byte{replyOK(h, wire.AppendSendMessagesReply(nil, &wire.SendConfirmation{BaseOffset: 1}))}
		}
		return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
	}
	return r
}

// batches returns the message counts of the sends received so far, with their partitioning.
func (r *sendRecorder) batches() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.sends {
		out = append(out, fmt.Sprintf("%s:%d", partitioningName(s.Partitioning), s.MessagesCount))
	}
	return out
}

func loggedIn(t *testing.T, s *fakeServer) *Client {
	c := dial(t, s)
	if _, err := c.LoginUser(testCtx(t), "u", "p"); err != nil {
		t.Fatal(err)
	}
	return c
}

func payloads(n int) []Message {
	out := make([]Message, n)
	for i := range out {
		out[i] = Message{Payload: []byte(fmt.Sprintf("m%d", i))}
	}
	return out
}

func newTestProducer(t *testing.T, c *Client, cfg ProducerConfig) *Producer {
	t.Helper()
	cfg.Stream, cfg.Topic = wire.NumericID(1), wire.NumericID(2)
	p, err := NewProducer(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func TestProducerBatchesBySizeAndFlush(t *testing.T) {
	s := newSendRecorder(t)
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{BatchMessages: 3, Linger: LingerMax})
	ctx := testCtx(t)
	if err := p.Send(ctx, payloads(7)...); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.batches()); got != "[balanced:3 balanced:3 balanced:1]" {
		t.Fatalf("batches = %s", got)
	}
}

func TestProducerBatchesByBytes(t *testing.T) {
	s := newSendRecorder(t)
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{BatchBytes: 5, Linger: LingerMax, Partitioning: PartitionByID(4)})
	ctx := testCtx(t)
	// 2+2 bytes stay below 5; the third message would pass it, so the first two go alone.
	if err := p.Send(ctx, Message{Payload: []byte("ab")}, Message{Payload: []byte("cd")}, Message{Payload: []byte("ef")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.batches()); got != "[partition 4:2 partition 4:1]" {
		t.Fatalf("batches = %s", got)
	}
}

func TestProducerLingerSendsWithoutFlush(t *testing.T) {
	s := newSendRecorder(t)
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{Linger: time.Millisecond})
	if err := p.Send(testCtx(t), payloads(2)...); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.got: // the linger timer sent the batch: nobody flushed
	case <-time.After(10 * time.Second):
		t.Fatal("linger never sent the batch")
	}
	if got := fmt.Sprint(s.batches()); got != "[balanced:2]" {
		t.Fatalf("batches = %s", got)
	}
}

func TestProducerBatchesPerKey(t *testing.T) {
	s := newSendRecorder(t)
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{Partitioning: PartitionByKey(), Linger: LingerMax})
	ctx := testCtx(t)
	msgs := []Message{{Payload: []byte("1"), Key: []byte("a")}, {Payload: []byte("2"), Key: []byte("b")}, {Payload: []byte("3"), Key: []byte("a")}}
	if err := p.Send(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range s.batches() {
		got[b] = true
	}
	if len(got) != 2 || !got[`key "a":2`] || !got[`key "b":1`] {
		t.Fatalf("batches = %v", s.batches())
	}
	if err := p.Send(ctx, Message{Payload: []byte("x")}); CodeOf(err) != wire.ErrInvalidKeyValueLength {
		t.Fatalf("keyless message with key partitioning: %v", err)
	}
}

func TestProducerReportsFailedBatches(t *testing.T) {
	s := newSendRecorder(t)
	s.fail = func(wire.SendMessagesRequest) wire.ErrorCode { return wire.ErrTopicIDNotFound }
	var seen []*ProduceError
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{BatchMessages: 2, Linger: LingerMax,
		OnError: func(e *ProduceError) { seen = append(seen, e) }})
	ctx := testCtx(t)
	if err := p.Send(ctx, payloads(3)...); err != nil {
		t.Fatal(err)
	}
	err := p.Flush(ctx)
	var fe *FlushError
	var pe *ProduceError
	if !errors.As(err, &fe) || len(fe.Failed) != 2 || !errors.As(err, &pe) || CodeOf(pe.Err) != wire.ErrTopicIDNotFound || len(pe.Messages) != 2 {
		t.Fatalf("flush error = %v", err)
	}
	if len(seen) != 2 {
		t.Fatalf("OnError saw %d failures", len(seen))
	}
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("a flush after the report still fails: %v", err)
	}
}

func TestProducerBoundedBufferBlocksSend(t *testing.T) {
	s := newSendRecorder(t)
	hold := make(chan struct{})
	s.hold = hold
	p := newTestProducer(t, loggedIn(t, s.fakeServer), ProducerConfig{BufferMessages: 1, Linger: -1})
	ctx := testCtx(t)
	if err := p.Send(ctx, payloads(1)...); err != nil {
		t.Fatal(err)
	}
	<-s.got // the goroutine is inside SendMessages, held by the server
	if err := p.Send(ctx, payloads(1)...); err != nil {
		t.Fatal(err) // fills the one-slot buffer
	}
	full, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Send(full, payloads(1)...); !errors.Is(err, context.Canceled) {
		t.Fatalf("send into a full buffer = %v, want the context error", err)
	}
	close(hold)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.batches()); got != "[balanced:1 balanced:1]" {
		t.Fatalf("batches = %s", got)
	}
	if err := p.Send(ctx, payloads(1)...); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("send after close = %v", err)
	}
}

func TestProducerConfigAndMessageValidation(t *testing.T) {
	s := newSendRecorder(t)
	c := loggedIn(t, s.fakeServer)
	for _, cfg := range []ProducerConfig{{BatchMessages: BatchMessagesMax + 1}, {BatchBytes: -1}, {BufferMessages: BufferMessagesMax + 1}, {Linger: LingerMax + 1}} {
		if _, err := NewProducer(c, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	p := newTestProducer(t, c, ProducerConfig{})
	if err := p.Send(testCtx(t), Message{}); CodeOf(err) != wire.ErrEmptyMessagePayload {
		t.Fatalf("empty payload: %v", err)
	}
	big := Message{Payload: []byte("x"), UserHeaders: make([]byte, wire.BatchUserHeadersBytesMax+1)}
	if err := p.Send(testCtx(t), big); CodeOf(err) != wire.ErrTooBigUserHeaders {
		t.Fatalf("oversized headers: %v", err)
	}
}
