package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/lodestream/lodestream/transport"
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

// TestCertificatesReloadOnSIGHUP: with certificate files, SIGHUP makes new
// TLS handshakes (TCP, WSS, QUIC) present the replaced certificate; the
// server keeps running and a broken file keeps the previous one.
func TestCertificatesReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writeCertFiles(t, certFile, keyFile)
	srv := startServer(t, "",
		"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false",
		"IGGY_TCP_TLS_CERT_FILE="+certFile, "IGGY_TCP_TLS_KEY_FILE="+keyFile,
		"IGGY_WEBSOCKET_TLS_ENABLED=true", "IGGY_WEBSOCKET_TLS_SELF_SIGNED=false",
		"IGGY_WEBSOCKET_TLS_CERT_FILE="+certFile, "IGGY_WEBSOCKET_TLS_KEY_FILE="+keyFile,
		"IGGY_QUIC_CERTIFICATE_SELF_SIGNED=false",
		"IGGY_QUIC_CERTIFICATE_CERT_FILE="+certFile, "IGGY_QUIC_CERTIFICATE_KEY_FILE="+keyFile)
	served := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"tcp", "websocket"} {
			tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", srv.transportAddr(name),
				&tls.Config{InsecureSkipVerify: true})
			if err != nil {
				t.Fatalf("%s tls dial: %v", name, err)
			}
			out[name] = string(tc.ConnectionState().PeerCertificates[0].Raw)
			tc.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		qc, err := quic.DialAddr(ctx, srv.transportAddr("quic"), &tls.Config{InsecureSkipVerify: true}, nil)
		if err != nil {
			t.Fatalf("quic dial: %v", err)
		}
		out["quic"] = string(qc.ConnectionState().TLS.PeerCertificates[0].Raw)
		_ = qc.CloseWithError(0, "")
		return out
	}
	expect := func(what string, want []byte) {
		t.Helper()
		for name, got := range served() {
			if got != string(want) {
				t.Fatalf("%s: %s does not serve the expected certificate", what, name)
			}
		}
	}
	expect("at boot", first)
	second := writeCertFiles(t, certFile, keyFile)
	must(t, srv.cmd.Process.Signal(syscall.SIGHUP))
	waitForLog(t, srv, "SIGHUP: certificate reloaded", 3)
	expect("after SIGHUP", second)
	must(t, os.WriteFile(keyFile, []byte("broken"), 0o600))
	must(t, srv.cmd.Process.Signal(syscall.SIGHUP))
	waitForLog(t, srv, "SIGHUP: certificate reload failed", 3)
	expect("after a failed reload", second)
}

// writeCertFiles writes a fresh self-signed certificate and key (PEM).
func writeCertFiles(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	cfg, err := transport.SelfSignedTLS()
	must(t, err)
	cert := cfg.Certificates[0]
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	must(t, err)
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return cert.Certificate[0]
}

// waitForLog waits until the server log holds line at least count times in
// total (a bounded wait for a condition, not a timing assertion).
func waitForLog(t *testing.T, srv *server, line string, count int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(srv.logs.String(), line) < count {
		if time.Now().After(deadline) {
			t.Fatalf("server log never showed %q %d times:\n%s", line, count, srv.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
