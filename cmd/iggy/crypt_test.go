package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/encryption"
	"github.com/lodestream/lodestream/wire"
)

func TestClientSideEncryption(t *testing.T) {
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	a.globals.encryptionKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if err := a.loadCipher(); err != nil {
		t.Fatal(err)
	}
	m := wire.BatchMessageInput{Payload: []byte("secret"), UserHeaders: []byte("hdrs")}
	if err := a.seal(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Payload) != len("secret")+encryption.Overhead || bytes.Contains(m.Payload, []byte("secret")) {
		t.Fatalf("sealed payload %x", m.Payload)
	}
	p := wire.PolledMessage{Payload: m.Payload, UserHeaders: m.UserHeaders}
	if err := a.open(&p); err != nil || string(p.Payload) != "secret" || string(p.UserHeaders) != "hdrs" {
		t.Fatalf("opened %q %q %v", p.Payload, p.UserHeaders, err)
	}
	plain := wire.PolledMessage{Payload: []byte("not encrypted at all, long enough")}
	if err := a.open(&plain); !errors.Is(err, encryption.ErrCannotDecrypt) {
		t.Fatalf("open of plaintext: %v", err)
	}
	for _, bad := range []string{"!!", base64.StdEncoding.EncodeToString([]byte("short"))} {
		code, _, stderr := runCLI(t, "", "--encryption-key", bad, "ping")
		if code != 2 || !strings.Contains(stderr, "--encryption-key") || strings.Contains(stderr, bad) && len(bad) > 2 {
			t.Errorf("key %q: exit %d, %q", bad, code, stderr)
		}
	}
}
