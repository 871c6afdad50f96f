package bus

import (
	"strings"
	"unsafe"
)

// newFrameBuffer returns a buffer of n bytes whose contents are
// unspecified: the reader overwrites all of it (header copy plus
// io.ReadFull) before anything decodes it, and drops it on a short read.
//
// Why not make: a backup reads every 1 MB prepare into a fresh frame that
// the consensus journal keeps (for repair) long after the reader is done,
// so frames cannot be pooled, and make zeroes each one before the socket
// copy overwrites it: 8 % of a backup's CPU at full load (BENCHMARKS.md).
// strings.Builder.Grow is the standard library's public path to the
// runtime's non-zeroing allocation; the buffer is the builder's, taken
// over once the builder is dropped. The aliasing is checked on every
// call, so a future Builder that copied in String falls back to make.
func newFrameBuffer(n int) []byte {
	if n < 2 {
		return make([]byte, n)
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	first := unsafe.StringData(sb.String())
	sb.WriteByte(0)
	if unsafe.StringData(sb.String()) != first || sb.Cap() < n {
		return make([]byte, n)
	}
	return unsafe.Slice(first, n)
}
