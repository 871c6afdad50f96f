package bus

import (
	"bytes"
	"errors"
	"testing"

	"github.com/zeebo/xxh3"
)

// FuzzDecodeReplicaFrame: Decode and DecodeForward never panic, refuse
// with ErrInvalidFrame only, never both accept the same frame, and whatever
// one accepts re-encodes to the very same bytes (a frame decodes only in
// its canonical form). With fix set, the input's size, checksum_body and
// seal are made consistent first, so mutations reach the field rules
// behind the checksums. Seeds: the golden frames of both codecs, committed
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
		fw, ferr := c.DecodeForward(frame)
		if ferr == nil {
			again, err := c.EncodeForward(nil, &fw)
			if err != nil {
				t.Fatalf("decoded forward frame does not encode: %v", err)
			}
			if !bytes.Equal(again, frame) {
				t.Fatalf("decoded forward frame re-encodes differently\nin  %x\nout %x", frame, again)
			}
		} else if !errors.Is(ferr, ErrInvalidFrame) {
			t.Fatalf("forward error not wrapping ErrInvalidFrame: %v", ferr)
		}
		m, err := c.Decode(frame)
		if err != nil {
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("error not wrapping ErrInvalidFrame: %v", err)
			}
			return
		}
		if ferr == nil {
			t.Fatalf("frame decodes both as a consensus message and as a forward frame: %x", frame)
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

// FuzzDecodeFetch: DecodeFetch never panics, refuses with ErrInvalidFrame
// only, and whatever it accepts re-encodes to the very same bytes and is
// refused by the consensus and forward decoders. With fix set, the input's
// size, checksum_body and seal are made consistent first, so mutations
// reach the field rules behind the checksums. Seeds: the golden fetch
// frames, committed under testdata/fuzz/FuzzDecodeFetch.
func FuzzDecodeFetch(f *testing.F) {
	c := NewCodec(testCluster)
	f.Fuzz(func(t *testing.T, frame []byte, fix bool) {
		if fix && len(frame) >= HeaderBytes {
			frame = bytes.Clone(frame)
			le.PutUint32(frame[offSize:], uint32(len(frame)))
			putWide(frame[offChecksumBody:], fetchBodyChecksum(frame[HeaderBytes:]))
			putWide(frame[offChecksum:], frameChecksum(frame))
		}
		ft, err := c.DecodeFetch(frame)
		if err != nil {
			if !errors.Is(err, ErrInvalidFrame) {
				t.Fatalf("error not wrapping ErrInvalidFrame: %v", err)
			}
			return
		}
		again, err := c.EncodeFetch(nil, &ft)
		if err != nil {
			t.Fatalf("decoded fetch frame does not encode: %v", err)
		}
		if !bytes.Equal(again, frame) {
			t.Fatalf("decoded fetch frame re-encodes differently\nin  %x\nout %x", frame, again)
		}
		if _, err := c.Decode(frame); err == nil {
			t.Fatalf("frame decodes both as a fetch frame and as a consensus message: %x", frame)
		}
		if _, err := c.DecodeForward(frame); err == nil {
			t.Fatalf("frame decodes both as a fetch frame and as a forward frame: %x", frame)
		}
	})
}
