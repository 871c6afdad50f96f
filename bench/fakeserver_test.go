package bench

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// fakeServer is a small in-memory Iggy subset on 127.0.0.1:0 for hermetic tests of the actors: login,
// stream and topic create/get/delete, SendMessages (balanced or partition id) and PollMessages by
// offset. It stores whole stamped batches and answers polls with the batches from the offset on
// (trimming the first), count-limited by whole batches like a segment reader would.
type fakeServer struct {
	t  testing.TB
	ln net.Listener

	mu       sync.Mutex
	sessions uint64
	streams  map[uint32]*fakeStream
	nextID   uint32
	sends    int
	// sendDelay slows SendMessages (rate and duration tests).
	sendDelay time.Duration
	// sendStatus, when set, answers every SendMessages from the failSendAfter-th on with it.
	sendStatus    wire.ErrorCode
	failSendAfter int
	// sink answers SendMessages OK without decoding or storing (client-cost benchmarks).
	sink bool
	// refuseDurability answers a CreateTopic carrying "durability" with UnsupportedOptionKey.
	refuseDurability bool
}

type fakeStream struct {
	name       string
	topicName  string
	partitions [][][]byte // partition → stamped batch records
	counts     []uint64
	cursor     wire.BalancedCursor
	durability string
}

func newFakeServer(t testing.TB) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, streams: map[uint32]*fakeStream{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(conn) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) serve(conn net.Conn) {
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-stop:
		case <-time.After(30 * time.Second): // bound every test connection
			conn.Close()
		}
	}()
	for {
		f, err := wire.ReadFrame(conn, 0)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				var ne net.Error
				if !errors.As(err, &ne) {
					s.t.Logf("fake server read: %v", err)
				}
			}
			return
		}
		h, err := wire.DecodeRequestHeader(f.Header[:])
		if err != nil {
			s.t.Errorf("client sent an invalid header: %v", err)
			return
		}
		if _, err := conn.Write(s.handle(h, f.Body)); err != nil {
			return
		}
	}
}

func replyOK(req wire.RequestHeader, payload []byte) []byte {
	body := payload
	if req.Operation.ReplyOperation().ResultFramed(1) {
		body = append(wire.AppendResultOK(nil), payload...)
	}
	return wire.EncodeReply(nil, req, wire.OK, body)
}

// replyRejected answers a metadata request with a committed rejection in its result section.
func replyRejected(req wire.RequestHeader, code wire.ErrorCode) []byte {
	return wire.EncodeReply(nil, req, wire.OK, wire.AppendResultRejection(nil, code))
}

func (s *fakeServer) findStream(id wire.Identifier) (uint32, *fakeStream) {
	for k, st := range s.streams {
		if (id.Kind == wire.IdentNumeric && id.Numeric == k) || (id.Kind == wire.IdentString && id.Name == st.name) {
			return k, st
		}
	}
	return 0, nil
}

func (s *fakeServer) topicDetails(st *fakeStream) []byte {
	t := wire.TopicDetails{TopicHeader: wire.TopicHeader{ID: 0, Name: st.topicName, PartitionsCount: uint32(len(st.partitions))}}
	for p := range st.partitions {
		t.Partitions = append(t.Partitions, wire.Partition{ID: uint32(p), MessagesCount: st.counts[p], CurrentOffset: st.counts[p]})
	}
	return t.Append(nil)
}

func (s *fakeServer) handle(h wire.RequestHeader, body []byte) []byte {
	if h.Operation == wire.OpRegister {
		s.mu.Lock()
		s.sessions++
		session := s.sessions
		s.mu.Unlock()
		return replyOK(h, wire.RegisterReply{Session: session, ProtocolVersion: wire.ProtocolVersion, ServerVersion: "fake"}.Append(nil))
	}
	code := h.Code
	if c, ok := wire.CodeForOperation(h.Operation); ok {
		code = c
	}
	switch code {
	case wire.CodeSendMessages:
		return s.send(h, body)
	case wire.CodePollMessages:
		return s.poll(h, body)
	}
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return wire.EncodeReply(nil, h, wire.ErrInvalidCommand, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r := req.(type) {
	case wire.CreateStreamRequest:
		id := s.nextID
		s.nextID++
		s.streams[id] = &fakeStream{name: r.Name}
		return replyOK(h, (&wire.StreamDetails{Stream: wire.Stream{ID: id, Name: r.Name}}).Append(nil))
	case wire.CreateTopicRequest:
		_, st := s.findStream(r.Stream)
		if st == nil {
			return wire.EncodeReply(nil, h, wire.ErrStreamIDNotFound, nil)
		}
		if o, ok := r.Options.Get("durability"); ok {
			if s.refuseDurability {
				return replyRejected(h, wire.ErrUnsupportedOptionKey)
			}
			st.durability = string(o.Value)
		}
		st.topicName = r.Name
		st.partitions = make([][][]byte, r.PartitionsCount)
		st.counts = make([]uint64, r.PartitionsCount)
		return replyOK(h, s.topicDetails(st))
	case wire.IdentRequest:
		id, st := s.findStream(r.ID)
		switch {
		case r.Command == wire.CodeGetStream && st == nil:
			return replyOK(h, nil)
		case r.Command == wire.CodeGetStream:
			return replyOK(h, (&wire.StreamDetails{Stream: wire.Stream{ID: id, Name: st.name}}).Append(nil))
		case r.Command == wire.CodeDeleteStream && st != nil:
			delete(s.streams, id)
			return replyOK(h, nil)
		}
		return wire.EncodeReply(nil, h, wire.ErrStreamIDNotFound, nil)
	case wire.TopicRequest:
		if _, st := s.findStream(r.Stream); st != nil && r.Command == wire.CodeGetTopic {
			return replyOK(h, s.topicDetails(st))
		}
		return replyOK(h, nil)
	}
	return wire.EncodeReply(nil, h, wire.ErrFeatureUnavailable, nil)
}

func (s *fakeServer) send(h wire.RequestHeader, body []byte) []byte {
	if s.sink {
		return wire.EncodeReply(nil, h, wire.OK, nil)
	}
	req, err := wire.DecodeSendMessages(body)
	if err != nil {
		return wire.EncodeReply(nil, h, wire.ErrorCodeOf(err), nil)
	}
	s.mu.Lock()
	delay := s.sendDelay
	if s.sendStatus != wire.OK && s.sends >= s.failSendAfter {
		s.mu.Unlock()
		return wire.EncodeReply(nil, h, s.sendStatus, nil)
	}
	s.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends++
	_, st := s.findStream(req.Stream)
	if st == nil || len(st.partitions) == 0 {
		return wire.EncodeReply(nil, h, wire.ErrStreamIDNotFound, nil)
	}
	p, err := wire.ResolvePartition(req.Partitioning, uint32(len(st.partitions)), &st.cursor)
	if err != nil {
		return wire.EncodeReply(nil, h, wire.ErrorCodeOf(err), nil)
	}
	record := append([]byte(nil), req.Batch...)
	if err := wire.StampBatch(record, p, st.counts[p], uint64(time.Now().UnixMicro())); err != nil {
		return wire.EncodeReply(nil, h, wire.ErrorCodeOf(err), nil)
	}
	st.partitions[p] = append(st.partitions[p], record)
	st.counts[p] += uint64(req.MessagesCount)
	return wire.EncodeReply(nil, h, wire.OK, wire.AppendSendMessagesReply(nil, nil))
}

func (s *fakeServer) poll(h wire.RequestHeader, body []byte) []byte {
	req, err := wire.DecodePollMessages(body)
	if err != nil || req.Strategy.Kind != wire.PollOffset || !req.Partition.Present {
		return wire.EncodeReply(nil, h, wire.ErrInvalidCommand, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, st := s.findStream(req.Stream)
	if st == nil || int(req.Partition.ID) >= len(st.partitions) {
		return wire.EncodeReply(nil, h, wire.ErrStreamIDNotFound, nil)
	}
	var records []byte
	var count uint32
	for _, rec := range st.partitions[req.Partition.ID] {
		bh, _ := wire.DecodeBatchHeader(rec)
		if count >= req.Count || bh.LastOffset() < req.Strategy.Value {
			continue
		}
		first := uint32(0)
		if bh.BaseOffset < req.Strategy.Value {
			first = uint32(req.Strategy.Value - bh.BaseOffset)
		}
		n := min(bh.MessageCount-first, req.Count-count)
		records, err = wire.AppendBatchSlice(records, rec, first, n)
		if err != nil {
			s.t.Errorf("fake poll slice: %v", err)
		}
		count += n
	}
	return wire.EncodeReply(nil, h, wire.OK,
		wire.AppendPollMessagesReply(nil, req.Partition.ID, st.counts[req.Partition.ID], count, records))
}
