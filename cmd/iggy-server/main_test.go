package main

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/node"
)

// TestWedgedStorageExitsAfterTheGrace: once the node reports wedged
// storage, the process exits with ExitStorageWedged after the grace
// period even if the shutdown never finishes (a write stuck in the kernel).
func TestWedgedStorageExitsAfterTheGrace(t *testing.T) {
	var mu sync.Mutex
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	onWedged := exitAfterGrace(20*time.Millisecond, func(code int) { exited <- code }, &lockedWriter{mu: &mu, w: &stderr})
	onWedged(errors.New("partition storage wedged"))
	select {
	case code := <-exited:
		if code != node.ExitStorageWedged {
			t.Fatalf("exit %d, want %d", code, node.ExitStorageWedged)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit after the grace period")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(stderr.String(), "partition storage wedged") {
		t.Fatalf("stderr %q does not say why", stderr.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
