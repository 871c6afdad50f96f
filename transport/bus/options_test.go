package bus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
)

// TestOptionsFromConfig: the shipped roster, [message_bus], [cluster.auth]
// and [cluster.tls] become bus options.
func TestOptionsFromConfig(t *testing.T) {
	cfg, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Enabled = true
	cfg.Cluster.Auth = config.ClusterAuthConfig{Enabled: true, SharedSecret: secretOld, PreviousSharedSecret: secretNew}
	cfg.Cluster.TLS = config.ClusterTLSConfig{Enabled: true, SelfSigned: true}
	opts, err := OptionsFromConfig(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[uint8]string{0: "127.0.0.1:9090", 1: "127.0.0.1:9091"}; !reflect.DeepEqual(opts.Peers, want) {
		t.Fatalf("peers %v", opts.Peers)
	}
	if opts.Cluster != ClusterID("iggy-cluster") || opts.SelfID != 1 || opts.MessageBus != cfg.MessageBus {
		t.Fatalf("options %+v", opts)
	}
	if opts.Auth == nil || opts.Auth.previous == nil || opts.TLS == nil {
		t.Fatal("auth or tls missing")
	}
	tr := testTranscript()
	mac := NewAuth([]byte(secretNew), nil).DialerMAC(&tr)
	if !opts.Auth.VerifyDialerMAC(&tr, mac[:]) {
		t.Fatal("previous_shared_secret not in the verify window")
	}
	if _, err := OptionsFromConfig(cfg, 5); err == nil {
		t.Fatal("replica 5 is not in the roster")
	}
	cfg.Cluster.Auth.Enabled, cfg.Cluster.TLS.Enabled = false, false
	opts, err = OptionsFromConfig(cfg, 0)
	if err != nil || opts.Auth != nil || opts.TLS != nil {
		t.Fatalf("auth/tls off: %+v, %v", opts, err)
	}
}

// writePEM writes one PEM block to dir/name.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testCA makes a CA and a node certificate for 127.0.0.1 signed by it, as
// cert/key/ca files.
func testCA(t *testing.T, dir string) config.ClusterTLSConfig {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test replica CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "replica"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return config.ClusterTLSConfig{Enabled: true,
		CertFile: writePEM(t, dir, "node.pem", "CERTIFICATE", der),
		KeyFile:  writePEM(t, dir, "node.key", "PRIVATE KEY", keyDER),
		CAFile:   writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
}

// TestBusTLSFilesVerifyPeers: with cert/key/ca files the dialer verifies
// the acceptor's certificate against its roster ip; a peer whose
// certificate another CA signed is refused.
func TestBusTLSFilesVerifyPeers(t *testing.T) {
	good := testCA(t, t.TempDir())
	other := testCA(t, t.TempDir())
	build := func(files config.ClusterTLSConfig) *TLSConfig {
		tc, err := NewTLSConfig(files, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return tc
	}
	c := newCluster(t, 2, func(id uint8, o *Options) {
		o.Auth = NewAuth([]byte(secretOld), nil)
		o.TLS = build(good)
	})
	waitFor(t, "verified tls connections", c.allConnected)
	c.exchange(3)

	mixed := newCluster(t, 2, func(id uint8, o *Options) {
		o.Auth = NewAuth([]byte(secretOld), nil)
		if id == 1 {
			o.TLS = build(other) // certificate from a CA node 0 does not trust
		} else {
			o.TLS = build(good)
		}
	})
	waitFor(t, "untrusted certificate refused", func() bool { return mixed.nodes[0].bus.Stats().Refused(RefusedTLS) >= 2 })
	if mixed.nodes[0].bus.Connected(1) {
		t.Fatal("connected to an untrusted certificate")
	}
	if _, err := NewTLSConfig(config.ClusterTLSConfig{Enabled: true, CertFile: good.CertFile, KeyFile: good.KeyFile,
		CAFile: filepath.Join(t.TempDir(), "missing.pem")}, "127.0.0.1"); err == nil {
		t.Fatal("missing ca_file accepted")
	}
}
