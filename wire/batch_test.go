package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/zeebo/xxh3"
)

// handBuiltFrame writes one message frame field by field at the offsets of wire-protocol.md §4.4.3 and
// seals its checksum, independently of the package encoder.
func handBuiltFrame(id byte, offsetDelta, timestampDelta uint32, payload, headers []byte) []byte {
	f := make([]byte, 48+len(payload)+len(headers))
	for i := 0; i < 16; i++ {
		f[8+i] = id + byte(i)
	}
	binary.LittleEndian.PutUint32(f[24:], offsetDelta)
	binary.LittleEndian.PutUint32(f[28:], timestampDelta)
	binary.LittleEndian.PutUint32(f[32:], uint32(len(headers)))
	binary.LittleEndian.PutUint32(f[36:], uint32(len(payload)))
	copy(f[48:], payload)
	copy(f[48+len(payload):], headers)
	binary.LittleEndian.PutUint64(f[0:], xxh3.Hash(f[8:]))
	return f
}

// handBuiltBatch assembles a batch record per §4.4.2 and §4.4.4: the batch checksum is XXH3-64 of the
// 44 header-field bytes followed by each frame's stored checksum, hashed in one shot.
func handBuiltBatch(partition, baseOffset, baseTS, originTS uint64, frames ...[]byte) []byte {
	blob := bytes.Join(frames, nil)
	b := make([]byte, 256+len(blob))
	binary.LittleEndian.PutUint64(b[0:], partition)
	binary.LittleEndian.PutUint64(b[8:], baseOffset)
	binary.LittleEndian.PutUint64(b[16:], baseTS)
	binary.LittleEndian.PutUint64(b[24:], originTS)
	binary.LittleEndian.PutUint64(b[32:], uint64(len(b)))
	binary.LittleEndian.PutUint32(b[48:], uint32(len(frames)))
	copy(b[256:], blob)
	input := append([]byte(nil), b[0:40]...)
	input = append(input, b[48:52]...)
	for _, f := range frames {
		input = append(input, f[0:8]...)
	}
	binary.LittleEndian.PutUint64(b[40:], xxh3.Hash(input))
	return b
}

func testMessages() []BatchMessageInput {
	var id0, id1 [16]byte
	for i := range id0 {
		id0[i] = 0x10 + byte(i)
		id1[i] = 0x20 + byte(i)
	}
	return []BatchMessageInput{
		{ID: id0, OriginTimestamp: 1_700_000_000_000_500, Payload: []byte("hello")},
		{ID: id1, OriginTimestamp: 1_700_000_000_000_000, Payload: []byte("world!"),
			UserHeaders: []byte{2, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'}},
	}
}

func TestAppendBatchMatchesHandBuiltSpecBytes(t *testing.T) {
	msgs := testMessages()
	got, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatalf("AppendBatch: %v", err)
	}
	want := handBuiltBatch(0, 0, 0, 1_700_000_000_000_000,
		handBuiltFrame(0x10, 0, 500, msgs[0].Payload, nil),
		handBuiltFrame(0x20, 1, 0, msgs[1].Payload, msgs[1].UserHeaders))
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded batch differs from the hand-built spec bytes\n got %x\nwant %x", got, want)
	}
	// Pinned digests: a change here means the checksum scheme changed and stored data would not verify.
	if sum := binary.LittleEndian.Uint64(got[40:]); sum != goldenBatchChecksum {
		t.Errorf("batch checksum %#016x, golden %#016x", sum, uint64(goldenBatchChecksum))
	}
	if sum := binary.LittleEndian.Uint64(got[256:]); sum != goldenFrame0Checksum {
		t.Errorf("frame 0 checksum %#016x, golden %#016x", sum, uint64(goldenFrame0Checksum))
	}
	h, err := VerifyBatch(got)
	if err != nil {
		t.Fatalf("VerifyBatch of the encoder's own batch: %v", err)
	}
	if h.MessageCount != 2 || h.OriginTimestamp != 1_700_000_000_000_000 || h.BatchLength != uint64(len(got)) {
		t.Fatalf("decoded header %+v", h)
	}
}

func TestStreamingBatchChecksumEqualsOneShotOverManyFrames(t *testing.T) {
	// More than 240 bytes of checksum input takes xxh3's long path; the streaming hasher must agree.
	msgs := make([]BatchMessageInput, 100)
	for i := range msgs {
		msgs[i] = BatchMessageInput{OriginTimestamp: uint64(i), Payload: []byte{byte(i), 1, 2}}
	}
	b, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	input := append([]byte(nil), b[0:40]...)
	input = append(input, b[48:52]...)
	it := NewBatchIter(b)
	for it.Next() {
		input = append(input, it.Message().Frame[:8]...)
	}
	if want, got := xxh3.Hash(input), binary.LittleEndian.Uint64(b[40:]); want != got {
		t.Fatalf("streamed %#x, one-shot %#x", got, want)
	}
}

func TestDecodeBatchHeaderRoundTrip(t *testing.T) {
	h := BatchHeader{PartitionID: 7, BaseOffset: 8, BaseTimestamp: 9, OriginTimestamp: 10, BatchLength: 300,
		BatchChecksum: 11, MessageCount: 12}
	b := make([]byte, BatchHeaderSize)
	for i := range b {
		b[i] = 0xEE // EncodeInto must clear the reserved region
	}
	h.EncodeInto(b)
	got, err := DecodeBatchHeader(b)
	if err != nil || got != h {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
}

func resealFrame(b []byte, frameAt int) {
	end := frameAt + 48 + int(binary.LittleEndian.Uint32(b[frameAt+36:])) + int(binary.LittleEndian.Uint32(b[frameAt+32:]))
	binary.LittleEndian.PutUint64(b[frameAt:], xxh3.Hash(b[frameAt+8:end]))
}

func resealBatch(t *testing.T, b []byte) {
	t.Helper()
	h := BatchHeader{
		PartitionID: binary.LittleEndian.Uint64(b[0:]), BaseOffset: binary.LittleEndian.Uint64(b[8:]),
		BaseTimestamp: binary.LittleEndian.Uint64(b[16:]), OriginTimestamp: binary.LittleEndian.Uint64(b[24:]),
		BatchLength: binary.LittleEndian.Uint64(b[32:]), MessageCount: binary.LittleEndian.Uint32(b[48:]),
	}
	sum, err := ComputeBatchChecksum(h, b)
	if err != nil {
		t.Fatalf("reseal: %v", err)
	}
	binary.LittleEndian.PutUint64(b[40:], sum)
}

func TestVerifyBatchRejectsWithTheRightCode(t *testing.T) {
	base, err := AppendBatch(nil, testMessages())
	if err != nil {
		t.Fatal(err)
	}
	frame1 := 256 + 48 + 5
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		code   ErrorCode
	}{
		{"payload bit flip", func(b []byte) []byte { b[256+48] ^= 1; return b }, ErrInvalidMessageChecksum},
		{"user header bit flip", func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }, ErrInvalidMessageChecksum},
		{"frame checksum flip", func(b []byte) []byte { b[256] ^= 1; return b }, ErrInvalidMessageChecksum},
		{"batch checksum flip", func(b []byte) []byte { b[40] ^= 1; return b }, ErrInvalidBatchChecksum},
		{"origin timestamp changed", func(b []byte) []byte { b[24] ^= 1; return b }, ErrInvalidBatchChecksum},
		{"header reserved byte", func(b []byte) []byte { b[255] = 1; return b }, ErrInvalidReservedField},
		{"frame reserved byte", func(b []byte) []byte { b[256+47] = 1; resealFrame(b, 256); return b }, ErrInvalidReservedField},
		{"message_count zero", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[48:], 0); return b }, ErrInvalidMessagesCount},
		{"message_count too high", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[48:], 3); return b }, ErrInvalidMessagesCount},
		{"message_count too low", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[48:], 1); return b }, ErrInvalidMessagesCount},
		{"batch_length short of header", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[32:], 255); return b }, ErrInvalidMessagePayloadLength},
		{"batch_length beyond bytes", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[32:], uint64(len(b)+1)); return b }, ErrInvalidMessagePayloadLength},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, ErrInvalidMessagePayloadLength},
		{"truncated frame", func(b []byte) []byte {
			b = b[:len(b)-3]
			binary.LittleEndian.PutUint64(b[32:], uint64(len(b)))
			return b
		}, ErrInvalidMessagePayloadLength},
		{"truncated header", func(b []byte) []byte { return b[:200] }, ErrInvalidMessagePayloadLength},
		{"offset delta not the index", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[frame1+24:], 7)
			resealFrame(b, frame1)
			resealBatch(t, b)
			return b
		}, ErrInvalidOffset},
		{"user headers over the limit", func(b []byte) []byte {
			// Frame 1 claims 100 001 header bytes; the batch is extended to hold them.
			extra := BatchUserHeadersBytesMax + 1 - 12
			b = append(b, make([]byte, extra)...)
			binary.LittleEndian.PutUint32(b[frame1+32:], BatchUserHeadersBytesMax+1)
			binary.LittleEndian.PutUint64(b[32:], uint64(len(b)))
			resealFrame(b, frame1)
			resealBatch(t, b)
			return b
		}, ErrTooBigUserHeaders},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(append([]byte(nil), base...))
			_, err := VerifyBatch(b)
			if !errors.Is(err, tc.code) {
				t.Fatalf("VerifyBatch error %v, want code %v", err, tc.code)
			}
			var be *BatchError
			if !errors.As(err, &be) || be.Detail == "" {
				t.Fatalf("error %v is not a *BatchError with detail", err)
			}
			if ErrorCodeOf(err) != tc.code {
				t.Fatalf("ErrorCodeOf = %v, want %v", ErrorCodeOf(err), tc.code)
			}
		})
	}
}

func TestVerifyBatchRejectsEmptyAndOversizedPayloads(t *testing.T) {
	empty := handBuiltBatch(0, 0, 0, 5, handBuiltFrame(1, 0, 0, nil, nil))
	if _, err := VerifyBatch(empty); !errors.Is(err, ErrEmptyMessagePayload) {
		t.Fatalf("empty payload: %v", err)
	}
	big := make([]byte, BatchPayloadBytesMax+1)
	oversized := handBuiltBatch(0, 0, 0, 5, handBuiltFrame(1, 0, 0, big, nil))
	if _, err := VerifyBatch(oversized); !errors.Is(err, ErrTooBigMessagePayload) {
		t.Fatalf("oversized payload: %v", err)
	}
	if _, err := AppendBatch(nil, []BatchMessageInput{{Payload: big}}); !errors.Is(err, ErrTooBigMessagePayload) {
		t.Fatalf("AppendBatch oversized payload: %v", err)
	}
	if _, err := AppendBatch(nil, []BatchMessageInput{{}}); !errors.Is(err, ErrEmptyMessagePayload) {
		t.Fatalf("AppendBatch empty payload: %v", err)
	}
	if _, err := AppendBatch(nil, nil); !errors.Is(err, ErrInvalidMessagesCount) {
		t.Fatalf("AppendBatch no messages: %v", err)
	}
	far := []BatchMessageInput{{OriginTimestamp: 0, Payload: []byte{1}}, {OriginTimestamp: 1 << 32, Payload: []byte{1}}}
	if _, err := AppendBatch(nil, far); !errors.Is(err, ErrInvalidMessageTimestampDelta) {
		t.Fatalf("AppendBatch timestamp delta: %v", err)
	}
}

func TestStampBatchResealsAndKeepsFrames(t *testing.T) {
	b, err := AppendBatch(nil, testMessages())
	if err != nil {
		t.Fatal(err)
	}
	frames := append([]byte(nil), b[256:]...)
	if err := StampBatch(b, 3, 1000, 1_800_000_000_000_000); err != nil {
		t.Fatalf("StampBatch: %v", err)
	}
	h, err := VerifyBatch(b)
	if err != nil {
		t.Fatalf("stamped batch does not verify: %v", err)
	}
	if h.PartitionID != 3 || h.BaseOffset != 1000 || h.BaseTimestamp != 1_800_000_000_000_000 {
		t.Fatalf("stamped header %+v", h)
	}
	if !bytes.Equal(b[256:], frames) {
		t.Fatal("StampBatch changed frame bytes")
	}
	want := handBuiltBatch(3, 1000, 1_800_000_000_000_000, h.OriginTimestamp,
		handBuiltFrame(0x10, 0, 500, []byte("hello"), nil),
		handBuiltFrame(0x20, 1, 0, []byte("world!"), testMessages()[1].UserHeaders))
	if !bytes.Equal(b, want) {
		t.Fatal("stamped batch differs from the hand-built stamped batch")
	}
	if err := StampBatch(b[:100], 1, 1, 1); err == nil {
		t.Fatal("StampBatch accepted a truncated batch")
	}
}

func TestSliceBatchKeepsBaseOffsetAndReseals(t *testing.T) {
	msgs := make([]BatchMessageInput, 5)
	for i := range msgs {
		msgs[i] = BatchMessageInput{OriginTimestamp: 100 + uint64(i), Payload: []byte{byte('a' + i)}}
	}
	b, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := StampBatch(b, 1, 50, 999); err != nil {
		t.Fatal(err)
	}
	s, err := SliceBatch(b, 1, 3)
	if err != nil {
		t.Fatalf("SliceBatch: %v", err)
	}
	h, err := DecodeBatchHeader(s)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 50 || h.MessageCount != 3 || h.BatchLength != uint64(len(s)) || h.BaseTimestamp != 999 {
		t.Fatalf("slice header %+v", h)
	}
	reply := AppendPollMessagesReply(nil, 1, 54, 3, s)
	r, err := DecodePollMessagesReply(reply)
	if err != nil {
		t.Fatalf("slice does not decode as a poll record: %v", err)
	}
	for i, m := range r.Messages {
		if m.Offset != uint64(51+i) || m.Payload[0] != byte('b'+i) || m.OriginTimestamp != uint64(101+i) || m.Timestamp != 999 {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	whole, err := SliceBatch(b, 0, 5)
	if err != nil || !bytes.Equal(whole, b) {
		t.Fatalf("whole-batch slice differs: %v", err)
	}
	for _, bad := range [][2]uint32{{0, 0}, {4, 2}, {5, 1}} {
		if _, err := SliceBatch(b, bad[0], bad[1]); !errors.Is(err, ErrInvalidMessagesCount) {
			t.Fatalf("slice %v: %v", bad, err)
		}
	}
}

func TestBatchIterAndVerifyDoNotAllocate(t *testing.T) {
	b, err := AppendBatch(nil, testMessages())
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		it := NewBatchIter(b)
		for it.Next() {
			_ = it.Message().Payload
		}
	})
	if allocs != 0 {
		t.Fatalf("iteration allocated %.1f times per run", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := VerifyBatch(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("VerifyBatch allocated %.1f times per run", allocs)
	}
}

// Golden digests of the batch in TestAppendBatchMatchesHandBuiltSpecBytes (filled from the first run
// of the hand-built encoder, which is independent of the package encoder).
const (
	goldenBatchChecksum  = 0x5fdbd0f5c364fad6
	goldenFrame0Checksum = 0xa44f9135595d65c1
)
