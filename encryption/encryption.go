// Package encryption is at-rest encryption of message payloads, as Apache
// Iggy does it (core/common/src/utils/crypto.rs Aes256GcmEncryptor and
// core/server_common/src/send_messages.rs encrypt_batch_request /
// decrypt_batch_record): AES-256-GCM with the configured 32-byte key; every
// payload and every non-empty user-headers block is sealed separately as
// [nonce 12 B][ciphertext][tag 16 B] with a fresh random nonce. The primary
// encrypts a batch once at admission, so the ciphertext is what is
// replicated, checksummed and stored; a poll reply decrypts it and restamps
// lengths and checksums, so clients see the plaintext batch they sent.
package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/wire"
)

// Sizes of the sealed form.
const (
	KeyBytes   = 32
	NonceBytes = 12
	TagBytes   = 16
	// Overhead is what sealing adds to a section.
	Overhead = NonceBytes + TagBytes
)

// KeyRule is the configuration rule for system.encryption.key; config
// (config.EncryptionKeyRule) refuses a bad key with the same text before
// anything runs (a test keeps the two equal).
const KeyRule = "must be the base64 (standard alphabet, padded) encoding of exactly 32 bytes (an AES-256 key), e.g. the output of `openssl rand -base64 32`"

// ParseKey decodes a base64 key. Errors never contain the key.
func ParseKey(b64 string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("not valid base64")
	}
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("decodes to %d bytes, not %d", len(key), KeyBytes)
	}
	return key, nil
}

// Cipher seals and opens message sections. It is safe for concurrent use.
type Cipher struct {
	aead cipher.AEAD
}

// New returns a Cipher for a 32-byte key.
func New(key []byte) (*Cipher, error) {
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("encryption key is %d bytes, not %d", len(key), KeyBytes)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	return &Cipher{aead: aead}, nil
}

// FromBase64 is ParseKey then New.
func FromBase64(b64 string) (*Cipher, error) {
	key, err := ParseKey(b64)
	if err != nil {
		return nil, fmt.Errorf("system.encryption.key %s: %s", err, KeyRule)
	}
	return New(key)
}

// Seal appends [nonce][ciphertext][tag] of plaintext to dst.
func (c *Cipher) Seal(dst, plaintext []byte) ([]byte, error) {
	var nonce [NonceBytes]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return dst, fmt.Errorf("encryption nonce: %w", err)
	}
	dst = append(dst, nonce[:]...)
	return c.aead.Seal(dst, nonce[:], plaintext, nil), nil
}

// ErrCannotDecrypt reports a section that does not open with this key (wrong
// key, plaintext stored before encryption was enabled, or corruption).
var ErrCannotDecrypt = errors.New("cannot decrypt data")

// Open appends the plaintext of a sealed section to dst.
func (c *Cipher) Open(dst, sealed []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return dst, fmt.Errorf("%w: sealed section of %d bytes is shorter than the %d-byte nonce and tag", ErrCannotDecrypt, len(sealed), Overhead)
	}
	out, err := c.aead.Open(dst, sealed[:NonceBytes], sealed[NonceBytes:], nil)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrCannotDecrypt, err)
	}
	return out, nil
}

// EncryptBatch appends to dst the batch record with every payload and
// non-empty user-headers block sealed (see wire.AppendTransformedBatch).
func (c *Cipher) EncryptBatch(dst, record []byte) ([]byte, error) {
	return wire.AppendTransformedBatch(dst, record, c.Seal)
}

// DecryptRecords appends to dst the batch records of records (back to
// back, as in a poll reply) with every section opened.
func (c *Cipher) DecryptRecords(dst, records []byte) ([]byte, error) {
	for len(records) > 0 {
		h, err := wire.DecodeBatchHeader(records)
		if err != nil {
			return dst, err
		}
		if h.BatchLength > uint64(len(records)) {
			return dst, fmt.Errorf("batch record of %d bytes overruns the %d left", h.BatchLength, len(records))
		}
		if dst, err = wire.AppendTransformedBatch(dst, records[:h.BatchLength], c.Open); err != nil {
			return dst, err
		}
		records = records[h.BatchLength:]
	}
	return dst, nil
}

// CheckSealedLimits reports whether a verified plaintext batch still fits
// the admission limits once sealed (each sealed section grows by
// Overhead): a payload over wire.BatchPayloadBytesMax is
// TooBigMessagePayload, user headers over wire.BatchUserHeadersBytesMax
// TooBigUserHeaders, and a batch that would no longer fit one request frame
// InvalidMessagePayloadLength. Without this a batch admitted at the limit
// would be stored in a form that recovery refuses.
func CheckSealedLimits(record []byte) error {
	var total uint64 = wire.BatchHeaderSize
	it := wire.NewBatchIter(record)
	for it.Next() {
		m := it.Message()
		if uint64(m.PayloadLength)+Overhead > wire.BatchPayloadBytesMax {
			return fmt.Errorf("message %d: payload of %d bytes exceeds %d once encrypted (+%d bytes): %w",
				it.Index()-1, m.PayloadLength, wire.BatchPayloadBytesMax, Overhead, wire.ErrTooBigMessagePayload)
		}
		sealed := m.FrameSize() + Overhead
		if m.UserHeadersLength > 0 {
			if uint64(m.UserHeadersLength)+Overhead > wire.BatchUserHeadersBytesMax {
				return fmt.Errorf("message %d: user headers of %d bytes exceed %d once encrypted (+%d bytes): %w",
					it.Index()-1, m.UserHeadersLength, wire.BatchUserHeadersBytesMax, Overhead, wire.ErrTooBigUserHeaders)
			}
			sealed += Overhead
		}
		total += sealed
	}
	if err := it.Err(); err != nil {
		return err
	}
	if limit := uint64(wire.BatchFrameBytesMax - wire.HeaderSize); total > limit {
		return fmt.Errorf("batch of %d bytes once encrypted exceeds %d: %w", total, limit, wire.ErrInvalidMessagePayloadLength)
	}
	return nil
}
