package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// selfSignedValidity is how long a generated certificate is valid.
const selfSignedValidity = 365 * 24 * time.Hour

// SelfSignedTLS generates an in-memory ECDSA P-256 certificate for
// "localhost", the loopback addresses and extraIPs, for [tcp.tls]
// self_signed = true. Clients must skip verification or trust it explicitly.
func SelfSignedTLS(extraIPs ...net.IP) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate TLS serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"lodestream (self-signed)"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, extraIPs...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create self-signed certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// FileTLS loads a certificate and key (PEM) for [tcp.tls] cert_file/key_file.
// Use LoadCertFiles where the certificate must be reloadable.
func FileTLS(certFile, keyFile string) (*tls.Config, error) {
	c, err := LoadCertFiles(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return c.TLSConfig(), nil
}
