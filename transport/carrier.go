package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// carrier moves whole frames between one peer and its Conn. The Conn owns
// everything above it (limits, deadlines, budgets, queues, the Handler
// contract); a carrier only knows how its transport delimits a frame: a
// byte stream (TCP), one bidirectional stream per request (QUIC) or one
// Binary message per frame (WebSocket).
type carrier interface {
	// handshake runs on the reader goroutine before the first frame
	// (TLS on TCP); nil when the transport has none left to do.
	handshake(c *Conn) error
	// nextFrame blocks until the next request frame and reads it within
	// the Conn's bounds (frame size, pre-login bound, frame read deadline,
	// in-flight budget). heldBytes is the budget the frame holds.
	nextFrame(c *Conn) (frame []byte, heldBytes int64, err error)
	// writeFrame writes one reply or eviction frame by deadline.
	writeFrame(frame []byte, deadline time.Time) error
	// close tears the transport down now; it unblocks nextFrame.
	close()
	localAddr() net.Addr
}

// ErrFrameLength reports a frame whose declared size differs from the
// length of the message or stream that carried it (WebSocket, QUIC); the
// connection is closed.
var ErrFrameLength = fmt.Errorf("%w: declared size differs from the carried length", ErrFrameSize)

// readExactFrame reads one frame that must be exactly the rest of r (a
// WebSocket message, a QUIC stream): the declared size is checked against
// the Conn's bounds before the body is allocated, and a body shorter or
// longer than declared is ErrFrameLength. arm sets the read deadline for
// the frame (extra: more time for large bodies).
func (c *Conn) readExactFrame(r io.Reader, arm func(extra time.Duration)) (frame []byte, heldBytes int64, err error) {
	arm(0)
	var header [headerBytes]byte
	if n, err := io.ReadFull(r, header[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("%w: %d bytes, shorter than a header", ErrFrameLength, n)
		}
		return nil, 0, err
	}
	size, err := c.checkHeader(header[:])
	if err != nil {
		return nil, 0, err
	}
	frame, heldBytes, err = c.allocFrame(size)
	if err != nil {
		return nil, 0, err
	}
	if heldBytes > 0 {
		arm(time.Duration(int64(size)/bodyReadMinBytesPerSecond) * time.Second)
	}
	copy(frame, header[:])
	fail := func(err error) ([]byte, int64, error) {
		if heldBytes > 0 {
			ReleaseFrame(frame)
			c.budget.release(heldBytes, c.source)
		}
		return nil, 0, err
	}
	if n, err := io.ReadFull(r, frame[headerBytes:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fail(fmt.Errorf("%w: declared %d bytes, carried %d", ErrFrameLength, size, headerBytes+n))
		}
		return fail(fmt.Errorf("read frame body of %d bytes: %w", size-headerBytes, err))
	}
	var extra [1]byte
	for {
		n, err := r.Read(extra[:])
		if n > 0 {
			return fail(fmt.Errorf("%w: declared %d bytes, more carried", ErrFrameLength, size))
		}
		if errors.Is(err, io.EOF) {
			return frame, heldBytes, nil
		}
		if err != nil {
			return fail(fmt.Errorf("read end of frame: %w", err))
		}
	}
}

// checkHeader applies the size bounds to a frame header: the configured
// frame size range and, before login, the pre-login bound.
func (c *Conn) checkHeader(header []byte) (uint32, error) {
	size, err := checkDeclaredSize(header, c.cfg.FrameBytesMin, c.cfg.FrameBytesMax)
	if err != nil {
		return 0, err
	}
	if size > c.cfg.PreLoginFrameBytesMax && !c.authenticated.Load() {
		return 0, fmt.Errorf("%w: declared %d bytes, allowed %d until logged in",
			ErrPreLoginFrameSize, size, c.cfg.PreLoginFrameBytesMax)
	}
	return size, nil
}

// allocFrame allocates a frame of size bytes: exactly for small frames;
// from the pools, holding in-flight budget, for frames above
// eagerFrameBytesMax.
func (c *Conn) allocFrame(size uint32) (frame []byte, heldBytes int64, err error) {
	if size <= eagerFrameBytesMax {
		return make([]byte, size), 0, nil
	}
	frame = AcquireFrame(int(size), int(size))
	heldBytes = int64(cap(frame))
	if err := c.budget.acquire(heldBytes, c.source, c.closed); err != nil {
		ReleaseFrame(frame)
		return nil, 0, err
	}
	return frame, heldBytes, nil
}
