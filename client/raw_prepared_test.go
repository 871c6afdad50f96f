package client

import (
	"bytes"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// RawPrepared stamps the header in place (request ids follow §2.2 as for
// Raw), sends the body unchanged, reads replies into the caller's buffer
// (grown once, then reused) and decodes statuses and result sections.
func TestRawPreparedStampsInPlaceAndReusesReplyBuffer(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 100_000)
	s := newFakeServer(t, func(f wire.Frame) [][]byte {
		h, err := wire.DecodeRequestHeader(f.Header[:])
		if err != nil {
			return nil
		}
		switch h.Operation {
		case wire.OpRegister:
			return [][]byte{registerReply(h, 5)}
		case wire.OpNonReplicated:
			return [][]byte{replyOK(h, big)}
		}
		return [][]byte{replyRejected(h, wire.ErrTransientNotCommitted)}
	})
	c := dial(t, s)
	ctx := testCtx(t)
	var replyBuf []byte
	short := make([]byte, 10)
	if _, err := c.RawPrepared(ctx, wire.OpNonReplicated, wire.CodePing, short, &replyBuf); CodeOf(err) != wire.ErrInvalidCommand {
		t.Fatalf("short frame: %v", err)
	}
	login, _ := wire.RegisterRequest{Kind: wire.RegisterWithPassword, Version: wire.ClientVersionInfo{ProtocolVersion: wire.ProtocolVersion, SDKName: "x", SDKVersion: "y"}, Username: "a", Password: "b"}.Encode()
	frame := append(make([]byte, wire.HeaderSize), login...)
	if r, err := c.RawPrepared(ctx, wire.OpRegister, wire.CodeLoginRegister, frame, &replyBuf); err != nil || r.Status != wire.OK || c.Session() != 5 {
		t.Fatalf("register: %+v %v session %d", r, err, c.Session())
	}
	ping := make([]byte, wire.HeaderSize)
	r, err := c.RawPrepared(ctx, wire.OpNonReplicated, wire.CodePing, ping, &replyBuf)
	if err != nil || r.Status != wire.OK || !bytes.Equal(r.Payload, big) {
		t.Fatalf("ping: status %v, %d payload bytes, %v", r.Status, len(r.Payload), err)
	}
	grown := &replyBuf[:1][0]
	sendBody := []byte{1, 2, 3, 4}
	send := append(make([]byte, wire.HeaderSize), sendBody...)
	for i := 0; i < 3; i++ {
		r, err := c.RawPrepared(ctx, wire.OpCreateStream, wire.CodeCreateStream, send, &replyBuf)
		if err != nil || r.Status != wire.OK || r.Result != wire.ErrTransientNotCommitted {
			t.Fatalf("send %d: %+v %v", i, r, err)
		}
	}
	if &replyBuf[:1][0] != grown {
		t.Fatal("reply buffer was reallocated for replies that fit")
	}
	frames := s.received()
	last := frames[len(frames)-1]
	h := s.header(last)
	if !bytes.Equal(last.Body, sendBody) || h.Session != 5 || h.Size != uint32(len(send)) || h.Operation != wire.OpCreateStream {
		t.Fatalf("sent header %+v body %v", h, last.Body)
	}
	if s.header(frames[len(frames)-2]).Request+1 != h.Request {
		t.Fatal("metadata requests must advance the request id")
	}
}
