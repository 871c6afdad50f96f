package wire

import (
	"bytes"
	"testing"
)

func fuzzSeedBatch(f *testing.F) []byte {
	b, err := AppendBatch(nil, testMessages())
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzBatchVerify: VerifyBatch never panics; whatever it accepts can be stamped, still verifies, and
// every slice of it decodes as a poll record with the right absolute offsets.
func FuzzBatchVerify(f *testing.F) {
	f.Add(fuzzSeedBatch(f))
	f.Add(make([]byte, BatchHeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := VerifyBatch(b)
		if err != nil {
			if ErrorCodeOf(err) == OK {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		if err := StampBatch(b, 9, 1000, 7); err != nil {
			t.Fatalf("StampBatch of a verified batch: %v", err)
		}
		if _, err := VerifyBatch(b); err != nil {
			t.Fatalf("stamped batch no longer verifies: %v", err)
		}
		for first := uint32(0); first < h.MessageCount && first < 4; first++ {
			s, err := SliceBatch(b, first, h.MessageCount-first)
			if err != nil {
				t.Fatalf("slice from %d: %v", first, err)
			}
			r, err := DecodePollMessagesReply(AppendPollMessagesReply(nil, 9, 0, h.MessageCount-first, s))
			if err != nil {
				t.Fatalf("slice from %d does not decode: %v", first, err)
			}
			if r.Messages[0].Offset != 1000+uint64(first) {
				t.Fatalf("slice from %d starts at offset %d", first, r.Messages[0].Offset)
			}
		}
	})
}

// FuzzSendMessagesBody: decoding never panics and an accepted body re-encodes to the same bytes.
func FuzzSendMessagesBody(f *testing.F) {
	body, err := AppendSendMessages(nil, NumericID(1), NamedID("t"), Partitioning{Kind: PartitioningMessagesKey,
		Key: []byte("key")}, testMessages())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte{12, 0, 0, 0, 2, 1, 'a', 2, 1, 'b', 1, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeSendMessages(b)
		if err != nil {
			return
		}
		again, err := AppendSendMessagesBatch(nil, req.Stream, req.Topic, req.Partitioning, req.Batch)
		if err != nil {
			t.Fatalf("re-encode of an accepted body: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encode differs\n got %x\nwant %x", again, b)
		}
	})
}

// FuzzPollMessagesBody: the request and reply decoders never panic, and an accepted request survives an
// encode/decode round trip (bytes may differ: an absent partition's ignored id is re-encoded as 0).
func FuzzPollMessagesBody(f *testing.F) {
	req := PollMessagesRequest{Consumer: Consumer{Kind: ConsumerKindSingle, ID: NumericID(1)},
		Stream: NumericID(1), Topic: NamedID("t"), Strategy: PollingStrategy{Kind: PollNext}, Count: 5}
	f.Add(req.Append(nil))
	batch := fuzzSeedBatch(f)
	f.Add(AppendPollMessagesReply(nil, 0, 1, 2, batch))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodePollMessages(b); err == nil {
			again, err := DecodePollMessages(r.Append(nil))
			if err != nil || again != r {
				t.Fatalf("round trip: %+v, %v; want %+v", again, err, r)
			}
		}
		if r, err := DecodePollMessagesReply(b); err == nil && uint64(len(r.Messages)) != uint64(r.MessagesCount) {
			t.Fatalf("accepted a reply with %d messages declaring %d", len(r.Messages), r.MessagesCount)
		}
	})
}
