package client

import (
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestSendAndPollMessages(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		switch {
		case h.Operation == wire.OpRegister:
			return [][]byte{registerReply(h, 4)}
		case h.Operation == wire.OpSendMessages:
			req, err := wire.DecodeSendMessages(f.Body)
			if err != nil {
				t.Errorf("send body: %v", err)
				return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
			}
			return [][]byte{replyOK(h, wire.AppendSendMessagesReply(nil, &wire.SendConfirmation{
				StreamID: req.Stream.Numeric, TopicID: req.Topic.Numeric, PartitionID: req.Partitioning.PartitionID, BaseOffset: 10}))}
		case h.Code == wire.CodePollMessages:
			if _, err := wire.DecodePollMessages(f.Body); err != nil {
				t.Errorf("poll body: %v", err)
			}
			return [][]byte{replyOK(h, wire.AppendPollMessagesReply(nil, 2, 9, 0, nil))}
		}
		return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	msgs := []wire.BatchMessageInput{{ID: [16]byte{1}, OriginTimestamp: 100, Payload: []byte("hello")}}
	conf, err := c.SendMessages(ctx, wire.NumericID(1), wire.NumericID(2), wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 2}, msgs)
	if err != nil || len(conf) != 1 || conf[0] != (wire.SendConfirmation{StreamID: 1, TopicID: 2, PartitionID: 2, BaseOffset: 10}) {
		t.Fatalf("send: %+v %v", conf, err)
	}
	r, err := c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)},
		Stream: wire.NumericID(1), Topic: wire.NumericID(2), Partition: wire.SomePartition(2), Strategy: wire.PollingStrategy{Kind: wire.PollNext}, Count: 10})
	if err != nil || r.PartitionID != 2 || r.CurrentOffset != 9 || len(r.Messages) != 0 {
		t.Fatalf("poll: %+v %v", r, err)
	}
	frames := s.received()
	// A send carries its own request id with the top bit set (server retry recognition), not the
	// metadata counter.
	if h := s.header(frames[1]); h.Request != sendRequestFlag|1 || h.Session != 4 {
		t.Fatalf("send stamped %+v", h)
	}
	if c.NextRequestID() != 1 {
		t.Fatal("partition-plane send consumed a request id")
	}
	if _, err := c.SendMessages(ctx, wire.NumericID(1), wire.NumericID(2), wire.Partitioning{Kind: wire.PartitioningBalanced}, nil); err == nil {
		t.Fatal("empty batch accepted")
	}
}
