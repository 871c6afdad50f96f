package transport

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// CertFiles serves a certificate loaded from PEM files and reloads it on
// demand (SIGHUP): handshakes after a successful Reload present the new
// certificate, open connections keep theirs, and a failed Reload keeps the
// previous one.
type CertFiles struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// LoadCertFiles reads the certificate and key ([tcp.tls] / [websocket.tls]
// cert_file and key_file, [quic.certificate]).
func LoadCertFiles(certFile, keyFile string) (*CertFiles, error) {
	c := &CertFiles{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the current certificate stays.
func (c *CertFiles) Reload() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS certificate %q / key %q: %w", c.certFile, c.keyFile, err)
	}
	c.cert.Store(&cert)
	return nil
}

// Files names the certificate and key files.
func (c *CertFiles) Files() (certFile, keyFile string) { return c.certFile, c.keyFile }

// TLSConfig is a server configuration presenting the current certificate.
func (c *CertFiles) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
}
