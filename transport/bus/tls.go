package bus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/transport"
)

// TLSConfig is the replica plane's TLS 1.3 material ([cluster.tls]).
type TLSConfig struct {
	// Server drives the acceptor side of every inbound connection.
	Server *tls.Config
	// Client returns the dialer config for peer at its roster ip (SNI and
	// the name its certificate is verified against).
	Client func(peerIP string) *tls.Config
}

// NewTLSConfig builds the TLS material from [cluster.tls] for the node at
// selfIP. self_signed generates a certificate now and accepts any peer
// certificate (the PSK handshake, bound to the session's exporter, is what
// authenticates the peer); otherwise cert_file/key_file are this node's
// identity and ca_file verifies the peers'.
func NewTLSConfig(c config.ClusterTLSConfig, selfIP string) (*TLSConfig, error) {
	var cert tls.Certificate
	var roots *x509.CertPool
	if c.SelfSigned {
		var extra []net.IP
		if ip := net.ParseIP(selfIP); ip != nil {
			extra = append(extra, ip)
		}
		generated, err := transport.SelfSignedTLS(extra...)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls self-signed certificate: %w", err)
		}
		cert = generated.Certificates[0]
	} else {
		loaded, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls: load cert_file %q / key_file %q: %w", c.CertFile, c.KeyFile, err)
		}
		cert = loaded
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls: read ca_file %q: %w", c.CAFile, err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cluster.tls: ca_file %q holds no PEM certificate", c.CAFile)
		}
	}
	server := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{ALPN},
	}
	selfSigned := c.SelfSigned
	client := func(peerIP string) *tls.Config {
		return &tls.Config{
			ServerName:         peerIP,
			RootCAs:            roots,
			InsecureSkipVerify: selfSigned, //nolint:gosec // self_signed: the PSK MAC bound to the exporter authenticates
			MinVersion:         tls.VersionTLS13,
			NextProtos:         []string{ALPN},
		}
	}
	return &TLSConfig{Server: server, Client: client}, nil
}

// tlsBinding completes a TLS handshake on conn (deadline set by the caller)
// and derives the channel binding from the session's exporter.
func tlsBinding(conn *tls.Conn) (Binding, error) {
	if err := conn.Handshake(); err != nil {
		return Binding{}, fmt.Errorf("tls handshake: %w", err)
	}
	cs := conn.ConnectionState()
	if cs.Version != tls.VersionTLS13 {
		return Binding{}, fmt.Errorf("tls: negotiated version %#x, need TLS 1.3", cs.Version)
	}
	if cs.NegotiatedProtocol != ALPN {
		return Binding{}, fmt.Errorf("tls: ALPN %q, need %q", cs.NegotiatedProtocol, ALPN)
	}
	ekm, err := cs.ExportKeyingMaterial(ExporterLabel, nil, ExporterBytes)
	if err != nil {
		return Binding{}, fmt.Errorf("tls exporter: %w", err)
	}
	if len(ekm) != ExporterBytes {
		return Binding{}, errors.New("tls exporter: short output")
	}
	b := Binding{TLS: true}
	copy(b.Exporter[:], ekm)
	return b, nil
}
