package integration

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestTCPTLSSelfSigned: with [tcp.tls] enabled (self-signed), the same
// address speaks TLS from the first byte; plain frames get nothing back.
func TestTCPTLSSelfSigned(t *testing.T) {
	srv := startServer(t, "", "IGGY_TCP_TLS_ENABLED=true")
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", srv.addr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	if len(tc.ConnectionState().PeerCertificates) == 0 {
		t.Fatal("no server certificate")
	}
	r := dialRaw(t, srv.addr)
	_ = r.c.Close()
	r.c = tc
	t.Cleanup(func() { _ = tc.Close() })
	r.ping()
	session := r.login()
	body := wire.CreateStreamRequest{Name: "over-tls"}.AppendBody(nil)
	r.write(r.request(wire.RequestHeader{Operation: wire.OpCreateStream, Session: session, Request: 1}, body))
	if code, _, err := wire.DecodeResult(r.readFrame()[wire.HeaderSize:]); err != nil || code != wire.OK {
		t.Fatalf("create over TLS: %v %s", err, code)
	}

	plain := dialRaw(t, srv.addr)
	plain.write(plain.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePing}, nil))
	if _, err := plain.tryRead(15 * time.Second); err == nil {
		t.Fatal("plain frame answered by a TLS listener")
	}
}
