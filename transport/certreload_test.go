package transport

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeSelfSigned writes a fresh certificate and key as PEM files.
func writeSelfSigned(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	cfg, err := SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	cert := cfg.Certificates[0]
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert.Certificate[0]
}

func peerCert(t *testing.T, addr string) []byte {
	t.Helper()
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	return tc.ConnectionState().PeerCertificates[0].Raw
}

func TestCertFilesReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writeSelfSigned(t, certFile, keyFile)
	files, err := LoadCertFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, TCPConfig{TLS: files.TLSConfig(), HandshakeTimeout: time.Second}, &echoHandler{})
	if got := peerCert(t, s.Addr().String()); string(got) != string(first) {
		t.Fatal("first certificate not served")
	}
	second := writeSelfSigned(t, certFile, keyFile)
	if err := files.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := peerCert(t, s.Addr().String()); string(got) != string(second) {
		t.Fatal("reloaded certificate not served")
	}
	// A broken file keeps the current certificate.
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := files.Reload(); err == nil {
		t.Fatal("reload of a broken key succeeded")
	}
	if got := peerCert(t, s.Addr().String()); string(got) != string(second) {
		t.Fatal("certificate changed after a failed reload")
	}
}
