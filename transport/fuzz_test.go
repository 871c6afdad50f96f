package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"testing/iotest"
	"time"
)

// wsFramesWithin is a one-pass reference for wsFrameGuard: it walks the
// frame headers of data and reports whether one declares more than max.
func wsFramesWithin(data []byte, limit uint64) bool {
	for len(data) >= 2 {
		need := 2
		switch data[1] & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if data[1]&0x80 != 0 {
			need += 4
		}
		if len(data) < need {
			return true
		}
		var length uint64
		switch l := data[1] & 0x7f; l {
		case 126:
			length = uint64(binary.BigEndian.Uint16(data[2:]))
		case 127:
			length = binary.BigEndian.Uint64(data[2:])
		default:
			length = uint64(l)
		}
		if length > limit {
			return false
		}
		data = data[need:]
		if uint64(len(data)) <= length {
			return true
		}
		data = data[length:]
	}
	return true
}

// FuzzWSFrameGuard: the streaming guard agrees with the one-pass
// reference however the bytes are chunked.
func FuzzWSFrameGuard(f *testing.F) {
	f.Add(rawWSFrame(true, 2, frameOf(0, 5)), uint16(3), uint32(1<<20))
	f.Add(append(rawWSFrame(false, 2, make([]byte, 300)), rawWSFrame(true, 0, make([]byte, 10))...), uint16(200), uint32(256))
	f.Add([]byte{0x82, 0xff, 0, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3, 4}, uint16(5), uint32(1<<24))
	f.Fuzz(func(t *testing.T, data []byte, split uint16, limit uint32) {
		want := wsFramesWithin(data, uint64(limit))
		for _, cut := range []int{len(data), int(split) % (len(data) + 1), 1} {
			g := wsFrameGuard{frameBytesMax: uint64(limit)}
			var err error
			for rest := data; len(rest) > 0 && err == nil; {
				n := min(max(cut, 1), len(rest))
				err = g.observe(rest[:n])
				rest = rest[n:]
			}
			if (err == nil) != want {
				t.Fatalf("chunks of %d: guard error %v, reference within=%v", cut, err, want)
			}
			if err != nil && !errors.Is(err, ErrWebSocketFrameSize) {
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}

// FuzzReadExactFrame: a message or stream is accepted exactly when it is
// one whole frame within the bounds, however its bytes arrive.
func FuzzReadExactFrame(f *testing.F) {
	f.Add(frameOf(0, 5), false)
	f.Add(frameOf(100, 5), true)
	f.Add(append(frameOf(10, 5), 1), false)
	f.Add(frameOf(10, 5)[:200], true)
	f.Fuzz(func(t *testing.T, data []byte, oneByte bool) {
		cfg := (&TCPConfig{FrameBytesMax: 1 << 20, PreLoginFrameBytesMax: 4096}).withDefaults()
		c := newConn(1, nil, KindQUIC, "127.0.0.1:1", cfg, newFrameBudget(4<<20, 4<<20), &outboundBudget{})
		c.authenticated.Store(len(data)%2 == 0)
		var r = bytes.NewReader(data)
		var src interface{ Read([]byte) (int, error) } = r
		if oneByte {
			src = iotest.OneByteReader(r)
		}
		frame, held, err := c.readExactFrame(src, func(time.Duration) {})
		valid := len(data) >= headerBytes
		if valid {
			size := binary.LittleEndian.Uint32(data[sizeFieldOffset:])
			limit := cfg.FrameBytesMax
			if !c.authenticated.Load() {
				limit = cfg.PreLoginFrameBytesMax
			}
			valid = int(size) == len(data) && size <= limit
		}
		if (err == nil) != valid {
			t.Fatalf("%d bytes: err %v, want valid=%v", len(data), err, valid)
		}
		if err == nil && !bytes.Equal(frame, data) {
			t.Fatal("frame differs from the carried bytes")
		}
		if held > 0 {
			c.budget.release(held, c.source)
		}
		if c.budget.inUse() != 0 {
			t.Fatalf("budget leak: %d bytes", c.budget.inUse())
		}
	})
}
