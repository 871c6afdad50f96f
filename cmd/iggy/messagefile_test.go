package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestMessageFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.bin")
	msgs := []wire.PolledMessage{
		{Offset: 7, ID: [16]byte{1, 2}, Payload: []byte("hello"), UserHeaders: []byte{2, 1, 0, 0, 0, 'k', 2, 1, 0, 0, 0, 'v'}},
		{Offset: 8, ID: [16]byte{3}, Payload: []byte("world")},
	}
	// Two appends: the file grows, as upstream's --output-file does.
	for i := range msgs {
		if _, err := appendToMessageFile(path, msgs[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	var got []wire.BatchMessageInput
	n, err := readMessageFile(path, func(m wire.BatchMessageInput) error { got = append(got, m); return nil })
	if err != nil || n != 2 {
		t.Fatalf("read %d: %v", n, err)
	}
	for i, m := range got {
		if m.ID != msgs[i].ID || !bytes.Equal(m.Payload, msgs[i].Payload) || !bytes.Equal(m.UserHeaders, msgs[i].UserHeaders) {
			t.Errorf("message %d = %+v", i, m)
		}
	}
	data, _ := os.ReadFile(path)
	if len(data) != 2*messageFileHeaderSize+10+12 {
		t.Fatalf("file is %d bytes", len(data))
	}
	// A truncated file names the bad record.
	if err := os.WriteFile(path, data[:len(data)-2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readMessageFile(path, func(wire.BatchMessageInput) error { return nil }); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated file: %v", err)
	}
}
