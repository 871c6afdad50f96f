package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// topicServer is a fake server holding one topic: a log of payloads per partition, stored
// offsets per partition, and a group assignment. resyncOnce answers the first poll with the
// re-sync sentinel.
type topicServer struct {
	*fakeServer
	t *testing.T

	mu         sync.Mutex
	logs       map[uint32][]string
	assignment []uint32
	stored     map[uint32]uint64
	polls      []wire.PollMessagesRequest
	codes      []wire.CommandCode // every command received, in order
	resyncOnce bool
	later      []uint32 // when set, the assignment after the first sync (a rebalance)
}

func newTopicServer(t *testing.T, logs map[uint32][]string, assignment []uint32) *topicServer {
	s := &topicServer{t: t, logs: logs, assignment: assignment, stored: map[uint32]uint64{}}
	s.fakeServer = newFakeServer(t, s.serve)
	return s
}

func (s *topicServer) serve(f wire.Frame) [][]byte {
	h := s.header(f)
	if h.Operation == wire.OpRegister {
		return [][]byte{registerReply(h, 3)}
	}
	code := h.Code
	if op, ok := wire.CodeForOperation(h.Operation); ok {
		code = op
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes = append(s.codes, code)
	switch code {
	case wire.CodeJoinConsumerGroup, wire.CodeLeaveConsumerGroup:
		return [][]byte{replyOK(h, nil)}
	case wire.CodeSyncConsumerGroup:
		a := wire.Assignment{Generation: 1, Partitions: s.assignment}
		if s.later != nil {
			s.assignment, s.later = s.later, nil
		}
		return [][]byte{replyOK(h, a.Append(nil))}
	case wire.CodeStoreConsumerOffset:
		req, err := wire.DecodeRequestBody(code, f.Body)
		if err != nil {
			s.t.Errorf("store offset body: %v", err)
			return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
		}
		r := req.(wire.ConsumerOffsetRequest)
		s.stored[r.Partition.ID] = r.Offset
		return [][]byte{replyOK(h, nil)}
	case wire.CodePollMessages:
		return [][]byte{replyOK(h, s.poll(f.Body))}
	}
	return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
}

// poll answers from the partition's log; Next continues after the stored offset.
func (s *topicServer) poll(body []byte) []byte {
	req, err := wire.DecodePollMessages(body)
	if err != nil {
		s.t.Errorf("poll body: %v", err)
		return nil
	}
	s.polls = append(s.polls, req)
	if s.resyncOnce {
		s.resyncOnce = false
		return wire.AppendPollMessagesReply(nil, wire.PollResyncPartitionID, 0, 0, nil)
	}
	p := req.Partition.ID
	log := s.logs[p]
	from := req.Strategy.Value
	if req.Strategy.Kind == wire.PollNext {
		from = 0
		if off, ok := s.stored[p]; ok {
			from = off + 1
		}
	}
	end := min(uint64(len(log)), from+uint64(req.Count))
	if from >= end {
		return wire.AppendPollMessagesReply(nil, p, uint64(len(log)), 0, nil)
	}
	var msgs []wire.BatchMessageInput
	for _, m := range log[from:end] {
		msgs = append(msgs, wire.BatchMessageInput{ID: [16]byte{1}, OriginTimestamp: 1, Payload: []byte(m)})
	}
	record, err := wire.AppendBatch(nil, msgs)
	if err == nil {
		err = wire.StampBatch(record, p, from, 1)
	}
	if err != nil {
		s.t.Errorf("build poll reply: %v", err)
		return nil
	}
	if req.AutoCommit {
		s.stored[p] = end - 1
	}
	return wire.AppendPollMessagesReply(nil, p, uint64(len(log)), uint32(len(msgs)), record)
}

func (s *topicServer) storedOffsets() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.stored)
}

func (s *topicServer) count(code wire.CommandCode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.codes {
		if c == code {
			n++
		}
	}
	return n
}

var testTopic = ConsumerConfig{Stream: wire.NumericID(1), Topic: wire.NumericID(1), BatchSize: 2, PollInterval: ConsumerPollIntervalMin}

// consumeN calls Next n times and returns "partition/offset:payload" of each message.
func consumeN(t *testing.T, k *Consumer, n int) []string {
	t.Helper()
	var out []string
	for range n {
		m, err := k.Next(testCtx(t))
		if err != nil {
			t.Fatalf("Next after %v: %v", out, err)
		}
		out = append(out, fmt.Sprintf("%d/%d:%s", m.Partition, m.Offset, m.Payload))
	}
	return out
}

func TestGroupConsumerAutoCommitAfterConsume(t *testing.T) {
	s := newTopicServer(t, map[uint32][]string{0: {"a", "b", "c"}, 1: {"x", "y"}}, []uint32{0, 1})
	s.resyncOnce = true
	ctx := testCtx(t)
	k, err := NewGroupConsumer(ctx, loggedIn(t, s.fakeServer), wire.NamedID("g"), testTopic)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(consumeN(t, k, 5))
	if got != "[0/0:a 0/1:b 1/0:x 1/1:y 0/2:c]" {
		t.Fatalf("consumed %s", got)
	}
	// Before each poll the previous batch was committed; Close commits the last one.
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.storedOffsets(); got != "map[0:2 1:1]" {
		t.Fatalf("stored offsets %s", got)
	}
	if s.count(wire.CodeJoinConsumerGroup) != 1 || s.count(wire.CodeLeaveConsumerGroup) != 1 || s.count(wire.CodeSyncConsumerGroup) != 2 {
		t.Fatalf("commands %v (want one join, two syncs after the re-sync sentinel, one leave)", s.codes)
	}
	for _, p := range s.polls {
		if p.Consumer.Kind != wire.ConsumerKindGroup || p.AutoCommit {
			t.Fatalf("poll %+v", p)
		}
	}
	if _, err := k.Next(ctx); !errors.Is(err, ErrConsumerClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestConsumerCommitOnPollLeavesStoringToServer(t *testing.T) {
	s := newTopicServer(t, map[uint32][]string{3: {"a", "b", "c"}}, nil)
	cfg := testTopic
	cfg.Commit = CommitOnPoll
	k, err := NewConsumer(loggedIn(t, s.fakeServer), wire.NumericID(9), []uint32{3}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	consumeN(t, k, 3)
	if err := k.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if s.count(wire.CodeStoreConsumerOffset) != 0 || s.count(wire.CodeLeaveConsumerGroup) != 0 {
		t.Fatalf("commands %v", s.codes)
	}
	if s.storedOffsets() != "map[3:2]" || !s.polls[0].AutoCommit || s.polls[0].Consumer.Kind != wire.ConsumerKindSingle {
		t.Fatalf("stored %s, polls %+v", s.storedOffsets(), s.polls)
	}
}

func TestConsumerManualCommit(t *testing.T) {
	s := newTopicServer(t, map[uint32][]string{0: {"a", "b"}}, nil)
	cfg := testTopic
	cfg.Commit = CommitManual
	k, err := NewConsumer(loggedIn(t, s.fakeServer), wire.NumericID(1), []uint32{0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	consumeN(t, k, 2)
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.Next(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next on an exhausted log with a cancelled context: %v", err)
	}
	if s.count(wire.CodeStoreConsumerOffset) != 0 {
		t.Fatal("manual mode stored an offset by itself")
	}
	if err := k.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.StoreOffset(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := s.storedOffsets(); got != "map[0:0]" || s.count(wire.CodeStoreConsumerOffset) != 2 {
		t.Fatalf("stored %s after Commit and StoreOffset", got)
	}
}

func TestConsumerConfigValidation(t *testing.T) {
	s := newTopicServer(t, nil, nil)
	c := loggedIn(t, s.fakeServer)
	for _, cfg := range []ConsumerConfig{{BatchSize: ConsumerBatchMax + 1}, {PollInterval: ConsumerPollIntervalMax + 1}, {Commit: 9}} {
		if _, err := NewConsumer(c, wire.NumericID(1), []uint32{0}, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := NewConsumer(c, wire.NumericID(1), nil, testTopic); err == nil {
		t.Error("a consumer of no partitions accepted")
	}
}

func TestGroupConsumerWithoutPartitionsKeepsAsking(t *testing.T) {
	s := newTopicServer(t, map[uint32][]string{0: {"a"}}, nil)
	s.later = []uint32{0}
	k, err := NewGroupConsumer(testCtx(t), loggedIn(t, s.fakeServer), wire.NumericID(1), testTopic)
	if err != nil {
		t.Fatal(err)
	}
	// The first sync assigns nothing; the consumer syncs again every round while empty-handed
	// and finds partition 0 after the rebalance.
	if got := fmt.Sprint(consumeN(t, k, 1)); got != "[0/0:a]" {
		t.Fatalf("consumed %s", got)
	}
	if n := s.count(wire.CodeSyncConsumerGroup); n != 2 {
		t.Fatalf("%d syncs", n)
	}
}
