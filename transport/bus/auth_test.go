package bus

import (
	"encoding/hex"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/lodestream/lodestream/consensus"
)

const (
	secretOld = "old-secret-0123456789abcdef-0123456789"
	secretNew = "new-secret-fedcba9876543210-fedcba9876"
	secretBad = "attacker-secret-ffffffffffffffffffffff"
)

// TestBLAKE3KnownAnswers pins the module's keyed hash and derive_key to the
// official BLAKE3 test vectors (input length 0), so the MAC key derivation
// and the keyed MAC use the functions the spec names.
func TestBLAKE3KnownAnswers(t *testing.T) {
	h, err := blake3.NewKeyed([]byte("whats the Elvish word for friend"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26" {
		t.Fatalf("keyed_hash(empty) = %s", got)
	}
	var dk [32]byte
	blake3.DeriveKey("BLAKE3 2019-12-27 16:29:52 test vectors context", nil, dk[:])
	if got := hex.EncodeToString(dk[:]); got != "2cc39783c223154fea8dfb7c1b1660f2ac2dcbd1c1de8277b0b0dd39b7e50d7d" {
		t.Fatalf("derive_key(empty) = %s", got)
	}
	sum := blake3.Sum256(nil)
	if got := hex.EncodeToString(sum[:]); got != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Fatalf("hash(empty) = %s", got)
	}
}

// TestClusterID: the first 16 bytes of BLAKE3(name), little-endian.
func TestClusterID(t *testing.T) {
	sum := blake3.Sum256([]byte("iggy-cluster"))
	want := consensus.Uint128{Lo: le.Uint64(sum[0:]), Hi: le.Uint64(sum[8:])}
	if got := ClusterID("iggy-cluster"); got != want || got.IsZero() {
		t.Fatalf("ClusterID = %+v, want %+v", got, want)
	}
	if ClusterID("iggy-cluster") == ClusterID("other") {
		t.Fatal("distinct names share a cluster id")
	}
}

func testTranscript() Transcript {
	t := Transcript{Cluster: testCluster, DialerID: 1, AcceptorID: 3}
	for i := range t.NonceD {
		t.NonceD[i] = 0x11
		t.NonceA[i] = 0x22
	}
	return t
}

// TestMACTranscriptLayout: the MAC is BLAKE3 keyed (key = derive_key of
// the PSK) over the exact transcript of spec §7.2, built here by hand.
func TestMACTranscriptLayout(t *testing.T) {
	tr := testTranscript()
	tr.Binding = Binding{TLS: true}
	for i := range tr.Binding.Exporter {
		tr.Binding.Exporter[i] = 0xEE
	}
	var key [32]byte
	blake3.DeriveKey("apache-iggy replica-auth v1 psk->mac-key", []byte(secretOld), key[:])
	var msg []byte
	msg = append(msg, "apache-iggy replica-auth v1"...)
	msg = le.AppendUint64(msg, testCluster.Lo)
	msg = le.AppendUint64(msg, testCluster.Hi)
	msg = append(msg, 1, 3)
	msg = append(msg, tr.NonceD[:]...)
	msg = append(msg, tr.NonceA[:]...)
	msg = append(msg, 1) // mode: TLS
	msg = append(msg, tr.Binding.Exporter[:]...)
	for _, dir := range []byte{1, 2} {
		h, err := blake3.NewKeyed(key[:])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = h.Write(append(append([]byte{}, msg...), dir))
		want := h.Sum(nil)
		a := NewAuth([]byte(secretOld), nil)
		got := a.DialerMAC(&tr)
		if dir == 2 {
			got = a.AcceptorMAC(&tr)
		}
		if hex.EncodeToString(got[:]) != hex.EncodeToString(want) {
			t.Fatalf("dir %d: MAC differs from the hand-built transcript", dir)
		}
	}
}

func TestMACRules(t *testing.T) {
	old, fresh, bad := NewAuth([]byte(secretOld), nil), NewAuth([]byte(secretNew), nil), NewAuth([]byte(secretBad), nil)
	tr := testTranscript()
	mac := func(a *Auth, tr Transcript) []byte { m := a.DialerMAC(&tr); return m[:] }

	if !old.VerifyDialerMAC(&tr, mac(old, tr)) {
		t.Fatal("own MAC does not verify")
	}
	if old.VerifyDialerMAC(&tr, mac(bad, tr)) {
		t.Fatal("wrong key verified")
	}
	acc := old.AcceptorMAC(&tr)
	if old.VerifyDialerMAC(&tr, acc[:]) || old.VerifyAcceptorMAC(&tr, mac(old, tr)) {
		t.Fatal("a MAC verified in the other direction (reflection)")
	}
	replay := tr
	replay.NonceA[0] ^= 1
	if old.VerifyDialerMAC(&replay, mac(old, tr)) {
		t.Fatal("MAC verified against another nonce (replay)")
	}
	swapped := tr
	swapped.DialerID, swapped.AcceptorID = tr.AcceptorID, tr.DialerID
	if old.VerifyDialerMAC(&swapped, mac(old, tr)) {
		t.Fatal("MAC verified for the swapped pair")
	}
	otherCluster := tr
	otherCluster.Cluster.Lo++
	if old.VerifyDialerMAC(&otherCluster, mac(old, tr)) {
		t.Fatal("MAC verified for another cluster")
	}
	sessionA, sessionB := tr, tr
	sessionA.Binding = Binding{TLS: true, Exporter: [32]byte{0xAA}}
	sessionB.Binding = Binding{TLS: true, Exporter: [32]byte{0xBB}}
	if old.VerifyDialerMAC(&sessionB, mac(old, sessionA)) {
		t.Fatal("MAC bound to one TLS session verified in another (relay)")
	}
	zeroTLS := tr
	zeroTLS.Binding = Binding{TLS: true}
	if old.VerifyDialerMAC(&zeroTLS, mac(old, tr)) {
		t.Fatal("a zero TLS exporter aliases plaintext")
	}
	if old.VerifyDialerMAC(&tr, mac(fresh, tr)) {
		t.Fatal("new key verified without a rotation window")
	}
}

// TestRotationWindow: signing uses shared_secret only; verification
// accepts shared_secret or previous_shared_secret, nothing else.
func TestRotationWindow(t *testing.T) {
	tr := testTranscript()
	oldOnly, newOnly := NewAuth([]byte(secretOld), nil), NewAuth([]byte(secretNew), nil)
	step1 := NewAuth([]byte(secretOld), []byte(secretNew)) // shared=old, previous=new
	step2 := NewAuth([]byte(secretNew), []byte(secretOld)) // shared=new, previous=old
	bad := NewAuth([]byte(secretBad), nil)
	for _, c := range []struct {
		name           string
		signer, verify *Auth
		ok             bool
	}{
		{"step1 verifies old", oldOnly, step1, true},
		{"step1 verifies new", newOnly, step1, true},
		{"step2 verifies old", oldOnly, step2, true},
		{"step2 verifies new", newOnly, step2, true},
		{"step1 signer accepted by step2", step1, step2, true},
		{"step2 signer accepted by step1", step2, step1, true},
		{"step2 signer accepted by new only", step2, newOnly, true},
		{"step1 signer accepted by old only", step1, oldOnly, true},
		{"step2 signs with new, not old", step2, oldOnly, false},
		{"step3 rejects retired old", oldOnly, newOnly, false},
		{"window rejects a third key", bad, step2, false},
	} {
		d, a := c.signer.DialerMAC(&tr), c.signer.AcceptorMAC(&tr)
		if got := c.verify.VerifyDialerMAC(&tr, d[:]) && c.verify.VerifyAcceptorMAC(&tr, a[:]); got != c.ok {
			t.Errorf("%s: verified = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestReadStatus(t *testing.T) {
	for b := range 256 {
		s := readStatus(byte(b))
		switch {
		case b == 0 && s != StatusOK:
			t.Fatal("0 is not OK")
		case b >= 2 && b <= 5 && s != Status(b):
			t.Fatalf("%d reads %v", b, s)
		case (b == 1 || b > 5) && s != StatusUnknownCommand:
			t.Fatalf("%d reads %v, want unknown_command", b, s)
		}
	}
}
