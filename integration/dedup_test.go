package integration

import (
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// sendRaw sends body as SendMessages with request id request on r's
// session and returns the reply's status and confirmation.
func sendRaw(t *testing.T, r *rawConn, session, request uint64, body []byte) (wire.ErrorCode, uint64) {
	t.Helper()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpSendMessages, Session: session, Request: request}, body))
	f := r.readFrame()
	h, err := wire.DecodeReplyHeader(f)
	if err != nil {
		t.Fatalf("send reply: %v", err)
	}
	if h.Status != wire.OK {
		return h.Status, 0
	}
	conf, err := wire.DecodeSendMessagesReply(f[wire.HeaderSize:])
	if err != nil || len(conf) != 1 {
		t.Fatalf("send confirmation: %v %v", conf, err)
	}
	return wire.OK, conf[0].BaseOffset
}

// flagged is a request id that asks for retry recognition.
func flagged(id uint64) uint64 { return id | 1<<63 }

// TestSendRetriesAreRecognised (issue 8 point 6): with retry recognition
// asked for (the request id's top bit), the same client id, request id and
// body again gets the original confirmation and stores nothing; a
// different body under the reused id is a new send; a request id below a
// full window answers RequestAlreadyApplied. Without it (upstream SDKs
// reuse one request id), identical batches are two sends.
func TestSendRetriesAreRecognised(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	bodyX, err := wire.AppendSendMessages(nil, id(0), id(0), partitionID(0), makeMessages("x", 0, 3))
	must(t, err)
	bodyY, err := wire.AppendSendMessages(nil, id(0), id(0), partitionID(0), makeMessages("y", 0, 3))
	must(t, err)

	r := dialRaw(t, srv.addr)
	session := r.login()
	if code, base := sendRaw(t, r, session, flagged(5), append([]byte(nil), bodyX...)); code != wire.OK || base != 0 {
		t.Fatalf("first send: %s base %d", code, base)
	}
	if code, base := sendRaw(t, r, session, flagged(5), append([]byte(nil), bodyX...)); code != wire.OK || base != 0 {
		t.Fatalf("replayed send: %s base %d, want the original confirmation (0)", code, base)
	}
	if code, base := sendRaw(t, r, session, flagged(5), append([]byte(nil), bodyY...)); code != wire.OK || base != 3 {
		t.Fatalf("another body under the reused request id: %s base %d, want a new send at 3", code, base)
	}
	if st := partitionStats(t, c, id(0), id(0), 0); st.MessagesCount != 6 {
		t.Fatalf("%d messages stored, want 6 (the replay stored nothing)", st.MessagesCount)
	}
	// Not asked for: the same batch under the same (unflagged) id twice is two sends.
	for want := uint64(6); want <= 9; want += 3 {
		if code, base := sendRaw(t, r, session, 7, append([]byte(nil), bodyX...)); code != wire.OK || base != want {
			t.Fatalf("unflagged identical send: %s base %d, want %d", code, base, want)
		}
	}
	// A reconnect under the same client id (a new session) is recognised too.
	again := dialRaw(t, srv.addr)
	again.client = r.client
	session2 := again.login()
	if code, base := sendRaw(t, again, session2, flagged(5), append([]byte(nil), bodyX...)); code != wire.OK || base != 0 {
		t.Fatalf("replay under a new session: %s base %d", code, base)
	}
	// Fill the window, then a request id below it.
	for req := uint64(100); req < 100+128; req++ {
		body, err := wire.AppendSendMessages(nil, id(0), id(0), partitionID(0), makeMessages("w", int(req), 1))
		must(t, err)
		if code, _ := sendRaw(t, again, session2, flagged(req), body); code != wire.OK {
			t.Fatalf("window fill %d: %s", req, code)
		}
	}
	if code, _ := sendRaw(t, again, session2, flagged(5), append([]byte(nil), bodyX...)); code != wire.ErrRequestAlreadyApplied {
		t.Fatalf("a replay older than the window: %s, want RequestAlreadyApplied", code)
	}
}

// TestClusterSendReplayedOnTheNewPrimary: a send acknowledged by the
// primary, replayed with the same client id and request id on the new
// primary after kill -9 of the old one (under a new session), gets its
// original confirmation and is stored once.
func TestClusterSendReplayedOnTheNewPrimary(t *testing.T) {
	c := startCluster(t, 3)
	ctx := testCtx(t)
	leader := rootClient(t, c.addr(0))
	_, err := leader.CreateStream(ctx, "s")
	must(t, err)
	_, err = leader.CreateTopic(ctx, id(0), "t", 1)
	must(t, err)
	sendOK(t, leader, id(0), id(0), partitionID(0), makeMessages("before", 0, 2))
	body, err := wire.AppendSendMessages(nil, id(0), id(0), partitionID(0), makeMessages("once", 0, 4))
	must(t, err)
	r := dialRaw(t, c.addr(0))
	session := r.login()
	code, base := sendRaw(t, r, session, flagged(42), append([]byte(nil), body...))
	if code != wire.OK || base != 2 {
		t.Fatalf("send on the primary: %s base %d", code, base)
	}
	c.waitPartitionCount(1, 0, 6, 10*time.Second)
	c.waitPartitionCount(2, 0, 6, 10*time.Second)
	c.nodes[0].stop(syscall.SIGKILL)

	deadline := time.Now().Add(failoverBound + 10*time.Second)
	for {
		replayed := false
		for _, i := range []int{1, 2} {
			rc := dialRaw(t, c.addr(i))
			rc.client = r.client
			s, ok := rc.tryLogin()
			if !ok {
				continue // no metadata primary yet
			}
			code, got := sendRaw(t, rc, s, flagged(42), append([]byte(nil), body...))
			if code == wire.OK {
				if got != base {
					t.Fatalf("replay on node %d: base %d, want the original %d", i, got, base)
				}
				replayed = true
				break
			}
		}
		if replayed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no survivor accepted the replay")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, i := range []int{1, 2} {
		got := c.waitPartitionCount(i, 0, 6, 10*time.Second)
		if len(got) != 6 {
			t.Fatalf("node %d holds %d messages after the replay, want 6 (stored once)", i, len(got))
		}
	}
}

// tryLogin is login that reports a refused sign-in (58 while the cluster
// has no metadata primary) instead of failing the test.
func (r *rawConn) tryLogin() (uint64, bool) {
	r.t.Helper()
	r.write(r.request(wire.RequestHeader{Operation: wire.OpRegister}, registerBody(r.t, "iggy", "iggy", wire.ProtocolVersion)))
	f := r.readFrame()
	if h, err := wire.DecodeReplyHeader(f); err != nil || h.Status != wire.OK {
		return 0, false
	}
	code, payload, err := wire.DecodeResult(f[wire.HeaderSize:])
	if err != nil || code != wire.OK {
		return 0, false
	}
	reply, err := wire.DecodeRegisterReply(payload)
	return reply.Session, err == nil
}
