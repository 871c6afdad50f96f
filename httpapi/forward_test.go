package httpapi

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/config"
)

func TestForwardingActiveOnlyWithClusterKeyMaterial(t *testing.T) {
	cfg := jwtConfig(t, nil)
	if f, err := newForwarder(cfg); err != nil || f != nil {
		t.Fatalf("single node: %v %v", f, err)
	}
	cfg.Cluster.Enabled = true
	if f, _ := newForwarder(cfg); f != nil {
		t.Fatal("cluster without key material forwards")
	}
	cfg.Cluster.Auth.Enabled, cfg.Cluster.Auth.SharedSecret = true, config.Secret(strings.Repeat("p", 32))
	if f, _ := newForwarder(cfg); f == nil || f.scheme != "http" {
		t.Fatal("cluster with a PSK does not forward")
	}
}

// The forwarding hop over HTTPS accepts only this node's own certificate.
func TestForwardingPinsTheSharedCertificate(t *testing.T) {
	cert, key := writeCert(t)
	other, _ := writeCert(t)
	cfg := jwtConfig(t, func(c *config.Config) {
		c.Cluster.Enabled = true
		c.HTTP.JWT.EncodingSecret = "shared"
		c.HTTP.TLS.Enabled, c.HTTP.TLS.CertFile, c.HTTP.TLS.KeyFile = true, cert, key
	})
	f, err := newForwarder(cfg)
	if err != nil || f.scheme != "https" {
		t.Fatalf("%v %v", f, err)
	}
	own, _ := leafDER(cert)
	foreign, _ := leafDER(other)
	check := f.client.Transport.(*http.Transport).TLSClientConfig.VerifyPeerCertificate
	if err := check([][]byte{own}, nil); err != nil {
		t.Fatalf("own certificate refused: %v", err)
	}
	if err := check([][]byte{foreign}, nil); err == nil {
		t.Fatal("foreign certificate accepted")
	}
	if _, err := leafDER(os.DevNull); err == nil {
		t.Fatal("empty cert file accepted")
	}
}
