package transport

import (
	"bytes"
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

// ErrProtocol reports a transport-level protocol violation (a WebSocket
// Text message, a QUIC stream carrying more than one frame); the
// connection is closed.
var ErrProtocol = errors.New("transport protocol violation")

// Frame layout facts transport needs to cut a byte stream into frames: the
// fixed header length and where its little-endian u32 size lives.
const (
	headerBytes     = 256
	sizeFieldOffset = 48
)

// ErrFrameSize reports a declared frame size outside the configured bounds;
// the connection is closed without a reply (spec §1.1).
var ErrFrameSize = errors.New("frame size out of bounds")

// Conn is one client connection, on any transport: the carrier delimits
// frames, the Conn applies every bound and the Handler contract.
type Conn struct {
	id         uint32
	car        carrier
	kind       Kind
	remote     string
	source     string // remote IP: the key of the per-address limits
	cfg        TCPConfig
	openedAt   time.Time
	budget     *frameBudget
	outbound   *outboundBudget
	queue      chan outFrame // nil bytes = close after flushing what precedes it
	closed     chan struct{}
	closeOnce  sync.Once
	writerDone chan struct{}
	draining   atomic.Bool // no further frames are handed to the Handler
	lastSeenNs atomic.Int64

	// writeMu is held for every socket write, so a reply written inline by
	// the reader cannot interleave with the writer goroutine; queued counts
	// frames handed to the queue and not yet written (or dropped), and
	// queuedBytes their bytes (also counted in outbound). sendMu orders
	// additions to the queue against finish, which returns whatever is
	// still counted once the connection is over.
	writeMu     sync.Mutex
	queued      atomic.Int64
	queuedBytes atomic.Int64
	sendMu      sync.Mutex
	finished    bool
	// drained gets a token whenever the writer has written a queued frame,
	// waking a reader paused by awaitDrain.
	drained chan struct{}

	// authenticated is set by the Handler once the peer has logged in; until
	// then frames are bounded by PreLoginFrameBytesMax and loginTimer closes
	// the connection at LoginTimeout.
	authenticated atomic.Bool
	authMu        sync.Mutex
	loginTimer    *time.Timer
	// evictedForRoom: closed to make room at ConnectionsMax (guarded by
	// the server's mu).
	evictedForRoom bool

	// frameConsumed is set by the Handler (on the reader goroutine, during
	// HandleFrame) when it no longer refers to the frame it was handed.
	frameConsumed bool
}

// outFrame is one queued reply; recycle hands its buffer back to the frame
// pools once written.
type outFrame struct {
	bytes   []byte
	recycle bool
}

func newConn(id uint32, car carrier, kind Kind, remote string, cfg TCPConfig, budget *frameBudget, outbound *outboundBudget) *Conn {
	now := time.Now()
	c := &Conn{
		id:         id,
		car:        car,
		kind:       kind,
		remote:     remote,
		cfg:        cfg,
		budget:     budget,
		outbound:   outbound,
		openedAt:   now,
		queue:      make(chan outFrame, cfg.SendQueueFramesMax),
		closed:     make(chan struct{}),
		writerDone: make(chan struct{}),
		drained:    make(chan struct{}, 1),
	}
	c.source = sourceAddress(c.remote)
	c.lastSeenNs.Store(now.UnixNano())
	return c
}

// SetAuthenticated records whether the peer is logged in. true lifts the
// pre-login frame bound and stops the login deadline; false (a logout)
// restores both, the deadline counting from now.
func (c *Conn) SetAuthenticated(ok bool) {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	c.authenticated.Store(ok)
	if ok {
		if c.loginTimer != nil {
			c.loginTimer.Stop()
			c.loginTimer = nil
		}
		return
	}
	c.armLoginDeadlineLocked()
}

// Authenticated reports what SetAuthenticated last recorded.
func (c *Conn) Authenticated() bool { return c.authenticated.Load() }

func (c *Conn) armLoginDeadline() {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if !c.authenticated.Load() {
		c.armLoginDeadlineLocked()
	}
}

func (c *Conn) armLoginDeadlineLocked() {
	if c.loginTimer != nil {
		c.loginTimer.Stop()
	}
	c.loginTimer = time.AfterFunc(c.cfg.LoginTimeout, c.loginExpired)
}

func (c *Conn) loginExpired() {
	c.authMu.Lock()
	authenticated := c.authenticated.Load()
	c.authMu.Unlock()
	if authenticated {
		return
	}
	select {
	case <-c.closed:
		return
	default:
	}
	c.cfg.Logger.Info("closing connection: no login within login_timeout",
		"conn", c.id, "remote", c.remote, "login_timeout", c.cfg.LoginTimeout)
	c.Close()
}

// finish runs once the reader and writer have stopped: it stops the login
// deadline and returns the bytes of replies that were never written to the
// server-wide outbound count.
func (c *Conn) finish() {
	c.authMu.Lock()
	if c.loginTimer != nil {
		c.loginTimer.Stop()
		c.loginTimer = nil
	}
	c.authMu.Unlock()
	c.sendMu.Lock()
	c.finished = true
	left := c.queuedBytes.Swap(0)
	c.sendMu.Unlock()
	c.outbound.add(-left)
}

// ID is the server-assigned connection id (non-zero, unique per process).
func (c *Conn) ID() uint32 { return c.id }

// RemoteAddr is the peer's "ip:port".
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr is the listener-side address of the connection.
func (c *Conn) LocalAddr() net.Addr { return c.car.localAddr() }

// Transport is the client transport the connection arrived on.
func (c *Conn) Transport() Kind { return c.kind }

// LastSeen is when the connection last delivered a complete frame.
func (c *Conn) LastSeen() time.Time { return time.Unix(0, c.lastSeenNs.Load()) }

// Send queues one frame for writing. It never blocks and never drops a
// reply because of its size: a connection whose queued bytes exceed
// SendQueueBytesMax stops reading requests until the writer drains them
// (the reader pauses before the next frame). Only a queue full in frames —
// more replies than requests, which no Handler path produces — closes the
// connection. It reports whether the frame was queued.
func (c *Conn) Send(frame []byte) bool { return c.send(outFrame{bytes: frame}) }

// SendRecycled is Send for a buffer the caller hands over for good (e.g.
// one from AcquireFrame): once written it returns to the frame pools, so
// the caller must keep no reference to it.
func (c *Conn) SendRecycled(frame []byte) bool {
	return c.send(outFrame{bytes: frame, recycle: true})
}

// FrameConsumed tells the transport that the Handler keeps no reference to
// the frame it is handling (nothing retained a sub-slice of it), so its
// buffer may be reused once HandleFrame returns. Call it only on the
// HandleFrame goroutine, before HandleFrame returns.
func (c *Conn) FrameConsumed() { c.frameConsumed = true }

// Reply is Send for the Handler's own goroutine during HandleFrame: when
// nothing is queued ahead of it, it writes the frame itself (one goroutine
// hand-off fewer per request on a lockstep connection) instead of waking
// the writer. It may block for up to the write timeout. recycle is as for
// SendRecycled.
func (c *Conn) Reply(frame []byte, recycle bool) bool {
	if frame == nil {
		return false
	}
	if c.queued.Load() == 0 && c.writeMu.TryLock() {
		if c.queued.Load() == 0 {
			ok := c.writeNow(frame, recycle)
			c.writeMu.Unlock()
			if !ok {
				c.Close()
			}
			return ok
		}
		c.writeMu.Unlock()
	}
	return c.send(outFrame{bytes: frame, recycle: recycle})
}

// writeNow writes one frame (caller holds writeMu) and reports success.
func (c *Conn) writeNow(frame []byte, recycle bool) bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	if err := c.car.writeFrame(frame, time.Now().Add(c.cfg.WriteTimeout)); err != nil {
		c.cfg.Logger.Debug("write failed", "conn", c.id, "remote", c.remote, "err", err)
		return false
	}
	if recycle {
		ReleaseFrame(frame)
	}
	return true
}

func (c *Conn) send(out outFrame) bool {
	frame := out.bytes
	if frame == nil {
		return false
	}
	select {
	case <-c.closed:
		return false
	default:
	}
	n := int64(len(frame))
	c.sendMu.Lock()
	if c.finished {
		c.sendMu.Unlock()
		return false
	}
	c.queued.Add(1)
	c.queuedBytes.Add(n)
	c.outbound.add(n)
	select {
	case c.queue <- out:
		c.sendMu.Unlock()
		return true
	default:
		c.queued.Add(-1)
		c.queuedBytes.Add(-n)
		c.outbound.add(-n)
		c.sendMu.Unlock()
		c.cfg.Logger.Warn("tcp send queue full: closing connection",
			"conn", c.id, "remote", c.remote, "send_queue_frames_max", c.cfg.SendQueueFramesMax)
		c.Close()
		return false
	}
}

// sendQueueFramesReserve: the reader pauses while fewer than this many
// frame slots are free, so one HandleFrame (a reply, or a final frame plus
// the close marker) always finds room.
const sendQueueFramesReserve = 4

// sendQueueFramesMin is the smallest usable SendQueueFramesMax.
const sendQueueFramesMin = 2 * sendQueueFramesReserve

// mustPause reports whether the reader should wait for the writer before
// reading another request: this connection's queued replies exceed its byte
// cap or nearly fill its queue, or the server-wide outbound budget is
// exceeded while this connection still has replies queued.
func (c *Conn) mustPause() bool {
	q := c.queuedBytes.Load()
	if q == 0 {
		return false
	}
	return q > c.cfg.SendQueueBytesMax ||
		c.queued.Load() > int64(c.cfg.SendQueueFramesMax-sendQueueFramesReserve) ||
		c.outbound.over()
}

// awaitDrain holds the reader while mustPause; it reports false when the
// connection closed meanwhile. A peer that never reads is closed by the
// writer's WriteTimeout, which ends the wait.
func (c *Conn) awaitDrain(log *slog.Logger) bool {
	if !c.mustPause() {
		return true
	}
	log.Debug("tcp reads paused: replies not drained", "conn", c.id, "remote", c.remote,
		"queued_bytes", c.queuedBytes.Load(), "queued_frames", c.queued.Load(), "outbound_bytes", c.outbound.inUse())
	for c.mustPause() {
		select {
		case <-c.drained:
		case <-c.closed:
			return false
		}
	}
	return true
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
	case c.queue <- outFrame{}:
	default:
		c.Close()
	}
}

// Close closes the connection now; queued frames may be lost.
func (c *Conn) Close() {
	c.draining.Store(true)
	c.closeOnce.Do(func() {
		close(c.closed)
		c.car.close()
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
		case out := <-c.queue:
			if out.bytes == nil {
				return
			}
			n := int64(len(out.bytes))
			c.writeMu.Lock()
			ok := c.writeNow(out.bytes, out.recycle)
			c.queued.Add(-1)
			c.writeMu.Unlock()
			if !ok {
				// Still counted in queuedBytes: finish returns it.
				return
			}
			c.queuedBytes.Add(-n)
			c.outbound.add(-n)
			select {
			case c.drained <- struct{}{}:
			default:
			}
		}
	}
}

func (c *Conn) readLoop(h Handler, log *slog.Logger) {
	if err := c.car.handshake(c); err != nil {
		log.Debug("handshake failed", "conn", c.id, "remote", c.remote, "err", err)
		return
	}
	for !c.draining.Load() {
		if !c.awaitDrain(log) {
			return
		}
		frame, heldBytes, err := c.car.nextFrame(c)
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, ErrFrameSize) || errors.Is(err, ErrFrameBudget) || errors.Is(err, ErrProtocol):
				log.Warn("closing connection: bad frame", "conn", c.id, "remote", c.remote, "err", err)
			case errors.As(err, &ne) && ne.Timeout():
				log.Info("closing connection: frame not received within frame_read_timeout",
					"conn", c.id, "remote", c.remote, "frame_read_timeout", c.cfg.FrameReadTimeout, "err", err)
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
				log.Debug("read ended", "conn", c.id, "remote", c.remote, "err", err)
			}
			return
		}
		c.lastSeenNs.Store(time.Now().UnixNano())
		if c.draining.Load() {
			c.finishFrame(frame, heldBytes)
			return
		}
		c.frameConsumed = false
		h.HandleFrame(c, frame)
		c.finishFrame(frame, heldBytes)
	}
}

// finishFrame returns a handled frame's budget and, if the Handler declared
// it consumed, its buffer.
func (c *Conn) finishFrame(frame []byte, heldBytes int64) {
	if heldBytes == 0 {
		return
	}
	if c.frameConsumed {
		ReleaseFrame(frame)
	}
	c.frameConsumed = false
	c.budget.release(heldBytes, c.source)
}

// Large frame bodies must keep arriving: a body above eagerFrameBytesMax
// gets FrameReadTimeout plus one second per bodyReadMinBytesPerSecond of
// its size, so a trickling peer cannot hold budget indefinitely.
const bodyReadMinBytesPerSecond = 1 << 20

// ErrPreLoginFrameSize reports a frame larger than any request that is
// answered before login, sent by a peer that has not logged in.
var ErrPreLoginFrameSize = fmt.Errorf("%w before login", ErrFrameSize)

func checkDeclaredSize(header []byte, minBytes, maxBytes uint32) (uint32, error) {
	size := binary.LittleEndian.Uint32(header[sizeFieldOffset:])
	if size < minBytes || size > maxBytes || size < headerBytes {
		return 0, fmt.Errorf("%w: declared %d bytes, allowed %d..%d", ErrFrameSize, size, minBytes, maxBytes)
	}
	return size, nil
}

// eagerFrameBytesMax: frames up to this size are allocated whole without
// touching the in-flight budget.
const eagerFrameBytesMax = 64 << 10

// ReadFrame reads one whole frame (header and body) whose declared size must
// lie in [minBytes, maxBytes], for readers without a server budget (tools,
// tests). The size is checked before the body is allocated, and frames
// above eagerFrameBytesMax grow with the bytes that actually arrive, so a
// hostile size cannot force a large allocation.
func ReadFrame(r io.Reader, minBytes, maxBytes uint32) ([]byte, error) {
	var header [headerBytes]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	size, err := checkDeclaredSize(header[:], minBytes, maxBytes)
	if err != nil {
		return nil, err
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
