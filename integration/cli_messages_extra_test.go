package integration

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIMessageHeadersFilesAndEncryption covers message send -H and --input-file, message poll
// -s and --output-file, and --encryption-key against the real server.
func TestCLIMessageHeadersFilesAndEncryption(t *testing.T) {
	s := startServer(t, "")
	iggyCLI(t, s.addr, "", "stream", "create", "mx").ok(t)
	for _, topic := range []string{"src", "copy", "sealed"} {
		iggyCLI(t, s.addr, "", "topic", "create", "mx", topic, "1", "none").ok(t)
	}
	iggyCLI(t, s.addr, "", "message", "send", "-H", "trace:string:abc,n:uint32:7", "-H", "ok:bool:true", "mx", "src", "one", "two").ok(t)
	out := iggyCLI(t, s.addr, "", "message", "poll", "--first", "-m", "2", "-s", "mx", "src", "0").ok(t)
	for _, want := range []string{"Header: n (uint32)", "Header: trace (string)", "Header: ok (bool)", "| abc", "| 7", "| true"} {
		if !strings.Contains(out, want) {
			t.Errorf("poll -s lacks %q:\n%s", want, out)
		}
	}
	if plain := iggyCLI(t, s.addr, "", "message", "poll", "--first", "mx", "src", "0").ok(t); strings.Contains(plain, "Header:") {
		t.Errorf("poll without -s shows headers:\n%s", plain)
	}
	iggyCLI(t, s.addr, "", "message", "send", "-H", "bad", "mx", "src", "x").fails(t, 2, "KEY:KIND:VALUE")

	// --output-file appends upstream's binary layout; --input-file sends it again, headers kept.
	file := filepath.Join(t.TempDir(), "saved.bin")
	iggyCLI(t, s.addr, "", "message", "poll", "--first", "-m", "1", "--output-file", file, "mx", "src", "0").ok(t)
	iggyCLI(t, s.addr, "", "message", "poll", "--offset", "1", "-m", "1", "--output-file", file, "mx", "src", "0").ok(t)
	if st, err := os.Stat(file); err != nil || st.Size() < 2*64 {
		t.Fatalf("output file: %v %v", st, err)
	}
	if out := iggyCLI(t, s.addr, "", "message", "send", "--input-file", file, "mx", "copy").ok(t); !strings.Contains(out, "Sent 2 message(s)") {
		t.Fatalf("send --input-file: %s", out)
	}
	var copied []struct {
		Payload string `json:"payload"`
		Headers []struct{ Key, Value string }
	}
	for _, line := range strings.Split(strings.TrimSpace(iggyCLI(t, s.addr, "", "--output", "json", "message", "poll", "--first", "-m", "5", "-s", "mx", "copy", "0").ok(t)), "\n") {
		var m struct {
			Payload string `json:"payload"`
			Headers []struct{ Key, Value string }
		}
		decodeJSON(t, line, &m)
		copied = append(copied, m)
	}
	if len(copied) != 2 || copied[0].Payload != "one" || copied[1].Payload != "two" || len(copied[1].Headers) != 3 {
		t.Fatalf("copied messages = %+v", copied)
	}
	iggyCLI(t, s.addr, "", "message", "send", "--input-file", file, "mx", "copy", "extra").fails(t, 2, "cannot be combined")
	iggyCLI(t, s.addr, "", "message", "send", "--input-file", filepath.Join(t.TempDir(), "none"), "mx", "copy").fails(t, 1, "open input file")

	// --encryption-key: the server stores ciphertext; only the key reads it back.
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	iggyCLI(t, s.addr, "", "--encryption-key", key, "message", "send", "-H", "k:string:v", "mx", "sealed", "top secret").ok(t)
	if raw := iggyCLI(t, s.addr, "", "message", "poll", "--first", "mx", "sealed", "0").ok(t); strings.Contains(raw, "top secret") {
		t.Fatalf("the server returned the plaintext without the key:\n%s", raw)
	}
	if out := iggyCLI(t, s.addr, "", "--encryption-key", key, "message", "poll", "--first", "-s", "mx", "sealed", "0").ok(t); !strings.Contains(out, "top secret") || !strings.Contains(out, "Header: k (string)") {
		t.Fatalf("poll with the key:\n%s", out)
	}
	other := base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))
	iggyCLI(t, s.addr, "", "--encryption-key", other, "message", "poll", "--first", "mx", "sealed", "0").fails(t, 1, "cannot decrypt")
	iggyCLI(t, s.addr, "", "--encryption-key", "short", "message", "poll", "--first", "mx", "sealed", "0").fails(t, 2, "--encryption-key")
}
