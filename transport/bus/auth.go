package bus

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"

	"github.com/zeebo/blake3"

	"github.com/lodestream/lodestream/consensus"
)

// Handshake constants (server-design §7.2).
const (
	NonceBytes    = 32
	MACBytes      = 32
	ExporterBytes = 32
	// ExporterLabel is the TLS exporter label of the channel binding.
	ExporterLabel = "iggy replica psk binding"
	// ALPN is the TLS application protocol of replica connections.
	ALPN = "iggy-replica"

	macDomainTag  = "apache-iggy replica-auth v1"
	macKeyContext = "apache-iggy replica-auth v1 psk->mac-key"
	dirDialer     = 1
	dirAcceptor   = 2
)

// Offsets of the handshake fields in the command area of frames 14–16.
const (
	offHsNonce  = offCommandFields                         // [32]u8
	offHsMAC    = offCommandFields + NonceBytes            // [32]u8
	offHsStatus = offCommandFields + NonceBytes + MACBytes // u8
)

// Status is a handshake outcome; nonzero values are refusals. 1–3 are
// sent to a dialer that speaks the authenticated protocol, 4 and 5 are
// log-only (the peer is not reading a reply).
type Status uint8

const (
	StatusOK              Status = 0
	StatusUnknownCommand  Status = 1
	StatusClusterMismatch Status = 2
	StatusDirectionalRule Status = 3
	StatusAuthRequired    Status = 4
	StatusMACMismatch     Status = 5
)

// String is the stable lowercase label used in logs and counters.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusUnknownCommand:
		return "unknown_command"
	case StatusClusterMismatch:
		return "cluster_mismatch"
	case StatusDirectionalRule:
		return "directional_rule"
	case StatusAuthRequired:
		return "auth_required"
	case StatusMACMismatch:
		return "mac_mismatch"
	}
	return fmt.Sprintf("status_%d", uint8(s))
}

// readStatus decodes a challenge's status byte: 0 is OK, 2–5 their reason,
// 1 and any unknown byte UnknownCommand (never mistaken for OK).
func readStatus(b byte) Status {
	switch Status(b) {
	case StatusOK, StatusClusterMismatch, StatusDirectionalRule, StatusAuthRequired, StatusMACMismatch:
		return Status(b)
	}
	return StatusUnknownCommand
}

// ClusterID is the cluster id stamped in every replica frame: the first 16
// bytes of BLAKE3(name), little-endian.
func ClusterID(name string) consensus.Uint128 {
	sum := blake3.Sum256([]byte(name))
	return getU128(sum[:16])
}

// Binding is the channel binding folded into every MAC: mode 0 with a zero
// exporter on plaintext, mode 1 with the TLS session's exporter value.
type Binding struct {
	TLS      bool
	Exporter [ExporterBytes]byte
}

// Transcript is what a handshake MAC covers, identical on both ends.
type Transcript struct {
	Cluster    consensus.Uint128
	DialerID   uint8
	AcceptorID uint8
	NonceD     [NonceBytes]byte
	NonceA     [NonceBytes]byte
	Binding    Binding
}

// Auth holds the MAC keys derived from the cluster PSK (never the PSK
// itself): one to sign and verify, and during a rotation a second key that
// only verifies. The zero value is unusable; nil *Auth means auth is off.
type Auth struct {
	key      [32]byte
	previous *[32]byte
}

// NewAuth derives the MAC key from shared; a non-empty previous adds the
// verify-only key of the rotation window.
func NewAuth(shared, previous []byte) *Auth {
	a := &Auth{}
	blake3.DeriveKey(macKeyContext, shared, a.key[:])
	if len(previous) > 0 {
		a.previous = new([32]byte)
		blake3.DeriveKey(macKeyContext, previous, a.previous[:])
	}
	return a
}

func computeMAC(key *[32]byte, dir byte, t *Transcript) [MACBytes]byte {
	h, err := blake3.NewKeyed(key[:])
	if err != nil {
		panic("blake3 keyed hash with a 32-byte key: " + err.Error()) // unreachable: the key is 32 bytes
	}
	var cluster [16]byte
	putU128(cluster[:], t.Cluster)
	var mode byte
	if t.Binding.TLS {
		mode = 1
	}
	_, _ = h.WriteString(macDomainTag)
	_, _ = h.Write(cluster[:])
	_, _ = h.Write([]byte{t.DialerID, t.AcceptorID})
	_, _ = h.Write(t.NonceD[:])
	_, _ = h.Write(t.NonceA[:])
	_, _ = h.Write([]byte{mode})
	_, _ = h.Write(t.Binding.Exporter[:]) // zeros on plaintext
	_, _ = h.Write([]byte{dir})
	var mac [MACBytes]byte
	h.Sum(mac[:0])
	return mac
}

// DialerMAC is the MAC the dialer sends in ReplicaFinish.
func (a *Auth) DialerMAC(t *Transcript) [MACBytes]byte { return computeMAC(&a.key, dirDialer, t) }

// AcceptorMAC is the MAC the acceptor sends in ReplicaChallenge.
func (a *Auth) AcceptorMAC(t *Transcript) [MACBytes]byte { return computeMAC(&a.key, dirAcceptor, t) }

// VerifyDialerMAC checks a dialer MAC against the current or previous key.
func (a *Auth) VerifyDialerMAC(t *Transcript, mac []byte) bool { return a.verify(dirDialer, t, mac) }

// VerifyAcceptorMAC checks an acceptor MAC against the current or previous key.
func (a *Auth) VerifyAcceptorMAC(t *Transcript, mac []byte) bool {
	return a.verify(dirAcceptor, t, mac)
}

// verify compares in constant time; trying the previous key reveals only
// which cluster key signed, which every key holder knows.
func (a *Auth) verify(dir byte, t *Transcript, mac []byte) bool {
	want := computeMAC(&a.key, dir, t)
	if subtle.ConstantTimeCompare(want[:], mac) == 1 {
		return true
	}
	if a.previous == nil {
		return false
	}
	want = computeMAC(a.previous, dir, t)
	return subtle.ConstantTimeCompare(want[:], mac) == 1
}

// newNonce draws a handshake nonce from the system CSPRNG. An all-zero
// draw (probability 2^-256) would read as "no nonce"; it is redrawn.
func newNonce() ([NonceBytes]byte, error) {
	var n [NonceBytes]byte
	for range 4 {
		if _, err := rand.Read(n[:]); err != nil {
			return n, fmt.Errorf("replica handshake nonce: %w", err)
		}
		if !allZero(n[:]) {
			return n, nil
		}
	}
	return n, fmt.Errorf("replica handshake nonce: CSPRNG returned zeros")
}
