package wire

import (
	"errors"
	"fmt"
	"io"
)

// FrameSizeError reports a header size field outside HeaderSize..limit. The connection must be torn
// down: the stream cannot be re-synchronised after a bad size.
type FrameSizeError struct {
	Size  uint32
	Limit uint32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("invalid frame size %d: must be %d..%d bytes", e.Size, HeaderSize, e.Limit)
}

func checkFrameSize(size, limit uint32) error {
	if size < HeaderSize || size > limit {
		return &FrameSizeError{Size: size, Limit: limit}
	}
	return nil
}

// Frame is one frame read off a connection: the raw 256-byte header and the body that follows it.
type Frame struct {
	Header [HeaderSize]byte
	Body   []byte
}

// Command returns the frame type.
func (f *Frame) Command() Command { return Command(f.Header[offsetCommand]) }

// Bytes returns header and body as one freshly allocated slice.
func (f *Frame) Bytes() []byte {
	out := make([]byte, 0, HeaderSize+len(f.Body))
	out = append(out, f.Header[:]...)
	return append(out, f.Body...)
}

// ReadFrame reads exactly one frame: 256 header bytes, then size-256 body bytes. sizeMax bounds the
// accepted size (values above FrameSizeMax or zero mean FrameSizeMax). A size outside 256..sizeMax
// returns *FrameSizeError before any body byte is read or allocated. A clean EOF before the first header
// byte returns io.EOF; EOF mid-frame returns io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, sizeMax uint32) (Frame, error) {
	if sizeMax == 0 || sizeMax > FrameSizeMax {
		sizeMax = FrameSizeMax
	}
	var f Frame
	if _, err := io.ReadFull(r, f.Header[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return f, io.EOF
		}
		return f, fmt.Errorf("read frame header: %w", err)
	}
	size := FrameSize(f.Header[:])
	if err := checkFrameSize(size, sizeMax); err != nil {
		return f, err
	}
	if size > HeaderSize {
		f.Body = make([]byte, size-HeaderSize)
		if _, err := io.ReadFull(r, f.Body); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return f, fmt.Errorf("read frame body (%d bytes): %w", size-HeaderSize, err)
		}
	}
	return f, nil
}

// WriteFrame writes a complete frame (header followed by body, as built by EncodeRequest, EncodeReply or
// EncodeEviction) in a single Write call, after checking that its size field matches its length.
func WriteFrame(w io.Writer, frame []byte) error {
	if len(frame) < HeaderSize {
		return fmt.Errorf("write frame: %d bytes is shorter than a header", len(frame))
	}
	if size := FrameSize(frame); int(size) != len(frame) {
		return fmt.Errorf("write frame: size field %d does not match frame length %d", size, len(frame))
	}
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("write frame (%d bytes): %w", len(frame), err)
	}
	return nil
}
