package wire

import "testing"

// benchBatch is 1000 messages of 1000 bytes each, the reference load of the brief.
func benchBatch(b *testing.B) []byte {
	msgs := make([]BatchMessageInput, 1000)
	payload := make([]byte, 1000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	for i := range msgs {
		msgs[i] = BatchMessageInput{OriginTimestamp: uint64(i), Payload: payload}
	}
	batch, err := AppendBatch(nil, msgs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkVerifyBatch(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStampBatch(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	offset := uint64(0)
	for b.Loop() {
		if err := StampBatch(batch, 1, offset, offset); err != nil {
			b.Fatal(err)
		}
		offset += 1000
	}
}

func BenchmarkAppendBatch(b *testing.B) {
	msgs := make([]BatchMessageInput, 1000)
	for i := range msgs {
		msgs[i] = BatchMessageInput{OriginTimestamp: uint64(i), Payload: make([]byte, 1000)}
	}
	buf := make([]byte, 0, 2<<20)
	b.SetBytes(int64(1000 * (1000 + BatchMessageHeaderSize)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendBatch(buf[:0], msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSliceBatch(b *testing.B) {
	batch := benchBatch(b)
	buf := make([]byte, 0, len(batch))
	b.SetBytes(int64(len(batch) / 2))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendBatchSlice(buf[:0], batch, 500, 500); err != nil {
			b.Fatal(err)
		}
	}
}
