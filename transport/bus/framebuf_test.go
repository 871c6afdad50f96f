package bus

import (
	"bytes"
	"testing"
)

func TestNewFrameBufferLengthAndIndependence(t *testing.T) {
	for _, n := range []int{0, 1, 2, 255, 256, 4096, 1 << 20, 1<<20 + 17} {
		a, b := newFrameBuffer(n), newFrameBuffer(n)
		if len(a) != n || len(b) != n {
			t.Fatalf("n=%d: lengths %d and %d", n, len(a), len(b))
		}
		for i := range a {
			a[i] = 0xAA
		}
		for i := range b {
			b[i] = 0x55
		}
		if n > 0 && !bytes.Equal(a, bytes.Repeat([]byte{0xAA}, n)) {
			t.Fatalf("n=%d: writing one buffer changed another", n)
		}
	}
}

func BenchmarkFrameBuffer1MiB(b *testing.B) {
	b.Run("make", func(b *testing.B) {
		for b.Loop() {
			sink = make([]byte, 1<<20)
		}
	})
	b.Run("newFrameBuffer", func(b *testing.B) {
		for b.Loop() {
			sink = newFrameBuffer(1 << 20)
		}
	})
}

var sink []byte
