package integration

import (
	"encoding/binary"
	"testing"

	"github.com/lodestream/lodestream/client"

	"github.com/lodestream/lodestream/wire"
	"github.com/zeebo/xxh3"
)

// rawSendBody encodes a SendMessages body and returns it with the byte
// position where its batch starts.
func rawSendBody(t *testing.T, stream, topic wire.Identifier, p wire.Partitioning, msgs []wire.BatchMessageInput) ([]byte, int) {
	t.Helper()
	body, err := wire.AppendSendMessages(nil, stream, topic, p, msgs)
	must(t, err)
	return body, 4 + int(binary.LittleEndian.Uint32(body))
}

func TestSendMessagesErrors(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	rawStatus := func(body []byte) wire.ErrorCode {
		t.Helper()
		status, _, _, err := c.Raw(ctx, wire.OpSendMessages, wire.CodeSendMessages, body)
		must(t, err)
		return status
	}
	msgs := makeMessages("e", 0, 3)

	t.Run("frame checksum 4027", func(t *testing.T) {
		body, at := rawSendBody(t, id(0), id(0), partitionID(0), msgs)
		body[at+wire.BatchHeaderSize+wire.BatchMessageHeaderSize] ^= 0xFF // first payload byte
		if got := rawStatus(body); got != wire.ErrInvalidMessageChecksum {
			t.Fatalf("status %s, want InvalidMessageChecksum", got)
		}
	})
	t.Run("batch checksum 4039", func(t *testing.T) {
		body, at := rawSendBody(t, id(0), id(0), partitionID(0), msgs)
		body[at+40] ^= 1
		if got := rawStatus(body); got != wire.ErrInvalidBatchChecksum {
			t.Fatalf("status %s, want InvalidBatchChecksum", got)
		}
	})
	t.Run("reserved bytes 4101", func(t *testing.T) {
		body, at := rawSendBody(t, id(0), id(0), partitionID(0), msgs)
		body[at+100] = 1
		if got := rawStatus(body); got != wire.ErrInvalidReservedField {
			t.Fatalf("status %s, want InvalidReservedField", got)
		}
	})
	t.Run("empty payload 4024", func(t *testing.T) {
		one := []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte{7}}}
		body, at := rawSendBody(t, id(0), id(0), partitionID(0), one)
		// Rewrite the only frame to an empty payload with valid checksums.
		body = body[:len(body)-1]
		frame := body[at+wire.BatchHeaderSize:]
		binary.LittleEndian.PutUint32(frame[36:], 0)
		binary.LittleEndian.PutUint64(frame[0:], xxh3.Hash(frame[8:]))
		binary.LittleEndian.PutUint64(body[at+32:], uint64(len(body)-at))
		must(t, wire.StampBatch(body[at:], 0, 0, 0)) // re-seal the batch checksum
		if got := rawStatus(body); got != wire.ErrEmptyMessagePayload {
			t.Fatalf("status %s, want EmptyMessagePayload", got)
		}
	})
	t.Run("user headers too big 4017", func(t *testing.T) {
		// The encoder refuses 100 001 header bytes: move one payload byte into the headers.
		big := []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("xy"), UserHeaders: make([]byte, 100_000)}}
		body, at := rawSendBody(t, id(0), id(0), partitionID(0), big)
		frame := body[at+wire.BatchHeaderSize:]
		binary.LittleEndian.PutUint32(frame[32:], 100_001)
		binary.LittleEndian.PutUint32(frame[36:], 1)
		binary.LittleEndian.PutUint64(frame[0:], xxh3.Hash(frame[8:]))
		must(t, wire.StampBatch(body[at:], 0, 0, 0))
		if got := rawStatus(body); got != wire.ErrTooBigUserHeaders {
			t.Fatalf("status %s, want TooBigUserHeaders", got)
		}
	})
	t.Run("unresolvable targets 20", func(t *testing.T) {
		for name, target := range map[string][3]uint32{"stream": {9, 0, 0}, "topic": {0, 9, 0}, "partition": {0, 0, 7}} {
			_, err := c.SendMessages(ctx, id(target[0]), id(target[1]), partitionID(target[2]), msgs)
			if got := client.CodeOf(err); got != wire.ErrResourceNotFound {
				t.Fatalf("unknown %s: %v, want ResourceNotFound", name, err)
			}
		}
		_, err := c.SendMessages(ctx, named("nope"), id(0), wire.Partitioning{Kind: wire.PartitioningBalanced}, msgs)
		expectCode(t, err, wire.ErrResourceNotFound)
	})
	t.Run("permission 41", func(t *testing.T) {
		_, err := c.CreateUser(ctx, "reader", "reader1", wire.UserActive, nil)
		must(t, err)
		reader := loginAs(t, srv.addr, "reader", "reader1")
		_, err = reader.SendMessages(ctx, id(0), id(0), partitionID(0), msgs)
		expectCode(t, err, wire.ErrUnauthorized)
		_, err = reader.PollMessages(ctx, wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
			Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 1})
		expectCode(t, err, wire.ErrUnauthorized)
	})
	t.Run("poll addressing 1009 2010 3007", func(t *testing.T) {
		poll := func(stream, topic, partition uint32) error {
			_, err := c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(stream), Topic: id(topic),
				Partition: wire.SomePartition(partition), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 1})
			return err
		}
		expectCode(t, poll(5, 0, 0), wire.ErrStreamIDNotFound)
		expectCode(t, poll(0, 5, 0), wire.ErrTopicIDNotFound)
		expectCode(t, poll(0, 0, 9), wire.ErrPartitionNotFound)
	})
	// Nothing above was stored: the partition is still empty and accepts a good batch at offset 0.
	if conf := sendOK(t, c, id(0), id(0), partitionID(0), msgs); conf.BaseOffset != 0 {
		t.Fatalf("first good batch at offset %d, want 0", conf.BaseOffset)
	}
}
