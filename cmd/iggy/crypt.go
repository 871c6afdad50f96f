package main

import (
	"fmt"

	"github.com/lodestream/lodestream/encryption"
	"github.com/lodestream/lodestream/wire"
)

// Client-side payload encryption (--encryption-key), as upstream's SDK does it when its client
// has an encryptor: every payload and every non-empty user-headers block is sealed with
// AES-256-GCM as [nonce 12 B][ciphertext][tag 16 B] before sending, and opened after polling.
// The layout is the server's at-rest one (package encryption), so the same key reads either.

// loadCipher parses --encryption-key (base64 of 32 bytes); an empty key disables encryption.
func (a *app) loadCipher() error {
	if a.globals.encryptionKey == "" {
		return nil
	}
	key, err := encryption.ParseKey(a.globals.encryptionKey)
	if err != nil {
		return usagef("--encryption-key %v: it must be the base64 encoding of 32 bytes (e.g. openssl rand -base64 32)", err)
	}
	c, err := encryption.New(key)
	if err != nil {
		return usagef("--encryption-key: %v", err)
	}
	a.cipher = c
	return nil
}

// seal encrypts m's payload and user headers in place when a key is set.
func (a *app) seal(m *wire.BatchMessageInput) error {
	if err := a.crypt(&m.Payload, &m.UserHeaders, a.cipher.Seal); err != nil {
		return fmt.Errorf("encrypt %w", err)
	}
	return nil
}

// open decrypts m's payload and user headers in place when a key is set.
func (a *app) open(m *wire.PolledMessage) error {
	if err := a.crypt(&m.Payload, &m.UserHeaders, a.cipher.Open); err != nil {
		return fmt.Errorf("message at offset %d: %w (wrong --encryption-key, or the message was not encrypted)", m.Offset, err)
	}
	return nil
}

// crypt applies fn (Seal or Open) to the payload and to non-empty user headers.
func (a *app) crypt(payload, headers *[]byte, fn func(dst, src []byte) ([]byte, error)) error {
	if a.cipher == nil {
		return nil
	}
	var err error
	if *payload, err = fn(nil, *payload); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if len(*headers) > 0 {
		if *headers, err = fn(nil, *headers); err != nil {
			return fmt.Errorf("user headers: %w", err)
		}
	}
	return nil
}
