// Package client is a Go client for the Iggy binary protocol 0.11 over TCP (optionally TLS), QUIC
// or WebSocket (WithTransport, WithTLS). It keeps one request in
// flight per connection, stamps client id, session fence and request id as wire-protocol.md §2.2
// prescribes, decodes status replies and result sections, surfaces evictions as *Error, and replays
// transient rejections (57 on the same bytes for the whole budget; 58 for up to 2 s). A Dial client
// is not leader-aware and does not reconnect: a broken connection stays broken and every later call
// fails with Disconnected. DialCluster (cluster.go, docs/client.md) makes a leader-aware client.
package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Client is one connection to a server (TCP, TLS, QUIC or WebSocket). Its methods are safe for concurrent use; requests are
// serialised (lockstep framing).
type Client struct {
	cfg  config
	addr string

	mu       sync.Mutex
	conn     link  // a net.Conn on TCP
	broken   error // set once the connection can no longer be trusted
	clientID wire.Uint128
	session  uint64 // 0 until a Register binds
	counter  uint64 // next metadata request id; starts at 1
	sends    uint64 // SendMessages request ids handed out (exactly_once.go)
	userID   uint32
	closed   bool // Close was called

	cluster *clusterState // nil for Dial: no redirection, no reconnect
}

// Dial connects to addr ("host:port") over the configured transport (WithTransport; TCP with
// TCP_NODELAY by default) and mints a fresh client id. The client stays on addr; DialCluster
// (cluster.go) is the leader-aware constructor.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return dialConfig(ctx, addr, cfg)
}

func dialConfig(ctx context.Context, addr string, cfg config) (*Client, error) {
	conn, err := dialLink(ctx, addr, cfg)
	if err != nil {
		return nil, &Error{Code: wire.ErrCannotEstablishConnection, Err: fmt.Errorf("dial %s over %s: %w", addr, cfg.transport, err)}
	}
	c := &Client{cfg: cfg, addr: addr, conn: conn, counter: 1}
	if err := c.mintClientID(); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection (the server then logs the session out).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cluster != nil {
		c.cluster.login = nil // forget the credentials
	}
	if c.broken == nil {
		c.broken = errors.New("client closed")
	}
	return c.conn.Close()
}

// Addr returns the address of the node the client is connected to (after DialCluster: the node it
// settled on, which changes on redirects and failovers).
func (c *Client) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// ClientID returns the current ephemeral client id.
func (c *Client) ClientID() wire.Uint128 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientID
}

// Session returns the bound session fence (0 when not logged in).
func (c *Client) Session() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// UserID returns the id of the signed-in user (meaningful only while Session() != 0).
func (c *Client) UserID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userID
}

// NextRequestID returns the request id the next metadata-plane request will carry.
func (c *Client) NextRequestID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counter
}

func (c *Client) mintClientID() error {
	var b [16]byte
	for tries := 0; tries < 8; tries++ {
		if _, err := rand.Read(b[:]); err != nil {
			return &Error{Code: wire.ErrError, Err: fmt.Errorf("mint client id: %w", err)}
		}
		id := wire.Uint128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
		if !id.IsZero() {
			c.clientID = id
			return nil
		}
	}
	return &Error{Code: wire.ErrError, Err: errors.New("mint client id: random source returned zeros")}
}

// stampLocked builds the request header for op/code following §2.2 and advances the counter when the
// operation consumes it.
func (c *Client) stampLocked(op wire.Operation, code wire.CommandCode) (wire.RequestHeader, error) {
	h := wire.RequestHeader{Client: c.clientID, Operation: op}
	switch op.Class() {
	case wire.ClassRegister:
		// A Register after a previous bind gets a fresh identity (§2.1).
		if c.session != 0 {
			if err := c.mintClientID(); err != nil {
				return h, err
			}
			c.session, c.counter = 0, 1
			h.Client = c.clientID
		}
	case wire.ClassLogout, wire.ClassMetadata:
		if c.session == 0 {
			return h, &Error{Code: wire.ErrUnauthenticated, Command: code, Err: errors.New("not logged in")}
		}
		h.Request, h.Session = c.counter, c.session
		c.counter++
	case wire.ClassPartition:
		if c.session == 0 {
			return h, &Error{Code: wire.ErrUnauthenticated, Command: code, Err: errors.New("not logged in")}
		}
		h.Request, h.Session = c.counter, c.session
	case wire.ClassNonReplicated:
		h.Request, h.Session, h.Code = c.counter, c.session, code
	default:
		return h, &Error{Code: wire.ErrInvalidCommand, Command: code, Err: fmt.Errorf("operation %s cannot be sent by a client", op)}
	}
	return h, nil
}

// reply is a decoded answer: the payload after any result section.
type reply struct {
	header  wire.ReplyHeader
	payload []byte
}

// call sends one command and returns its payload, applying status/result/eviction decoding and
// transient replays; a DialCluster client also follows the leader (clusterCallLocked).
func (c *Client) call(ctx context.Context, code wire.CommandCode, body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cluster != nil {
		return c.clusterCallLocked(ctx, code, body)
	}
	return c.callLocked(ctx, code, body, time.Now().Add(c.cfg.responseTimeout))
}

// callLocked stamps and runs one command on the current connection until deadline.
func (c *Client) callLocked(ctx context.Context, code wire.CommandCode, body []byte, deadline time.Time) ([]byte, error) {
	op, ok := code.Operation()
	if !ok {
		op = wire.OpNonReplicated
	}
	h, err := c.stampLocked(op, code)
	if err != nil {
		return nil, err
	}
	frame := wire.EncodeRequest(nil, h, body)
	r, err := c.exchangeWithReplaysLocked(ctx, code, h, frame, deadline)
	if err != nil {
		return nil, err
	}
	// Bind or release the session under the same lock, so no request can slip in with a stale fence.
	c.observeRegisterLocked(op, r.header, wire.OK, r.payload)
	return r.payload, nil
}

// exchangeWithReplaysLocked runs the request until it succeeds, fails with a non-transient code, or the
// response budget (deadline) ends. 57 replays the same bytes for the whole budget; 58 for the
// not-accepted window.
func (c *Client) exchangeWithReplaysLocked(ctx context.Context, code wire.CommandCode, h wire.RequestHeader, frame []byte, deadline time.Time) (reply, error) {
	start := time.Now()
	notAcceptedUntil := start.Add(c.cfg.notAcceptedWindow)
	if h.Operation == wire.OpRegister {
		// A Register is never failed over: 58 is replayed for the whole budget (§2.9).
		notAcceptedUntil = deadline
	} else if c.cluster != nil {
		// A DialCluster client does not replay 58 in place: it re-checks the leader and walks the
		// roster instead (clusterCallLocked).
		notAcceptedUntil = start
	}
	var lastTransient error
	for attempt := 1; ; attempt++ {
		r, err := c.exchangeLocked(ctx, code, h, frame, deadline)
		if err != nil && lastTransient != nil && c.cluster != nil && isDeadline(err) {
			// A DialCluster client: the budget ended inside a replay, so the transient that started
			// the replays is the answer (the connection is dropped: the exchange was cut short).
			return reply{}, lastTransient
		}
		transient := CodeOf(err)
		replay := false
		switch {
		case err == nil:
			return r, nil
		case transient == wire.ErrTransientNotCommitted:
			replay = time.Now().Add(c.cfg.replayInterval).Before(deadline)
		case transient == wire.ErrTransientNotAccepted:
			replay = time.Now().Add(c.cfg.replayInterval).Before(notAcceptedUntil) &&
				time.Now().Add(c.cfg.replayInterval).Before(deadline)
		}
		var ce *Error
		if !replay || !errors.As(err, &ce) || ce.Eviction != nil || c.broken != nil {
			return reply{}, err
		}
		lastTransient = err
		c.cfg.logger.Debug("replaying transient rejection", "command", code.String(), "code", transient.String(), "attempt", attempt)
		timer := time.NewTimer(c.cfg.replayInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return reply{}, &Error{Code: transient, Command: code, Err: ctx.Err()}
		case <-timer.C:
		}
	}
}

// exchangeLocked writes one frame and reads one answer.
func (c *Client) exchangeLocked(ctx context.Context, code wire.CommandCode, h wire.RequestHeader, frame []byte, deadline time.Time) (reply, error) {
	f, err := c.roundTripLocked(ctx, code, frame, deadline)
	if err != nil {
		return reply{}, err
	}
	switch f.Command() {
	case wire.CommandEviction:
		ev, err := wire.DecodeEviction(f.Header[:])
		if err != nil {
			return reply{}, c.breakLocked(code, fmt.Errorf("decode eviction: %w", err))
		}
		// An eviction ends the session; the SDKs drop the connection as well.
		c.session = 0
		c.broken = fmt.Errorf("evicted: %s", ev.Reason)
		c.conn.Close()
		return reply{}, &Error{Code: ev.ErrorCode(), Command: code, Eviction: &ev}
	case wire.CommandReply:
	default:
		return reply{}, c.breakLocked(code, fmt.Errorf("unexpected frame command %s", f.Command()))
	}
	rh, err := wire.DecodeReplyHeader(f.Header[:])
	if err != nil {
		return reply{}, c.breakLocked(code, err)
	}
	if rh.Request != h.Request {
		return reply{}, c.breakLocked(code, fmt.Errorf("reply echoes request id %d, sent %d", rh.Request, h.Request))
	}
	if want := h.Operation.ReplyOperation(); rh.Operation != want {
		return reply{}, &Error{Code: wire.ErrInvalidCommand, Command: code,
			Err: fmt.Errorf("reply operation %s, want %s", rh.Operation, want)}
	}
	if rh.Status != wire.OK {
		return reply{}, &Error{Code: rh.Status, Command: code}
	}
	payload := f.Body
	if rh.Operation.ResultFramed(len(payload)) {
		result, rest, err := wire.DecodeResult(payload)
		if err != nil {
			return reply{}, &Error{Code: wire.ErrInvalidCommand, Command: code, Err: err}
		}
		if result != wire.OK {
			return reply{}, &Error{Code: result, Command: code}
		}
		payload = rest
	}
	return reply{header: rh, payload: payload}, nil
}

// roundTripLocked writes frame and reads the next frame, bounded by deadline and ctx. Any I/O failure
// breaks the connection: lockstep framing cannot recover from a partial exchange.
func (c *Client) roundTripLocked(ctx context.Context, code wire.CommandCode, frame []byte, deadline time.Time) (wire.Frame, error) {
	if c.broken != nil {
		return wire.Frame{}, &Error{Code: wire.ErrDisconnected, Command: code, Err: c.broken}
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return wire.Frame{}, c.breakLocked(code, fmt.Errorf("set deadline: %w", err))
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := wire.WriteFrame(c.conn, frame); err != nil {
		return wire.Frame{}, c.breakLocked(code, err)
	}
	f, err := wire.ReadFrame(c.conn, c.cfg.frameSizeMax)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return wire.Frame{}, c.breakLocked(code, err)
	}
	return f, nil
}

func (c *Client) breakLocked(code wire.CommandCode, cause error) error {
	if c.broken == nil {
		c.broken = cause
		c.conn.Close()
		c.cfg.logger.Warn("connection broken", "addr", c.addr, "command", code.String(), "err", cause)
	}
	return &Error{Code: wire.ErrDisconnected, Command: code, Err: cause}
}

// Raw sends one request with the given operation, command code and body, stamped as §2.2 prescribes
// for the operation's class, and returns the reply's status, its result code (for result-framed
// replies) and the payload. It does not replay transients; err is only set for transport failures,
// local preconditions and evictions (an *Error carrying the eviction).
func (c *Client) Raw(ctx context.Context, op wire.Operation, code wire.CommandCode, body []byte) (status, result wire.ErrorCode, payload []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, err := c.stampLocked(op, code)
	if err != nil {
		return 0, 0, nil, err
	}
	f, err := c.roundTripLocked(ctx, code, wire.EncodeRequest(nil, h, body), time.Now().Add(c.cfg.responseTimeout))
	if err != nil {
		return 0, 0, nil, err
	}
	return c.decodeRawReplyLocked(op, code, h, f.Header[:], f.Body)
}

// decodeRawReplyLocked turns a Raw reply frame into status, result and payload, observing evictions
// and session changes.
func (c *Client) decodeRawReplyLocked(op wire.Operation, code wire.CommandCode, h wire.RequestHeader, header, body []byte) (status, result wire.ErrorCode, payload []byte, err error) {
	if wire.FrameCommand(header) == wire.CommandEviction {
		ev, derr := wire.DecodeEviction(header)
		if derr != nil {
			return 0, 0, nil, c.breakLocked(code, derr)
		}
		c.session = 0
		c.broken = fmt.Errorf("evicted: %s", ev.Reason)
		c.conn.Close()
		return 0, 0, nil, &Error{Code: ev.ErrorCode(), Command: code, Eviction: &ev}
	}
	rh, err := wire.DecodeReplyHeader(header)
	if err != nil {
		return 0, 0, nil, c.breakLocked(code, err)
	}
	if rh.Request != h.Request {
		return 0, 0, nil, c.breakLocked(code, fmt.Errorf("reply echoes request id %d, sent %d", rh.Request, h.Request))
	}
	payload = body
	if rh.Status == wire.OK && rh.Operation.ResultFramed(len(payload)) {
		result, payload, err = wire.DecodeResult(payload)
		if err != nil {
			return rh.Status, 0, nil, &Error{Code: wire.ErrInvalidCommand, Command: code, Err: err}
		}
	}
	c.observeRegisterLocked(op, rh, result, payload)
	return rh.Status, result, payload, nil
}

// observeRegisterLocked binds the session when a Raw Register or Logout succeeds, so later stamping
// stays consistent.
func (c *Client) observeRegisterLocked(op wire.Operation, rh wire.ReplyHeader, result wire.ErrorCode, payload []byte) {
	if rh.Status != wire.OK || result != wire.OK {
		return
	}
	switch op {
	case wire.OpRegister:
		if r, err := wire.DecodeRegisterReply(payload); err == nil {
			c.session, c.userID = r.Session, r.UserID
		}
	case wire.OpLogout:
		c.session = 0
	}
}

// RawFrame writes frame verbatim (it may be malformed) and returns the next frame the server sends.
// It neither stamps nor checks anything; the connection is marked broken if the server closes it or
// does not answer within the response timeout.
func (c *Client) RawFrame(ctx context.Context, frame []byte) (wire.Frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return wire.Frame{}, &Error{Code: wire.ErrDisconnected, Err: c.broken}
	}
	deadline := time.Now().Add(c.cfg.responseTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return wire.Frame{}, c.breakLocked(0, err)
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.conn.Write(frame); err != nil {
		return wire.Frame{}, c.breakLocked(0, fmt.Errorf("write raw frame: %w", err))
	}
	f, err := wire.ReadFrame(c.conn, c.cfg.frameSizeMax)
	if err != nil {
		return wire.Frame{}, c.breakLocked(0, err)
	}
	return f, nil
}

// dialLink connects to addr over cfg's transport.
func dialLink(ctx context.Context, addr string, cfg config) (link, error) {
	switch cfg.transport {
	case TransportQUIC:
		return dialQUIC(ctx, addr, cfg)
	case TransportWebSocket:
		return dialWebSocket(ctx, addr, cfg)
	case TransportHTTP:
		return dialHTTP(ctx, addr, cfg)
	case TransportTCP, "":
	default:
		return nil, fmt.Errorf("unknown transport %q", cfg.transport)
	}
	dialer := net.Dialer{Timeout: cfg.dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		if err := tcp.SetNoDelay(true); err != nil {
			conn.Close()
			return nil, fmt.Errorf("set TCP_NODELAY: %w", err)
		}
	}
	if cfg.tls == nil {
		return conn, nil
	}
	tc := tls.Client(conn, clientTLS(cfg.tls, addr))
	hctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return tc, nil
}
