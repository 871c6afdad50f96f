package integration

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// rawConn speaks frames directly, for tests that need bytes no client
// would send.
type rawConn struct {
	t      *testing.T
	c      net.Conn
	client wire.Uint128
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var id [16]byte
	_, _ = rand.Read(id[:])
	return &rawConn{t: t, c: c, client: wire.Uint128{Lo: binary.LittleEndian.Uint64(id[:]) | 1, Hi: binary.LittleEndian.Uint64(id[8:])}}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	_ = r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// request builds a frame from this connection's client id.
func (r *rawConn) request(h wire.RequestHeader, body []byte) []byte {
	if h.Client.IsZero() {
		h.Client = r.client
	}
	return wire.EncodeRequest(nil, h, body)
}

// readFrame reads one frame; it fails the test on timeout.
func (r *rawConn) readFrame() []byte {
	r.t.Helper()
	f, err := r.tryRead(10 * time.Second)
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return f
}

func (r *rawConn) tryRead(timeout time.Duration) ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(timeout))
	hdr := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(r.c, hdr); err != nil {
		return nil, err
	}
	size := wire.FrameSize(hdr)
	if size < wire.HeaderSize || size > wire.FrameSizeMax {
		return nil, errors.New("reply with bad size")
	}
	f := make([]byte, size)
	copy(f, hdr)
	_, err := io.ReadFull(r.c, f[wire.HeaderSize:])
	return f, err
}

// expectStatus reads a reply and checks its status and request echo.
func (r *rawConn) expectStatus(request uint64, want wire.ErrorCode) wire.ReplyHeader {
	r.t.Helper()
	f := r.readFrame()
	h, err := wire.DecodeReplyHeader(f)
	if err != nil {
		r.t.Fatalf("reply header: %v (command %d)", err, f[60])
	}
	if h.Status != want || h.Request != request {
		r.t.Fatalf("reply status %d request %d, want status %d request %d", h.Status, h.Request, want, request)
	}
	return h
}

// expectEviction reads an eviction and checks its reason, then expects the
// server to close the connection.
func (r *rawConn) expectEviction(want wire.EvictionReason) wire.Eviction {
	r.t.Helper()
	f := r.readFrame()
	ev, err := wire.DecodeEviction(f)
	if err != nil {
		r.t.Fatalf("want eviction %s, got frame command %d: %v", want, f[60], err)
	}
	if ev.Reason != want {
		r.t.Fatalf("eviction reason %s, want %s", ev.Reason, want)
	}
	r.expectClosed()
	return ev
}

func (r *rawConn) expectClosed() {
	r.t.Helper()
	if f, err := r.tryRead(10 * time.Second); err == nil {
		r.t.Fatalf("connection still open: got a frame with command %d", f[60])
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("connection still open: read timed out instead of EOF")
	}
}

func registerBody(t *testing.T, username, password string, protocol uint32) []byte {
	t.Helper()
	b, err := wire.RegisterRequest{
		Kind:     wire.RegisterWithPassword,
		Version:  wire.ClientVersionInfo{ProtocolVersion: protocol, SDKName: "it", SDKVersion: "0.0.1"},
		Username: username, Password: password,
	}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// login registers as root and returns the session fence.
func (r *rawConn) login() uint64 {
	r.t.Helper()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(r.t, "iggy", "iggy", wire.ProtocolVersion)))
	f := r.readFrame()
	h, err := wire.DecodeReplyHeader(f)
	if err != nil || h.Status != wire.OK {
		r.t.Fatalf("register: %v status %d", err, h.Status)
	}
	code, payload, err := wire.DecodeResult(f[wire.HeaderSize:])
	if err != nil || code != wire.OK {
		r.t.Fatalf("register result: %v code %d", err, code)
	}
	reply, err := wire.DecodeRegisterReply(payload)
	if err != nil {
		r.t.Fatalf("register reply: %v", err)
	}
	return reply.Session
}

// ping sends a Ping and expects OK.
func (r *rawConn) ping() {
	r.t.Helper()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, nil))
	r.expectStatus(0, wire.OK)
}
