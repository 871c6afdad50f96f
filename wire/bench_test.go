package wire

import "testing"

func BenchmarkDecodeRequestHeader(b *testing.B) {
	frame := EncodeRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Session: 1, Operation: OpCreateTopic}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequestHeader(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeReply(b *testing.B) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Session: 1, Operation: OpCreateStream}
	body := AppendResultOK(nil)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeReply(buf[:0], req, OK, body)
	}
}

func BenchmarkDecodeCreateTopic(b *testing.B) {
	body, _ := EncodeRequestBody(CreateTopicRequest{Stream: NamedID("stream"), PartitionsCount: 3, Name: "topic",
		Options: Options{OptionUint64(OptSegmentSize, 1<<20), OptionString(OptMessageExpiry, "1h")}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCreateTopic(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTopicDetails100Partitions(b *testing.B) {
	td := TopicDetails{TopicHeader: TopicHeader{Name: "t", MessageExpiry: Unlimited, MaxTopicSize: Unlimited, Compression: 1}}
	for i := 0; i < 100; i++ {
		td.Partitions = append(td.Partitions, Partition{ID: uint32(i)})
	}
	body := td.Append(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeTopicDetails(body); err != nil {
			b.Fatal(err)
		}
	}
}
