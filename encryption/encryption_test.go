package encryption

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/wire"
)

func testCipher(t *testing.T, fill byte) *Cipher {
	t.Helper()
	c, err := New(bytes.Repeat([]byte{fill}, KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestKeyRuleMatchesConfig(t *testing.T) {
	if KeyRule != config.EncryptionKeyRule {
		t.Fatal("encryption.KeyRule and config.EncryptionKeyRule differ")
	}
	for _, key := range []string{base64.StdEncoding.EncodeToString(make([]byte, 32)), base64.StdEncoding.EncodeToString(make([]byte, 31)), "%%%"} {
		cfg, err := config.Defaults()
		if err != nil {
			t.Fatal(err)
		}
		cfg.System.Encryption.Enabled, cfg.System.Encryption.Key = true, config.Secret(key)
		_, parseErr := ParseKey(key)
		if (cfg.Validate() == nil) != (parseErr == nil) {
			t.Fatalf("config and ParseKey disagree on a key: validate %v, parse %v", cfg.Validate(), parseErr)
		}
	}
}

func TestParseKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if key, err := ParseKey(good); err != nil || len(key) != 32 {
		t.Fatalf("good key: %v", err)
	}
	for name, bad := range map[string]string{
		"16 bytes":   base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"33 bytes":   base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"not base64": "this is not base64!",
		"unpadded":   strings.TrimRight(good, "="),
		"empty":      "",
	} {
		_, err := ParseKey(bad)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("%s: the error repeats the key: %v", name, err)
		}
	}
	if _, err := FromBase64("c2hvcnQ="); err == nil || !strings.Contains(err.Error(), "32 bytes") || strings.Contains(err.Error(), "c2hvcnQ=") {
		t.Fatalf("FromBase64 error must state the rule and hide the key: %v", err)
	}
}

// TestOpenUpstreamFormat: a section is [nonce 12][ciphertext][tag 16], plain
// AES-256-GCM without associated data (upstream's Aes256GcmEncryptor layout),
// checked against the GCM spec's test case 15 (256-bit key, 96-bit IV).
func TestOpenUpstreamFormat(t *testing.T) {
	key, _ := hex.DecodeString("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
	iv, _ := hex.DecodeString("cafebabefacedbaddecaf888")
	plain, _ := hex.DecodeString("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255")
	ct, _ := hex.DecodeString("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad")
	tag, _ := hex.DecodeString("b094dac5d93471bdec1a502270e3cc6c")
	c, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Open(nil, append(append(append([]byte(nil), iv...), ct...), tag...))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %v", err)
	}
}

func TestSealOpen(t *testing.T) {
	c := testCipher(t, 1)
	a, _ := c.Seal(nil, []byte("Hello World!"))
	b, _ := c.Seal(nil, []byte("Hello World!"))
	if len(a) != len("Hello World!")+Overhead || bytes.Equal(a, b) {
		t.Fatal("sealing must add nonce+tag and use a fresh nonce each time")
	}
	if got, err := c.Open(nil, a); err != nil || string(got) != "Hello World!" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := testCipher(t, 2).Open(nil, a); !errors.Is(err, ErrCannotDecrypt) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := c.Open(nil, a[:Overhead-1]); !errors.Is(err, ErrCannotDecrypt) {
		t.Fatalf("short section: %v", err)
	}
}

func testBatch(t *testing.T) []byte {
	t.Helper()
	headers := wire.TLVPair{KeyKind: wire.KindString, Key: []byte("k"), ValueKind: wire.KindString, Value: []byte("v")}.Append(nil)
	b, err := wire.AppendBatch(nil, []wire.BatchMessageInput{
		{ID: [16]byte{1}, OriginTimestamp: 100, Payload: []byte("first secret payload")},
		{ID: [16]byte{2}, OriginTimestamp: 150, Payload: []byte("second secret payload"), UserHeaders: headers},
		{ID: [16]byte{3}, OriginTimestamp: 170, Payload: bytes.Repeat([]byte("x"), 5000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchRoundTrip: the encrypted batch verifies like any batch, holds no
// plaintext, stamps like any batch, and decrypts to exactly the stamped
// plaintext batch (valid frame and batch checksums for the client).
func TestBatchRoundTrip(t *testing.T) {
	c := testCipher(t, 9)
	plain := testBatch(t)
	enc, err := c.EncryptBatch(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.VerifyBatch(enc); err != nil {
		t.Fatalf("encrypted batch does not verify: %v", err)
	}
	if bytes.Contains(enc, []byte("secret")) || bytes.Contains(enc, []byte("xxxxxxxx")) || bytes.Contains(enc, []byte{2, 1, 0, 0, 0, 'k'}) {
		t.Fatal("plaintext payload or user headers left in the encrypted batch")
	}
	if want := len(plain) + 4*Overhead; len(enc) != want {
		t.Fatalf("encrypted batch %d bytes, want %d (three payloads + one user-headers block sealed)", len(enc), want)
	}
	// Apply stamps the encrypted batch; the stamped plaintext is what a client must read back.
	if err := wire.StampBatch(enc, 3, 40, 12345); err != nil {
		t.Fatal(err)
	}
	if err := wire.StampBatch(plain, 3, 40, 12345); err != nil {
		t.Fatal(err)
	}
	twice := append(append([]byte(nil), enc...), enc...)
	got, err := c.DecryptRecords(nil, twice)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(append([]byte(nil), plain...), plain...)) {
		t.Fatal("decrypted records differ from the stamped plaintext batch")
	}
	if _, err := wire.VerifyBatch(got[:len(plain)]); err != nil {
		t.Fatalf("decrypted batch does not verify: %v", err)
	}
	// A slice of a stored batch (what a poll may return) decrypts too.
	slice, err := wire.SliceBatch(enc, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := wire.SliceBatch(plain, 1, 2)
	if got, err := c.DecryptRecords(nil, slice); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decrypted slice differs: %v", err)
	}
	if _, err := testCipher(t, 8).DecryptRecords(nil, enc); !errors.Is(err, ErrCannotDecrypt) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := c.DecryptRecords(nil, plain); !errors.Is(err, ErrCannotDecrypt) {
		t.Fatalf("plaintext stored before encryption was enabled: %v", err)
	}
}

func BenchmarkEncryptBatch1MB(b *testing.B) {
	c, _ := New(bytes.Repeat([]byte{1}, KeyBytes))
	msgs := make([]wire.BatchMessageInput, 1000)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{ID: [16]byte{byte(i)}, OriginTimestamp: 1, Payload: bytes.Repeat([]byte{byte(i)}, 1000)}
	}
	batch, _ := wire.AppendBatch(nil, msgs)
	var dst []byte
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		dst, _ = c.EncryptBatch(dst[:0], batch)
	}
}

func BenchmarkDecryptBatch1MB(b *testing.B) {
	c, _ := New(bytes.Repeat([]byte{1}, KeyBytes))
	msgs := make([]wire.BatchMessageInput, 1000)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{ID: [16]byte{byte(i)}, OriginTimestamp: 1, Payload: bytes.Repeat([]byte{byte(i)}, 1000)}
	}
	batch, _ := wire.AppendBatch(nil, msgs)
	enc, _ := c.EncryptBatch(nil, batch)
	var dst []byte
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		dst, _ = c.DecryptRecords(dst[:0], enc)
	}
}

func TestCheckSealedLimits(t *testing.T) {
	if err := CheckSealedLimits(testBatch(t)); err != nil {
		t.Fatal(err)
	}
	big, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{ID: [16]byte{1}, Payload: make([]byte, wire.BatchPayloadBytesMax-Overhead+1)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSealedLimits(big); wire.ErrorCodeOf(err) != wire.ErrTooBigMessagePayload {
		t.Fatalf("payload at the limit: %v", err)
	}
	headers := make([]byte, 0, wire.BatchUserHeadersBytesMax)
	for len(headers)+2*(5+255) <= wire.BatchUserHeadersBytesMax {
		headers = wire.TLVPair{KeyKind: wire.KindString, Key: bytes.Repeat([]byte("k"), 255), ValueKind: wire.KindRaw, Value: bytes.Repeat([]byte("v"), 255)}.Append(headers)
	}
	// Top up to within Overhead of the limit: the plaintext passes, the sealed block would not.
	headers = wire.TLVPair{KeyKind: wire.KindString, Key: []byte("z"), ValueKind: wire.KindRaw,
		Value: make([]byte, wire.BatchUserHeadersBytesMax-len(headers)-11-Overhead/2)}.Append(headers)
	withHeaders, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{ID: [16]byte{1}, Payload: []byte("p"), UserHeaders: headers}})
	if err != nil {
		t.Fatal(err)
	}
	if len(headers) > wire.BatchUserHeadersBytesMax || len(headers)+Overhead <= wire.BatchUserHeadersBytesMax {
		t.Fatalf("test setup: %d bytes of user headers", len(headers))
	}
	if err := CheckSealedLimits(withHeaders); wire.ErrorCodeOf(err) != wire.ErrTooBigUserHeaders {
		t.Fatalf("user headers near the limit (%d bytes): %v", len(headers), err)
	}
}
