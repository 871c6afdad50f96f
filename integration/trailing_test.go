package integration

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// TestTrailingBytesOverTheWire: request bodies followed by 4 and 64 extra
// bytes get upstream's outcome through the real server (docs/wire.md,
// "Trailing bytes"): ignored where upstream decodes with decode_from,
// rejected with a status where the last field runs to the end of the body.
// The 4-byte DeleteTopic case is the shape another SDK sends (stream id,
// topic id, then a u32 partitions count).
func TestTrailingBytesOverTheWire(t *testing.T) {
	srv := startServer(t, "")
	ctx := testCtx(t)
	c := rootClient(t, srv.addr)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, named("s"), "t", 1)
	must(t, err)
	msgs := makeMessages("x", 0, 3)
	sendOK(t, c, named("s"), named("t"), partitionID(0), msgs)

	op := func(code wire.CommandCode) wire.Operation {
		info, ok := code.Info()
		if !ok {
			t.Fatalf("unknown code %d", code)
		}
		return info.Operation
	}
	// answer returns the status, or the committed result when the status is OK.
	answer := func(code wire.CommandCode, body []byte) wire.ErrorCode {
		t.Helper()
		status, result, _, err := c.Raw(ctx, op(code), code, body)
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		if status != wire.OK {
			return status
		}
		return result
	}
	send, err := wire.AppendSendMessages(nil, named("s"), named("t"), partitionID(0), msgs)
	must(t, err)
	poll := wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)},
		Stream: named("s"), Topic: named("t"), Partition: wire.SomePartition(0),
		Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 10}.Append(nil)

	for _, n := range []int{4, 64} {
		extra := make([]byte, n)
		binary.LittleEndian.PutUint32(extra, 1) // e.g. a partitions count
		with := func(b []byte) []byte { return append(append([]byte(nil), b...), extra...) }

		for _, row := range []struct {
			code wire.CommandCode
			body []byte
			want wire.ErrorCode
		}{
			{wire.CodePing, nil, wire.OK},
			{wire.CodeGetStats, nil, wire.OK},
			{wire.CodeGetStream, named("s").Append(nil), wire.OK},
			{wire.CodeGetTopic, wire.TopicRequest{Command: wire.CodeGetTopic, Stream: named("s"), Topic: named("t")}.AppendBody(nil), wire.OK},
			{wire.CodePollMessages, poll, wire.OK},
			{wire.CodeCreateTopic, wire.CreateTopicRequest{Stream: named("s"), PartitionsCount: 1, Name: fmt.Sprintf("x%d", n)}.AppendBody(nil), wire.ErrInvalidCommand},
			{wire.CodeSendMessages, send, wire.ErrInvalidMessagePayloadLength},
		} {
			if got := answer(row.code, with(row.body)); got != row.want {
				t.Errorf("%s + %d trailing bytes: answer %s, want %s", row.code, n, got, row.want)
			}
		}

		// DeleteTopic: accepted and carried out.
		name := fmt.Sprintf("d%d", n)
		_, err := c.CreateTopic(ctx, named("s"), name, 2)
		must(t, err)
		del := wire.TopicRequest{Command: wire.CodeDeleteTopic, Stream: named("s"), Topic: named(name)}.AppendBody(nil)
		if got := answer(wire.CodeDeleteTopic, with(del)); got != wire.OK {
			t.Fatalf("DeleteTopic + %d trailing bytes: answer %s, want OK", n, got)
		}
		_, err = c.GetTopic(ctx, named("s"), named(name))
		expectCode(t, err, wire.ErrTopicIDNotFound)

		// Register, password and token shapes: the session binds. A token
		// body followed by extra bytes may also read as a password body; the
		// server falls back to the token reading as upstream does.
		token, err := c.CreatePersonalAccessToken(ctx, fmt.Sprintf("pat%d", n), 0)
		must(t, err)
		patBody, err := wire.RegisterRequest{Kind: wire.RegisterWithToken, Token: token,
			Version: wire.ClientVersionInfo{ProtocolVersion: wire.ProtocolVersion, SDKName: "it", SDKVersion: "0.0.1"}}.Encode()
		must(t, err)
		for _, body := range [][]byte{registerBody(t, "iggy", "iggy", wire.ProtocolVersion), patBody} {
			r := dialRaw(t, srv.addr)
			r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, with(body)))
			f := r.readFrame()
			h, err := wire.DecodeReplyHeader(f)
			if err != nil || h.Status != wire.OK {
				t.Fatalf("register + %d trailing bytes: %v status %d", n, err, h.Status)
			}
			if code, _, err := wire.DecodeResult(f[wire.HeaderSize:]); err != nil || code != wire.OK {
				t.Fatalf("register + %d trailing bytes: result %v %v", n, code, err)
			}
		}
	}
}
