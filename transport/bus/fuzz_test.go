package bus

import (
	"bytes"
	"errors"
	"testing"

	"github.com/zeebo/xxh3"
)

// FuzzDecodeReplicaFrame: Decode never panics, refuses with ErrInvalidFrame
// only, and whatever it accepts re-encodes to the very same bytes (a frame
// decodes only in its canonical form). With fix set, the input's size,
// checksum_body and seal are made consistent first, so mutations reach the
// field rules behind the checksums. Seeds: the golden frames, committed
// under testdata/fuzz/FuzzDecodeReplicaFrame.
func FuzzDecodeReplicaFrame(f *testing.F) {
	c := NewCodec(testCluster)
	f.Fuzz(func(t *testing.T, frame []byte, fix bool) {
		if fix && len(frame) >= HeaderBytes {
			frame = bytes.Clone(frame)
			le.PutUint32(frame[offSize:], uint32(len(frame)))
			body := frame[HeaderBytes:]
			if len(body) > 0 || !sealed(kindOf(frame)) {
				putWide(frame[offChecksumBody:], xxh3.Hash(body))
			} else {
				putWide(frame[offChecksumBody:], 0)
			}
			if sealed(kindOf(frame)) {
				putWide(frame[offChecksum:], frameChecksum(frame))
			}
		}
		m, err := c.Decode(frame)
		if err != nil {
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("error not wrapping ErrInvalidFrame: %v", err)
			}
			return
		}
		again, err := c.Encode(nil, &m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if !bytes.Equal(again, frame) {
			t.Fatalf("decoded frame re-encodes differently\nin  %x\nout %x", frame, again)
		}
	})
}
