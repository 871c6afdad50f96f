package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

func sendBody(t *testing.T) []byte {
	t.Helper()
	body, err := AppendSendMessages(nil, NumericID(1), NamedID("orders"),
		Partitioning{Kind: PartitioningPartitionID, PartitionID: 2}, testMessages())
	if err != nil {
		t.Fatalf("AppendSendMessages: %v", err)
	}
	return body
}

func TestSendMessagesBodyLayoutAndRoundTrip(t *testing.T) {
	body := sendBody(t)
	// metadata = Ident(6) + Ident(2+6) + Partitioning(6) + count(4) = 24
	if got := binary.LittleEndian.Uint32(body); got != 24 {
		t.Fatalf("metadata_length %d, want 24", got)
	}
	wantPrefix := []byte{24, 0, 0, 0, 1, 4, 1, 0, 0, 0, 2, 6, 'o', 'r', 'd', 'e', 'r', 's', 2, 4, 2, 0, 0, 0, 2, 0, 0, 0}
	if !bytes.Equal(body[:len(wantPrefix)], wantPrefix) {
		t.Fatalf("metadata bytes %x, want %x", body[:len(wantPrefix)], wantPrefix)
	}
	req, err := DecodeSendMessages(body)
	if err != nil {
		t.Fatalf("DecodeSendMessages: %v", err)
	}
	if req.Stream != NumericID(1) || req.Topic.Name != "orders" || req.Partitioning.PartitionID != 2 ||
		req.MessagesCount != 2 || req.Header.MessageCount != 2 || len(req.Batch) != len(body)-28 {
		t.Fatalf("decoded %+v", req)
	}
	again, err := AppendSendMessagesBatch(nil, req.Stream, req.Topic, req.Partitioning, req.Batch)
	if err != nil || !bytes.Equal(again, body) {
		t.Fatalf("re-encode differs: %v", err)
	}
	// The batch aliases the body, so stamping it in place edits the body the server keeps.
	if err := StampBatch(req.Batch, 2, 10, 20); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint64(body[28+8:]) != 10 {
		t.Fatal("Batch does not alias the body")
	}
}

func TestDecodeSendMessagesRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		code   ErrorCode
	}{
		{"empty body", func(b []byte) []byte { return nil }, ErrInvalidCommand},
		{"metadata_length too long", func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 1<<30); return b }, ErrInvalidCommand},
		{"metadata_length off by one", func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 25); return b }, ErrInvalidCommand},
		{"metadata count mismatch", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24:], 3); return b }, ErrInvalidMessagesCount},
		{"metadata count zero", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24:], 0); return b }, ErrInvalidMessagesCount},
		{"bad stream identifier", func(b []byte) []byte { b[4] = 9; return b }, ErrInvalidCommand},
		{"no batch", func(b []byte) []byte { return b[:28] }, ErrInvalidMessagePayloadLength},
		{"trailing byte after batch", func(b []byte) []byte { return append(b, 0) }, ErrInvalidMessagePayloadLength},
		{"payload bit flip", func(b []byte) []byte { b[28+256+48] ^= 4; return b }, ErrInvalidMessageChecksum},
		{"batch checksum flip", func(b []byte) []byte { b[28+40] ^= 4; return b }, ErrInvalidBatchChecksum},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSendMessages(tc.mutate(sendBody(t)))
			if err == nil || ErrorCodeOf(err) != tc.code {
				t.Fatalf("error %v (code %v), want %v", err, ErrorCodeOf(err), tc.code)
			}
		})
	}
}

func TestSendMessagesReplyEncodings(t *testing.T) {
	c := &SendConfirmation{StreamID: 1, TopicID: 2, PartitionID: 3, BaseOffset: 0x0102030405060708}
	b := AppendSendMessagesReply(nil, c)
	want := []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}
	if !bytes.Equal(b, want) {
		t.Fatalf("reply %x, want %x", b, want)
	}
	got, err := DecodeSendMessagesReply(b)
	if err != nil || len(got) != 1 || got[0] != *c {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	if b := AppendSendMessagesReply(nil, nil); !bytes.Equal(b, []byte{0, 0, 0, 0}) {
		t.Fatalf("count-0 reply %x", b)
	}
	if got, err := DecodeSendMessagesReply([]byte{0, 0, 0, 0}); err != nil || len(got) != 0 {
		t.Fatalf("count 0: %v %v", got, err)
	}
	for _, bad := range [][]byte{{1, 0}, append(want, 0), want[:23]} {
		if _, err := DecodeSendMessagesReply(bad); err == nil {
			t.Fatalf("accepted malformed reply %x", bad)
		}
	}
}

func TestPollMessagesRequestRoundTrip(t *testing.T) {
	req := PollMessagesRequest{
		Consumer:   Consumer{Kind: ConsumerKindGroup, ID: NamedID("g")},
		Stream:     NumericID(1),
		Topic:      NumericID(2),
		Partition:  SomePartition(4),
		Strategy:   PollingStrategy{Kind: PollTimestamp, Value: 77},
		Count:      10,
		AutoCommit: true,
	}
	b := req.Append(nil)
	want := []byte{2, 2, 1, 'g', 1, 4, 1, 0, 0, 0, 1, 4, 2, 0, 0, 0, 1, 4, 0, 0, 0, 2, 77, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 1}
	if !bytes.Equal(b, want) {
		t.Fatalf("body %v\nwant %v", b, want)
	}
	got, err := DecodePollMessages(b)
	if err != nil || got.Consumer.ID.Name != "g" || got.Partition != req.Partition || got.Strategy != req.Strategy ||
		got.Count != 10 || !got.AutoCommit {
		t.Fatalf("decode %+v, %v", got, err)
	}
	if got, err := DecodePollMessages(append(b[:len(b):len(b)], 0, 0, 0, 0)); err != nil || got.Count != 10 {
		t.Fatalf("trailing bytes are ignored (as upstream): %+v, %v", got, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], func() []byte {
		c := append([]byte(nil), b...)
		c[len(c)-1] = 2 // auto_commit must be 0 or 1
		return c
	}()} {
		if _, err := DecodePollMessages(bad); err == nil || ErrorCodeOf(err) != ErrInvalidCommand {
			t.Fatalf("accepted malformed poll body: %v", err)
		}
	}
}

func TestDecodePollMessagesReplyStrictChecks(t *testing.T) {
	batch, err := AppendBatch(nil, testMessages())
	if err != nil {
		t.Fatal(err)
	}
	if err := StampBatch(batch, 0, 40, 5000); err != nil {
		t.Fatal(err)
	}
	good := AppendPollMessagesReply(nil, 0, 41, 2, batch)
	r, err := DecodePollMessagesReply(good)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if r.CurrentOffset != 41 || len(r.Messages) != 2 || r.Messages[1].Offset != 41 ||
		string(r.Messages[1].Payload) != "world!" || r.Messages[0].OriginTimestamp != testMessages()[0].OriginTimestamp {
		t.Fatalf("decoded %+v", r)
	}
	reserved := make([]byte, PollMessagesReplyPrefixSize, PollMessagesReplyPrefixSize+len(batch))
	reserved = append(reserved, batch...)
	PutPollMessagesReplyPrefix(reserved, 0, 41, 2)
	if !bytes.Equal(reserved, good) {
		t.Fatal("PutPollMessagesReplyPrefix differs from AppendPollMessagesReply")
	}
	empty := AppendPollMessagesReply(nil, PollResyncPartitionID, 0, 0, nil)
	if r, err := DecodePollMessagesReply(empty); err != nil || r.PartitionID != PollResyncPartitionID || len(empty) != 16 {
		t.Fatalf("empty reply: %+v %v", r, err)
	}
	bad := map[string][]byte{
		"short prefix":     good[:15],
		"count mismatch":   AppendPollMessagesReply(nil, 0, 41, 3, batch),
		"record truncated": good[:len(good)-1],
		"reserved byte":    func() []byte { b := append([]byte(nil), good...); b[16+100] = 1; return b }(),
		"stale checksum":   func() []byte { b := append([]byte(nil), good...); b[16+8] ^= 1; return b }(),
	}
	for name, b := range bad {
		if _, err := DecodePollMessagesReply(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodePollMessagesReply(bad["stale checksum"]); !errors.Is(err, ErrInvalidBatchChecksum) {
		t.Errorf("stale checksum error %v", err)
	}
}

// upstreamProduceBody is the SendMessages body the upstream Rust encoder produces (pinned as a golden
// vector by the Go SDK, foreign/go/internal/command/message_test.go) for stream 1, topic 2, balanced
// partitioning and two messages: {id 7, origin 1000, "first-payload"} and {id 8, origin 1050,
// "second-payload", user headers "user-header-bytes"}.
const upstreamProduceBody = "12000000010401000000010402000000010002000000000000000000000000000000000000000000000000000000e8030000000000008c01000000000000a91f38c86307267c02000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000bfd2b9205a759675070000000000000000000000000000000000000000000000000000000d000000000000000000000066697273742d7061796c6f6164d66b7e1c758eb7c0080000000000000000000000000000000100000032000000110000000e00000000000000000000007365636f6e642d7061796c6f6164757365722d6865616465722d6279746573"

func TestSendMessagesMatchesTheUpstreamEncoderByteForByte(t *testing.T) {
	want, err := hex.DecodeString(upstreamProduceBody)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendSendMessages(nil, NumericID(1), NumericID(2), Partitioning{Kind: PartitioningBalanced},
		[]BatchMessageInput{
			{ID: [16]byte{7}, OriginTimestamp: 1000, Payload: []byte("first-payload")},
			{ID: [16]byte{8}, OriginTimestamp: 1050, Payload: []byte("second-payload"),
				UserHeaders: []byte("user-header-bytes")},
		})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded body differs from the upstream golden vector\n got %x\nwant %x", got, want)
	}
	req, err := DecodeSendMessages(want)
	if err != nil {
		t.Fatalf("upstream body rejected: %v", err)
	}
	if req.MessagesCount != 2 || req.Header.OriginTimestamp != 1000 || req.Partitioning.Kind != PartitioningBalanced {
		t.Fatalf("decoded %+v", req)
	}
}
