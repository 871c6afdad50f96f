package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// A full session: the bytes of every request follow wire-protocol.md §2.2 (operation, request id,
// session fence, reserved command code) and replies are decoded through their result sections.
func TestSessionStampingFollowsSpec(t *testing.T) {
	const session = 77
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		switch h.Operation {
		case wire.OpRegister:
			return [][]byte{registerReply(h, session)}
		case wire.OpCreateStream:
			sd := wire.StreamDetails{Stream: wire.Stream{ID: 0, Name: "s"}}
			return [][]byte{replyOK(h, sd.Append(nil))}
		case wire.OpCreateTopic:
			td := wire.TopicDetails{TopicHeader: wire.TopicHeader{Name: "t", MessageExpiry: wire.Unlimited, MaxTopicSize: wire.Unlimited, Compression: 1},
				Partitions: []wire.Partition{{ID: 0}}}
			return [][]byte{replyOK(h, td.Append(nil))}
		case wire.OpNonReplicated:
			return [][]byte{replyOK(h, nil)}
		default:
			return [][]byte{replyOK(h, nil)}
		}
	}
	c := dial(t, s)
	ctx := testCtx(t)

	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.LoginUser(ctx, "iggy", "iggy")
	if err != nil || r.Session != session {
		t.Fatalf("login: %+v %v", r, err)
	}
	if _, err := c.CreateStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.NumericID(0), "t", 1); err != nil {
		t.Fatal(err)
	}
	consumer := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)}
	if err := c.StoreConsumerOffset(ctx, consumer, wire.NumericID(0), wire.NumericID(0), wire.SomePartition(0), 5); err != nil {
		t.Fatal(err)
	}
	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Session() != 0 {
		t.Fatal("session kept after logout")
	}

	type stamp struct {
		op      wire.Operation
		request uint64
		session uint64
		code    wire.CommandCode
	}
	want := []stamp{
		{wire.OpNonReplicated, 1, 0, wire.CodePing},             // unbound: session 0, counter not consumed
		{wire.OpRegister, 0, 0, 0},                              // Register: request 0, session 0
		{wire.OpCreateStream, 1, session, 0},                    // metadata: consumes 1
		{wire.OpNonReplicated, 2, session, wire.CodeGetStreams}, // non-replicated: next id, not consumed
		{wire.OpCreateTopic, 2, session, 0},                     // metadata: consumes 2
		{wire.OpStoreConsumerOffset, 3, session, 0},             // partition: not consumed
		{wire.OpLogout, 3, session, 0},                          // logout: consumes 3
	}
	frames := s.received()
	if len(frames) != len(want) {
		t.Fatalf("server saw %d frames, want %d", len(frames), len(want))
	}
	var client wire.Uint128
	for i, f := range frames {
		h := s.header(f)
		got := stamp{h.Operation, h.Request, h.Session, wire.CommandCode(binary.LittleEndian.Uint32(f.Header[196:]))}
		if got != want[i] {
			t.Errorf("frame %d stamped %+v, want %+v", i, got, want[i])
		}
		if i == 0 {
			client = h.Client
		} else if h.Client != client {
			t.Errorf("frame %d client id changed", i)
		}
	}
	reg, err := wire.DecodeRegister(frames[1].Body)
	if err != nil || reg.Username != "iggy" || reg.Version.ProtocolVersion != wire.ProtocolVersion || reg.Version.SDKName != DefaultSDKName {
		t.Fatalf("register body %+v %v", reg, err)
	}
}

func TestRegisterAfterBindMintsNewClientID(t *testing.T) {
	var sessions atomic.Uint64
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		return [][]byte{registerReply(h, sessions.Add(1))}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	first := c.ClientID()
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoginWithPersonalAccessToken(ctx, "token"); err != nil {
		t.Fatal(err)
	}
	frames := s.received()
	h0, h1 := s.header(frames[0]), s.header(frames[1])
	if h0.Client != first || h1.Client == first || h1.Client.IsZero() {
		t.Fatalf("client ids %v then %v (first %v)", h0.Client, h1.Client, first)
	}
	if r, err := wire.DecodeRegister(frames[1].Body); err != nil || r.Kind != wire.RegisterWithToken || r.Token != "token" {
		t.Fatalf("PAT body %+v %v", r, err)
	}
}

func TestTransientNotCommittedReplaysSameBytes(t *testing.T) {
	var n atomic.Int32
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		if h.Operation == wire.OpRegister {
			return [][]byte{registerReply(h, 5)}
		}
		if n.Add(1) <= 2 {
			return [][]byte{replyRejected(h, wire.ErrTransientNotCommitted)}
		}
		return [][]byte{replyOK(h, nil)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.DeleteStream(ctx, wire.NumericID(1)); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 2*DefaultReplayInterval {
		t.Fatalf("two replays took %v, want ≥ %v", elapsed, 2*DefaultReplayInterval)
	}
	frames := s.received()[1:]
	if len(frames) != 3 {
		t.Fatalf("%d attempts, want 3", len(frames))
	}
	for i := 1; i < 3; i++ {
		if !bytes.Equal(frames[i].Bytes(), frames[0].Bytes()) {
			t.Fatalf("replay %d differs from the first send", i)
		}
	}
	if c.NextRequestID() != 2 {
		t.Fatalf("replays consumed request ids: next %d", c.NextRequestID())
	}
}

func TestTransientNotAcceptedGivesUpAfterWindow(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		return [][]byte{replyStatus(h, wire.ErrTransientNotAccepted)}
	}
	c := dial(t, s, WithNotAcceptedWindow(300*time.Millisecond))
	start := time.Now()
	err := c.Ping(testCtx(t))
	elapsed := time.Since(start)
	if !errors.Is(err, wire.ErrTransientNotAccepted) {
		t.Fatalf("got %v", err)
	}
	if elapsed < 200*time.Millisecond || elapsed > 2*time.Second {
		t.Fatalf("gave up after %v", elapsed)
	}
	if got := len(s.received()); got < 3 {
		t.Fatalf("%d attempts within the window", got)
	}
}

func TestEvictionSurfacesReasonAndCode(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		ev := wire.EncodeEviction(h.Client, wire.EvictInvalidCredentials, 0, 0)
		return [][]byte{ev[:]}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	_, err := c.LoginUser(ctx, "iggy", "wrong")
	if !errors.Is(err, wire.ErrInvalidCredentials) {
		t.Fatalf("got %v", err)
	}
	ev, ok := EvictionOf(err)
	if !ok || ev.Reason != wire.EvictInvalidCredentials {
		t.Fatalf("eviction %+v %v", ev, ok)
	}
	if err := c.Ping(ctx); !errors.Is(err, wire.ErrDisconnected) {
		t.Fatalf("after eviction: %v", err)
	}
}

func TestIncompatibleProtocolEviction(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		r, _ := wire.DecodeRegister(f.Body)
		if wire.VersionAccepted(r.Version.ProtocolVersion) {
			return [][]byte{registerReply(h, 1)}
		}
		ev := wire.EncodeEviction(h.Client, wire.EvictIncompatibleProtocol, wire.ProtocolVersion, wire.ProtocolVersionMin)
		return [][]byte{ev[:]}
	}
	c := dial(t, s, WithProtocolVersion(wire.PackVersion(0, 12, 0)))
	if _, err := c.LoginUser(testCtx(t), "iggy", "iggy"); !errors.Is(err, wire.ErrIncompatibleProtocolVersion) {
		t.Fatalf("got %v", err)
	}
}

func TestRequestIDMismatchBreaksConnection(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		h.Request += 100
		return [][]byte{replyOK(h, nil)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if err := c.Ping(ctx); !errors.Is(err, wire.ErrDisconnected) {
		t.Fatalf("got %v", err)
	}
	if err := c.Ping(ctx); !errors.Is(err, wire.ErrDisconnected) {
		t.Fatalf("second call: %v", err)
	}
	if len(s.received()) != 1 {
		t.Fatal("a broken connection was used again")
	}
}

func TestStatusAndResultErrors(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		switch h.Operation {
		case wire.OpRegister:
			return [][]byte{registerReply(h, 9)}
		case wire.OpCreateStream:
			return [][]byte{replyRejected(h, wire.ErrStreamNameAlreadyExists)}
		}
		return [][]byte{replyStatus(h, wire.ErrUnauthorized)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.GetStats(ctx); !errors.Is(err, wire.ErrUnauthorized) || CodeOf(err) != 41 {
		t.Fatalf("status: %v", err)
	}
	if _, err := c.CreateStream(ctx, "s"); !errors.Is(err, wire.ErrUnauthenticated) {
		t.Fatalf("write before login must fail locally: %v", err)
	}
	if len(s.received()) != 1 {
		t.Fatal("unauthenticated write reached the server")
	}
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, "s"); !errors.Is(err, wire.ErrStreamNameAlreadyExists) {
		t.Fatalf("committed rejection: %v", err)
	}
	if _, err := c.CreateStream(ctx, ""); !errors.Is(err, wire.ErrInvalidCommand) {
		t.Fatalf("empty name must fail locally: %v", err)
	}
}

func TestEmptyBodyMeansNotFound(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		if h.Operation == wire.OpRegister {
			return [][]byte{registerReply(h, 1)}
		}
		return [][]byte{replyOK(h, nil)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	id := wire.NumericID(1)
	checks := map[wire.ErrorCode]error{}
	_, checks[wire.ErrStreamIDNotFound] = c.GetStream(ctx, id)
	_, checks[wire.ErrTopicIDNotFound] = c.GetTopic(ctx, id, id)
	_, checks[wire.ErrResourceNotFound] = c.GetUser(ctx, id)
	_, checks[wire.ErrConsumerGroupIDNotFound] = c.GetConsumerGroup(ctx, id, id, id)
	_, checks[wire.ErrConsumerGroupMemberNotFound] = c.SyncConsumerGroup(ctx, id, id, id)
	_, checks[wire.ErrClientNotFound] = c.GetClient(ctx, 3)
	for code, err := range checks {
		if !errors.Is(err, code) {
			t.Errorf("want %s, got %v", code, err)
		}
	}
	off, err := c.GetConsumerOffset(ctx, wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id}, id, id, wire.OptPartition{})
	if off != nil || err != nil {
		t.Fatalf("no offset: %+v %v", off, err)
	}
	if list, err := c.GetStreams(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty list: %v %v", list, err)
	}
}

func TestDeleteSegmentsAnsweredAsTruncatePartition(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		if h.Operation == wire.OpRegister {
			return [][]byte{registerReply(h, 1)}
		}
		return [][]byte{replyOK(h, nil)} // replyOK echoes op 68 for 138
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.LoginUser(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSegments(ctx, wire.NumericID(0), wire.NumericID(0), 0, 1); err != nil {
		t.Fatal(err)
	}
	if h := s.header(s.received()[1]); h.Operation != wire.OpDeleteSegments || h.Request != 1 {
		t.Fatalf("sent %+v", h)
	}
	if c.NextRequestID() != 2 {
		t.Fatal("DeleteSegments must consume a metadata request id")
	}
}

func TestResponseTimeout(t *testing.T) {
	s := newFakeServer(t, func(wire.Frame) [][]byte { return nil })
	c := dial(t, s, WithResponseTimeout(200*time.Millisecond))
	start := time.Now()
	err := c.Ping(testCtx(t))
	if !errors.Is(err, wire.ErrDisconnected) || time.Since(start) > 3*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
}

func TestRawAndRawFrame(t *testing.T) {
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h, err := wire.DecodeRequestHeader(f.Header[:])
		if err != nil {
			return [][]byte{wire.EncodeReply(nil, wire.RequestHeader{Operation: wire.OpNonReplicated, Request: 0}, wire.ErrInvalidCommand, nil)}
		}
		switch {
		case h.Operation == wire.OpRegister:
			return [][]byte{registerReply(h, 3)}
		case h.Operation == wire.OpNonReplicated && h.Code == 9999:
			return [][]byte{replyStatus(h, wire.ErrInvalidCommand)}
		}
		return [][]byte{replyRejected(h, wire.ErrTransientNotAccepted)}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	status, result, _, err := c.Raw(ctx, wire.OpNonReplicated, 9999, []byte{1, 2})
	if err != nil || status != wire.ErrInvalidCommand || result != wire.OK {
		t.Fatalf("unknown code: %v %v %v", status, result, err)
	}
	if got := s.header(s.received()[0]); got.Code != 9999 {
		t.Fatalf("code %d", got.Code)
	}
	body, _ := wire.RegisterRequest{Kind: wire.RegisterWithPassword, Version: wire.ClientVersionInfo{ProtocolVersion: wire.ProtocolVersion, SDKName: "x", SDKVersion: "y"}, Username: "a", Password: "b"}.Encode()
	if status, result, _, err := c.Raw(ctx, wire.OpRegister, wire.CodeLoginRegister, body); err != nil || status != 0 || result != 0 || c.Session() != 3 {
		t.Fatalf("raw register: %v %v %v session %d", status, result, err, c.Session())
	}
	if status, result, _, err := c.Raw(ctx, wire.OpCreateStream, wire.CodeCreateStream, []byte{1, 's'}); err != nil || status != 0 || result != wire.ErrTransientNotAccepted {
		t.Fatalf("raw framed rejection: %v %v %v", status, result, err)
	}
	// A malformed frame (client id 0) goes out verbatim.
	bad := wire.EncodeRequest(nil, wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, nil)
	f, err := c.RawFrame(ctx, bad)
	if err != nil || f.Command() != wire.CommandReply {
		t.Fatalf("raw frame: %+v %v", f, err)
	}
	if rh, _ := wire.DecodeReplyHeader(f.Header[:]); rh.Status != wire.ErrInvalidCommand {
		t.Fatalf("raw frame status %v", rh.Status)
	}
	frames := s.received()
	if !bytes.Equal(frames[len(frames)-1].Bytes(), bad) {
		t.Fatal("raw frame was altered")
	}
}

func TestContextCancellationBreaksWait(t *testing.T) {
	s := newFakeServer(t, func(wire.Frame) [][]byte { return nil })
	c := dial(t, s)
	ctx, cancel := testCtxCancel(t)
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	if err := c.Ping(ctx); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
}
