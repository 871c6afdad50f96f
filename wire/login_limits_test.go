package wire

import (
	"strings"
	"testing"
)

// The largest Register the SDKs can send fits PreLoginFrameBytesMax
// exactly; a longer client_context is refused.
func TestPreLoginFrameBytesMaxCoversTheLargestRegister(t *testing.T) {
	long := strings.Repeat("x", 255)
	largest := RegisterRequest{
		Kind:     RegisterWithPassword,
		Version:  ClientVersionInfo{ProtocolVersion: ProtocolVersion, SDKName: long, SDKVersion: long},
		Username: long, Password: long, ClientContext: strings.Repeat("c", ClientContextBytesMax),
	}
	body, err := largest.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got := HeaderSize + len(body); got != PreLoginFrameBytesMax {
		t.Fatalf("largest Register frame is %d bytes, PreLoginFrameBytesMax is %d", got, PreLoginFrameBytesMax)
	}
	if _, err := DecodeRegister(body); err != nil {
		t.Fatalf("largest Register refused: %v", err)
	}
	pat := largest
	pat.Kind, pat.Token = RegisterWithToken, long
	if body, err := pat.Encode(); err != nil || HeaderSize+len(body) > PreLoginFrameBytesMax {
		t.Fatalf("token Register of %d bytes (%v) exceeds the bound", HeaderSize+len(body), err)
	}
	largest.ClientContext += "c"
	body, err = largest.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRegister(body); err == nil {
		t.Fatal("client_context above ClientContextBytesMax accepted")
	}
}
