package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"
)

// tcpCarrier cuts a byte stream (TCP, or TLS over TCP) into frames.
type tcpCarrier struct {
	nc net.Conn
	r  *bufio.Reader
}

func (t *tcpCarrier) handshake(c *Conn) error {
	if tc, ok := t.nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HandshakeTimeout)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
	}
	t.r = bufio.NewReaderSize(t.nc, 64<<10)
	return nil
}

func (t *tcpCarrier) writeFrame(frame []byte, deadline time.Time) error {
	_ = t.nc.SetWriteDeadline(deadline)
	_, err := t.nc.Write(frame)
	return err
}

func (t *tcpCarrier) close()              { _ = t.nc.Close() }
func (t *tcpCarrier) localAddr() net.Addr { return t.nc.LocalAddr() }

// nextFrame reads one frame for the reader loop. Waiting for a frame's
// first byte has no deadline (idle connections are bounded by the login
// deadline and the per-address cap); from then on the rest of the frame
// must arrive within FrameReadTimeout. The deadline is only set when the
// frame is not already buffered, so pipelined small frames cost no timer.
// Frames up to eagerFrameBytesMax are allocated exactly; larger ones take
// their pooled buffer's capacity from the server's in-flight budget
// (heldBytes, to be released after handling) and are allocated once at the
// declared size.
func (t *tcpCarrier) nextFrame(c *Conn) (frame []byte, heldBytes int64, err error) {
	r := t.r
	if _, err := r.Peek(1); err != nil {
		return nil, 0, err
	}
	deadline := false
	setDeadline := func(extra time.Duration) {
		_ = t.nc.SetReadDeadline(time.Now().Add(c.cfg.FrameReadTimeout + extra))
		deadline = true
	}
	defer func() {
		if deadline {
			_ = t.nc.SetReadDeadline(time.Time{})
		}
	}()
	if r.Buffered() < headerBytes {
		setDeadline(0)
	}
	var header [headerBytes]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, 0, err
	}
	size, err := c.checkHeader(header[:])
	if err != nil {
		return nil, 0, err
	}
	if size <= eagerFrameBytesMax && !deadline && r.Buffered() < int(size)-headerBytes {
		setDeadline(0)
	}
	frame, heldBytes, err = c.allocFrame(size)
	if err != nil {
		return nil, 0, err
	}
	if heldBytes > 0 {
		setDeadline(time.Duration(int64(size)/bodyReadMinBytesPerSecond) * time.Second)
	}
	copy(frame, header[:])
	if _, err := io.ReadFull(r, frame[headerBytes:]); err != nil {
		if heldBytes > 0 {
			ReleaseFrame(frame)
			c.budget.release(heldBytes, c.source)
		}
		return nil, 0, readBodyError(size, err)
	}
	return frame, heldBytes, nil
}

func readBodyError(size uint32, err error) error {
	return fmt.Errorf("read frame body of %d bytes: %w", size-headerBytes, err)
}
