package httpapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
)

// writeCert writes a self-signed loopback certificate and key as PEM.
func writeCert(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, keyFile
}

func TestHTTPS(t *testing.T) {
	cert, key := writeCert(t)
	ts := startServer(t, func(c *config.Config) {
		c.HTTP.TLS.Enabled, c.HTTP.TLS.CertFile, c.HTTP.TLS.KeyFile = true, cert, key
	})
	pemBytes, _ := os.ReadFile(cert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	ts.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("GET", "/streams", tok, nil), 200, "")
	resp, err := ts.client.Get(ts.base + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" {
		t.Errorf("ALPN: %s, want HTTP/2.0", resp.Proto)
	}
	// Plain HTTP to the TLS port is refused.
	plain := &http.Client{Timeout: 5 * time.Second}
	if r, err := plain.Get("http" + ts.base[len("https"):] + "/ping"); err == nil {
		if r.StatusCode == 200 {
			t.Error("plain http served on the https listener")
		}
		r.Body.Close()
	}
}

func TestWebUI(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>console</html>"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "_app"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "_app", "start.js"), []byte("console.log(1)"), 0o644))
	ts := startServer(t, func(c *config.Config) { c.HTTP.WebUI, c.HTTP.WebUIDir = true, dir })
	for _, p := range []string{"/ui", "/ui/", "/ui/dashboard/streams/1", "/ui/index.html"} {
		r := expect(t, ts.do("GET", p, "", nil), 200, "")
		if string(r.body) != "<html>console</html>" {
			t.Errorf("%s: %q", p, r.body)
		}
	}
	r := expect(t, ts.do("GET", "/ui/_app/start.js", "", nil), 200, "")
	if string(r.body) != "console.log(1)" {
		t.Errorf("asset: %q", r.body)
	}
	r = expect(t, ts.do("GET", "/ui/_app/missing.js", "", nil), 404, "")
	if string(r.body) != "Not Found" {
		t.Errorf("missing asset: %q", r.body)
	}
	if r := ts.do("GET", "/ui/%2e%2e/%2e%2e/etc/hostname", "", nil); r.status == 200 && string(r.body) != "<html>console</html>" {
		t.Errorf("escaped the web_ui_dir: %q", r.body)
	}
}
