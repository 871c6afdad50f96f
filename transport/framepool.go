package transport

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Frame buffers above eagerFrameBytesMax come from size-classed pools so a
// steady stream of 1 MB produce frames and poll replies reuses the same
// memory instead of allocating (and later collecting) a fresh buffer each
// time. A class holds buffers of exactly 1<<class bytes of capacity;
// sync.Pool drops idle buffers at GC, so the pools never pin memory.
const (
	pooledFrameClassMin = 17 // 128 KiB: frames ≤ eagerFrameBytesMax are allocated exactly
	pooledFrameClassMax = 26 // 64 MiB: DefaultFrameBytesMax
)

var framePools [pooledFrameClassMax + 1]sync.Pool

// framePoolsOff turns the pools off (system.memory_pool.enabled = false):
// every frame is then allocated exactly and left to the GC.
var framePoolsOff atomic.Bool

// SetFramePooling turns the frame pools on or off for the process
// (system.memory_pool.enabled; on by default).
func SetFramePooling(enabled bool) { framePoolsOff.Store(!enabled) }

// FramePooling reports whether the frame pools are on.
func FramePooling() bool { return !framePoolsOff.Load() }

// frameClass is the smallest pool class whose buffers hold sizeBytes, or
// -1 when sizeBytes is outside the pooled range.
func frameClass(sizeBytes int) int {
	if sizeBytes <= eagerFrameBytesMax || sizeBytes > 1<<pooledFrameClassMax {
		return -1
	}
	class := bits.Len(uint(sizeBytes - 1))
	return max(class, pooledFrameClassMin)
}

// pooledCapacity is the capacity AcquireFrame gives a buffer of sizeBytes.
func pooledCapacity(sizeBytes int) int {
	if class := frameClass(sizeBytes); class >= 0 {
		return 1 << class
	}
	return sizeBytes
}

// AcquireFrame returns a buffer of length lenBytes and capacity of at least
// capBytes (capBytes < lenBytes counts as lenBytes), taken from a pool when
// capBytes is in the pooled range. Its contents are unspecified. Hand it
// back with ReleaseFrame or Conn.SendRecycled once nothing refers to it.
func AcquireFrame(lenBytes, capBytes int) []byte {
	capBytes = max(capBytes, lenBytes)
	class := frameClass(capBytes)
	if class < 0 || framePoolsOff.Load() {
		return make([]byte, lenBytes, capBytes)
	}
	if p, ok := framePools[class].Get().(*[]byte); ok {
		return (*p)[:lenBytes]
	}
	return make([]byte, lenBytes, 1<<class)
}

// ReleaseFrame returns a buffer to its pool when its capacity is exactly a
// pool class (buffers that grew past their class, or never came from a
// pool, are left to the GC). The caller must hold no other reference to it.
func ReleaseFrame(b []byte) {
	c := cap(b)
	class := frameClass(c)
	if class < 0 || c != 1<<class || framePoolsOff.Load() {
		return
	}
	b = b[:0]
	framePools[class].Put(&b)
}
