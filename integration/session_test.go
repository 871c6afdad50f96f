package integration

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestVersionGateEvictsWithServerVersions(t *testing.T) {
	srv := startServer(t, "")
	r := dialRaw(t, srv.addr)
	r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(t, "iggy", "iggy", wire.PackVersion(0, 12, 0))))
	ev := r.expectEviction(wire.EvictIncompatibleProtocol)
	if ev.ServerVersion != wire.ProtocolVersion || ev.ServerVersionMin != wire.ProtocolVersionMin {
		t.Fatalf("eviction versions %d/%d, want %d/%d", ev.ServerVersion, ev.ServerVersionMin, wire.ProtocolVersion, wire.ProtocolVersionMin)
	}
	if ev.ErrorCode() != wire.ErrIncompatibleProtocolVersion {
		t.Fatalf("maps to %s", ev.ErrorCode())
	}
	// Any 0.11.x patch passes the gate.
	ok := dialRaw(t, srv.addr)
	ok.write(ok.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(t, "iggy", "iggy", wire.PackVersion(0, 11, 7))))
	ok.expectStatus(0, wire.OK)
}

func TestWrongPasswordEvictsInvalidCredentials(t *testing.T) {
	srv := startServer(t, "")
	for _, creds := range [][2]string{{"iggy", "wrong"}, {"nobody", "iggy"}, {"iggy", ""}} {
		r := dialRaw(t, srv.addr)
		r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(t, creds[0], creds[1], wire.ProtocolVersion)))
		if ev := r.expectEviction(wire.EvictInvalidCredentials); ev.ErrorCode() != wire.ErrInvalidCredentials {
			t.Fatalf("%v maps to %s", creds, ev.ErrorCode())
		}
	}
}

// TestMetadataDedupReplaysCachedReply sends the same CreateStream request id
// twice: the retry is answered from the client table with the original
// bytes instead of being applied again (which would answer "already exists").
func TestMetadataDedupReplaysCachedReply(t *testing.T) {
	srv := startServer(t, "")
	r := dialRaw(t, srv.addr)
	session := r.login()
	body := wire.CreateStreamRequest{Name: "dedup"}.AppendBody(nil)
	frame := r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 1, RequestChecksum: wire.BodyChecksum(body)}, body)
	r.write(frame)
	first := r.readFrame()
	r.write(frame)
	second := r.readFrame()
	if !bytes.Equal(first, second) {
		t.Fatalf("replayed reply differs:\nfirst  %x\nsecond %x", first, second)
	}
	code, payload, err := wire.DecodeResult(first[wire.HeaderSize:])
	if err != nil || code != wire.OK {
		t.Fatalf("first create: %v code %s", err, code)
	}
	if sd, err := wire.DecodeStreamDetails(payload); err != nil || sd.Name != "dedup" {
		t.Fatalf("stream details: %+v %v", sd, err)
	}
	// A new id with the same body is a new request: the name is taken now.
	r.write(r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 2}, body))
	third := r.readFrame()
	if code, _, _ := wire.DecodeResult(third[wire.HeaderSize:]); code != wire.ErrStreamNameAlreadyExists {
		t.Fatalf("new request id: result %s, want %s", code, wire.ErrStreamNameAlreadyExists)
	}
	// Another connection registering the same client id raises the fence:
	// the first connection's session is now too low.
	other := dialRaw(t, srv.addr)
	other.client = r.client
	if rebound := other.login(); rebound <= session {
		t.Fatalf("re-register fence %d not above %d", rebound, session)
	}
	r.write(r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 3}, body))
	r.expectEviction(wire.EvictSessionTooLow)
}

func TestLogoutThenRequestIsUnauthenticated(t *testing.T) {
	srv := startServer(t, "")
	r := dialRaw(t, srv.addr)
	session := r.login()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpLogout, Session: session, Request: 1}, nil))
	h := r.expectStatus(1, wire.OK)
	if h.Operation != wire.OpLogout || h.Size != wire.HeaderSize {
		t.Fatalf("logout reply op %s size %d", h.Operation, h.Size)
	}
	r.write(r.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodeGetStreams}, nil))
	r.expectStatus(0, wire.ErrUnauthenticated)
	// Logout on an unbound connection still answers OK.
	r.write(r.request(wire.RequestHeader{Operation: wire.OpLogout, Session: session, Request: 2}, nil))
	r.expectStatus(2, wire.OK)
	// A replicated request after logout is an eviction (no session).
	r.write(r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 3}, []byte{3, 'a', 'b', 'c'}))
	r.expectEviction(wire.EvictNoSession)
}

func TestRegisterOnBoundConnectionReplaysSession(t *testing.T) {
	srv := startServer(t, "")
	r := dialRaw(t, srv.addr)
	first := r.login()
	second := r.login()
	if first != second || first == 0 {
		t.Fatalf("sessions %d then %d, want the same non-zero fence", first, second)
	}
}

// TestDedupSurvivesSIGKILL: a client's committed request stays deduplicated
// across a crash. The client table (in the checkpoint and the journal)
// remembers the reply; the client re-registers under the same id after the
// restart and its retry is answered with the original result, not applied
// again.
func TestDedupSurvivesSIGKILL(t *testing.T) {
	srv := startServer(t, "", "IGGY_METADATA_JOURNAL_SLOTS=256")
	r := dialRaw(t, srv.addr)
	session := r.login()
	body := wire.CreateStreamRequest{Name: "once"}.AppendBody(nil)
	r.write(r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 1}, body))
	first := r.readFrame()
	if code, _, err := wire.DecodeResult(first[wire.HeaderSize:]); err != nil || code != wire.OK {
		t.Fatalf("first create: %v %s", err, code)
	}
	// Push the entry into a checkpoint (a 256-slot journal checkpoints every 128 ops).
	other := rootClient(t, srv.addr)
	for i := 0; i < 300; i++ {
		_, err := other.CreateStream(testCtx(t), fmt.Sprintf("filler-%d", i))
		must(t, err)
	}
	srv.restart(syscall.SIGKILL)

	again := dialRaw(t, srv.addr)
	again.client = r.client
	rebound := again.login()
	again.write(again.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: rebound, Request: 1}, body))
	replayed := again.readFrame()
	if !bytes.Equal(first[wire.HeaderSize:], replayed[wire.HeaderSize:]) {
		t.Fatalf("retry after restart not replayed:\nfirst  %x\nretry  %x", first[wire.HeaderSize:], replayed[wire.HeaderSize:])
	}
}
