package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func waitBudget(t *testing.T, s *TCPServer, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.budget.inUse() != want {
		if time.Now().After(deadline) {
			t.Fatalf("budget in use %d, want %d", s.budget.inUse(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readEcho(t *testing.T, c net.Conn, want []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := ReadFrame(c, 256, 1<<20)
	if err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echo differs: %d bytes, want %d", len(got), len(want))
	}
}

// Two trickling peers hold the whole in-flight budget: a third large frame
// is not read until one of them completes, then everything is answered and
// the budget returns to zero.
func TestInflightBudgetHoldsLargeFramesUntilReleased(t *testing.T) {
	h := &echoHandler{}
	s := startServer(t, TCPConfig{FrameBytesMax: 1 << 20, InflightFrameBytesMax: 256 << 10}, h)
	frame := frameOf(100<<10, 1) // pooled at 128 KiB
	a, b, c := dial(t, s), dial(t, s), dial(t, s)
	for _, conn := range []net.Conn{a, b} {
		if _, err := conn.Write(frame[:headerBytes+1000]); err != nil {
			t.Fatal(err)
		}
	}
	waitBudget(t, s, 256<<10)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := ReadFrame(c, 256, 1<<20); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("third frame answered while the budget was full: %v", err)
	}
	if _, err := a.Write(frame[headerBytes+1000:]); err != nil {
		t.Fatal(err)
	}
	readEcho(t, a, frame)
	readEcho(t, c, frame)
	if _, err := b.Write(frame[headerBytes+1000:]); err != nil {
		t.Fatal(err)
	}
	readEcho(t, b, frame)
	waitBudget(t, s, 0)
	if _, _, frames := h.counts(); frames != 3 {
		t.Fatalf("handled %d frames, want 3", frames)
	}
}

// A frame whose pooled size exceeds the whole budget can never be read:
// the connection is closed without a reply.
func TestFrameLargerThanBudgetClosesConnection(t *testing.T) {
	s := startServer(t, TCPConfig{FrameBytesMax: 1 << 20, InflightFrameBytesMax: 256 << 10}, &echoHandler{})
	c := dial(t, s)
	if _, err := c.Write(frameOf(512<<10, 1)[:headerBytes]); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFrame(c, 256, 1<<20); !errors.Is(err, io.EOF) {
		t.Fatalf("want the connection closed, got %v", err)
	}
	waitBudget(t, s, 0)
}

func TestAcquireFrameClasses(t *testing.T) {
	small := AcquireFrame(10, 1000)
	if len(small) != 10 || cap(small) != 1000 {
		t.Fatalf("small frame len %d cap %d", len(small), cap(small))
	}
	big := AcquireFrame(256, 1_000_000)
	if len(big) != 256 || cap(big) != 1<<20 {
		t.Fatalf("pooled frame len %d cap %d, want 256 and 1 MiB", len(big), cap(big))
	}
	ReleaseFrame(big)
	again := AcquireFrame(300_000, 0)
	if len(again) != 300_000 || cap(again) != 512<<10 {
		t.Fatalf("pooled frame len %d cap %d, want 300000 and 512 KiB", len(again), cap(again))
	}
	if frameClass(64<<10) != -1 || frameClass(64<<10+1) != pooledFrameClassMin || frameClass(1<<26+1) != -1 {
		t.Fatal("frame classes wrong at the pooled range's edges")
	}
}

// TestFramePoolingOff: system.memory_pool.enabled = false allocates every
// frame exactly and pools nothing.
func TestFramePoolingOff(t *testing.T) {
	SetFramePooling(false)
	defer SetFramePooling(true)
	if FramePooling() {
		t.Fatal("pooling still on")
	}
	big := AcquireFrame(256, 1_000_000)
	if len(big) != 256 || cap(big) != 1_000_000 {
		t.Fatalf("unpooled frame len %d cap %d, want 256 and exactly 1000000", len(big), cap(big))
	}
	ReleaseFrame(big)
	SetFramePooling(true)
	if again := AcquireFrame(256, 1<<20); cap(again) != 1<<20 {
		t.Fatalf("pooled frame cap %d", cap(again))
	}
}
