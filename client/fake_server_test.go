package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// fakeServer is an in-test server on 127.0.0.1:0. It records every frame the client sends and answers
// with whatever handle returns (zero or more frames).
type fakeServer struct {
	t      *testing.T
	ln     net.Listener
	handle func(f wire.Frame) [][]byte

	mu     sync.Mutex
	frames []wire.Frame
}

func newFakeServer(t *testing.T, handle func(f wire.Frame) [][]byte) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, handle: handle}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *fakeServer) serve(conn net.Conn) {
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-stop:
		case <-time.After(10 * time.Second): // bound every test connection
			conn.Close()
		}
	}()
	for {
		f, err := wire.ReadFrame(conn, 0)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				var ne net.Error
				if !errors.As(err, &ne) {
					s.t.Logf("fake server read: %v", err)
				}
			}
			return
		}
		s.mu.Lock()
		s.frames = append(s.frames, f)
		s.mu.Unlock()
		for _, out := range s.handle(f) {
			if bytes.Equal(out, hangUp) {
				return // the connection closes with no reply (a node killed mid-request)
			}
			if _, err := conn.Write(out); err != nil {
				return
			}
		}
	}
}

// hangUp, returned by a handler, closes the connection without answering.
var hangUp = []byte("fake server: hang up")

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) received() []wire.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wire.Frame(nil), s.frames...)
}

// header decodes a received request header, failing the test on a rule violation.
func (s *fakeServer) header(f wire.Frame) wire.RequestHeader {
	h, err := wire.DecodeRequestHeader(f.Header[:])
	if err != nil {
		s.t.Errorf("client sent an invalid header: %v", err)
	}
	return h
}

// replyOK answers req with status 0, framing the payload with a result section when the reply
// operation is result-framed.
func replyOK(req wire.RequestHeader, payload []byte) []byte {
	op := req.Operation.ReplyOperation()
	body := payload
	if op.ResultFramed(1) {
		body = append(wire.AppendResultOK(nil), payload...)
	}
	return wire.EncodeReply(nil, req, wire.OK, body)
}

func replyStatus(req wire.RequestHeader, code wire.ErrorCode) []byte {
	return wire.EncodeReply(nil, req, code, nil)
}

func replyRejected(req wire.RequestHeader, code wire.ErrorCode) []byte {
	return wire.EncodeReply(nil, req, wire.OK, wire.AppendResultRejection(nil, code))
}

func registerReply(req wire.RequestHeader, session uint64) []byte {
	payload := wire.RegisterReply{UserID: 0, Session: session, ProtocolVersion: wire.ProtocolVersion, ServerVersion: "test"}.Append(nil)
	return replyOK(req, payload)
}

func dial(t *testing.T, s *fakeServer, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.addr(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testCtxCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx, cancel
}
