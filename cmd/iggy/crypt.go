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
	if a.cipher == nil {
		return nil
	}
	var err error
	if m.Payload, err = a.cipher.Seal(nil, m.Payload); err != nil {
		return fmt.Errorf("encrypt payload: %w", err)
	}
	if len(m.UserHeaders) > 0 {
		if m.UserHeaders, err = a.cipher.Seal(nil, m.UserHeaders); err != nil {
			return fmt.Errorf("encrypt user headers: %w", err)
		}
	}
	return nil
}

// open decrypts m's payload and user headers in place when a key is set.
func (a *app) open(m *wire.PolledMessage) error {
	if a.cipher == nil {
		return nil
	}
	var err error
	if m.Payload, err = a.cipher.Open(nil, m.Payload); err != nil {
		return fmt.Errorf("message at offset %d: payload: %w (wrong --encryption-key, or the message was not encrypted)", m.Offset, err)
	}
	if len(m.UserHeaders) > 0 {
		if m.UserHeaders, err = a.cipher.Open(nil, m.UserHeaders); err != nil {
			return fmt.Errorf("message at offset %d: user headers: %w", m.Offset, err)
		}
	}
	return nil
}
