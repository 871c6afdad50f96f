package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Frame layout facts transport needs to cut a byte stream into frames: the
// fixed header length and where its little-endian u32 size lives.
const (
	headerBytes     = 256
	sizeFieldOffset = 48
)

// ErrFrameSize reports a declared frame size outside the configured bounds;
// the connection is closed without a reply (spec §1.1).
var ErrFrameSize = errors.New("frame size out of bounds")

// Conn is one client connection.
type Conn struct {
	id         uint32
	nc         net.Conn
	remote     string
	cfg        TCPConfig
	openedAt   time.Time
	queue      chan []byte // nil entry = close after flushing what precedes it
	closed     chan struct{}
	closeOnce  sync.Once
	writerDone chan struct{}
	draining   atomic.Bool // no further frames are handed to the Handler
	lastSeenNs atomic.Int64
}

func newConn(id uint32, nc net.Conn, cfg TCPConfig) *Conn {
	now := time.Now()
	c := &Conn{
		id:         id,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		cfg:        cfg,
		openedAt:   now,
		queue:      make(chan []byte, cfg.SendQueueFramesMax),
		closed:     make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	c.lastSeenNs.Store(now.UnixNano())
	return c
}

// ID is the server-assigned connection id (non-zero, unique per process).
func (c *Conn) ID() uint32 { return c.id }

// RemoteAddr is the peer's "ip:port".
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr is the listener-side address of the connection.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// LastSeen is when the connection last delivered a complete frame.
func (c *Conn) LastSeen() time.Time { return time.Unix(0, c.lastSeenNs.Load()) }

// Send queues one frame for writing. It never blocks: a client whose queue is
// full is not reading its replies, and the connection is closed. It reports
// whether the frame was queued.
func (c *Conn) Send(frame []byte) bool {
	if frame == nil {
		return false
	}
	select {
	case <-c.closed:
		return false
	default:
	}
	select {
	case c.queue <- frame:
		return true
	default:
		c.cfg.Logger.Warn("tcp send queue full: closing connection",
			"conn", c.id, "remote", c.remote, "send_queue_frames_max", c.cfg.SendQueueFramesMax)
		c.Close()
		return false
	}
}

// SendThenClose queues a final frame (e.g. an eviction), stops handing
// further frames to the Handler, and closes the connection once it is written.
func (c *Conn) SendThenClose(frame []byte) {
	c.draining.Store(true)
	if c.Send(frame) {
		c.CloseAfterFlush()
	}
}

// CloseAfterFlush closes the connection after the frames already queued are written.
func (c *Conn) CloseAfterFlush() {
	c.draining.Store(true)
	select {
	case c.queue <- nil:
	default:
		c.Close()
	}
}

// Close closes the connection now; queued frames may be lost.
func (c *Conn) Close() {
	c.draining.Store(true)
	c.closeOnce.Do(func() {
		close(c.closed)
		_ = c.nc.Close()
	})
}

// Done is closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }

func (c *Conn) writeLoop() {
	defer close(c.writerDone)
	defer c.Close()
	for {
		select {
		case <-c.closed:
			return
		case frame := <-c.queue:
			if frame == nil {
				return
			}
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.cfg.WriteTimeout))
			if _, err := c.nc.Write(frame); err != nil {
				c.cfg.Logger.Debug("tcp write failed", "conn", c.id, "remote", c.remote, "err", err)
				return
			}
		}
	}
}

func (c *Conn) readLoop(h Handler, log *slog.Logger) {
	if tc, ok := c.nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			log.Debug("tls handshake failed", "conn", c.id, "remote", c.remote, "err", err)
			return
		}
	}
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for !c.draining.Load() {
		frame, err := ReadFrame(r, c.cfg.FrameBytesMin, c.cfg.FrameBytesMax)
		if err != nil {
			if errors.Is(err, ErrFrameSize) {
				log.Warn("closing connection: bad frame size", "conn", c.id, "remote", c.remote, "err", err)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Debug("tcp read ended", "conn", c.id, "remote", c.remote, "err", err)
			}
			return
		}
		c.lastSeenNs.Store(time.Now().UnixNano())
		if c.draining.Load() {
			return
		}
		h.HandleFrame(c, frame)
	}
}

// eagerFrameBytesMax: frames up to this size are allocated whole; larger
// ones grow with the bytes that actually arrive, so a peer that declares
// 64 MiB and trickles cannot pin 64 MiB per connection.
const eagerFrameBytesMax = 64 << 10

// ReadFrame reads one whole frame (header and body) whose declared size must
// lie in [minBytes, maxBytes]. The size is checked before the body is
// allocated, so a hostile size cannot force a large allocation.
func ReadFrame(r io.Reader, minBytes, maxBytes uint32) ([]byte, error) {
	var header [headerBytes]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(header[sizeFieldOffset:])
	if size < minBytes || size > maxBytes || size < headerBytes {
		return nil, fmt.Errorf("%w: declared %d bytes, allowed %d..%d", ErrFrameSize, size, minBytes, maxBytes)
	}
	if size <= eagerFrameBytesMax {
		frame := make([]byte, size)
		copy(frame, header[:])
		if _, err := io.ReadFull(r, frame[headerBytes:]); err != nil {
			return nil, fmt.Errorf("read frame body of %d bytes: %w", size-headerBytes, err)
		}
		return frame, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, eagerFrameBytesMax))
	buf.Write(header[:])
	if _, err := io.CopyN(buf, r, int64(size-headerBytes)); err != nil {
		return nil, fmt.Errorf("read frame body of %d bytes: %w", size-headerBytes, err)
	}
	return buf.Bytes(), nil
}
