package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// RawReply is the decoded answer to a RawPrepared request.
type RawReply struct {
	Status  wire.ErrorCode // the reply header's status
	Result  wire.ErrorCode // the result section's code, for result-framed replies with status OK
	Payload []byte         // after any result section; aliases the caller's reply buffer
}

// RawPrepared is Raw for hot loops that resend one encoded body: frame is the caller's buffer holding
// wire.HeaderSize bytes (overwritten here with the stamped header) followed by the body, so nothing is
// copied before the write; the reply is read into *replyBuf, grown when too small, so steady polling
// reuses one buffer. RawReply.Payload aliases *replyBuf until the next call with it. Like Raw it does not
// replay transients; err is only set for transport failures, local preconditions and evictions.
func (c *Client) RawPrepared(ctx context.Context, op wire.Operation, code wire.CommandCode, frame []byte, replyBuf *[]byte) (RawReply, error) {
	if len(frame) < wire.HeaderSize {
		return RawReply{}, &Error{Code: wire.ErrInvalidCommand, Command: code,
			Err: fmt.Errorf("prepared frame of %d bytes is shorter than the %d-byte header", len(frame), wire.HeaderSize)}
	}
	if replyBuf == nil {
		return RawReply{}, &Error{Code: wire.ErrInvalidCommand, Command: code, Err: errors.New("nil reply buffer")}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, err := c.stampLocked(op, code)
	if err != nil {
		return RawReply{}, err
	}
	h.Size = uint32(len(frame))
	wire.PutRequestHeader(frame, h)
	reply, err := c.roundTripIntoLocked(ctx, code, frame, replyBuf, time.Now().Add(c.cfg.responseTimeout))
	if err != nil {
		return RawReply{}, err
	}
	status, result, payload, err := c.decodeRawReplyLocked(op, code, h, reply[:wire.HeaderSize], reply[wire.HeaderSize:])
	return RawReply{Status: status, Result: result, Payload: payload}, err
}

// roundTripIntoLocked is roundTripLocked reading the reply frame (header and body) into *buf.
func (c *Client) roundTripIntoLocked(ctx context.Context, code wire.CommandCode, frame []byte, buf *[]byte, deadline time.Time) ([]byte, error) {
	if c.broken != nil {
		return nil, &Error{Code: wire.ErrDisconnected, Command: code, Err: c.broken}
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, c.breakLocked(code, fmt.Errorf("set deadline: %w", err))
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := wire.WriteFrame(c.conn, frame); err != nil {
		return nil, c.breakLocked(code, err)
	}
	reply, err := c.readFrameIntoLocked(buf)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, c.breakLocked(code, err)
	}
	return reply, nil
}

// readFrameIntoLocked reads one frame into *buf (grown to the declared size, which is checked against
// the frame size limit before anything is allocated) and returns it.
func (c *Client) readFrameIntoLocked(buf *[]byte) ([]byte, error) {
	b := *buf
	if cap(b) < wire.HeaderSize {
		b = make([]byte, wire.HeaderSize)
	}
	b = b[:wire.HeaderSize]
	if _, err := io.ReadFull(c.conn, b); err != nil {
		*buf = b
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	size := wire.FrameSize(b)
	sizeMax := c.cfg.frameSizeMax
	if sizeMax == 0 || sizeMax > wire.FrameSizeMax {
		sizeMax = wire.FrameSizeMax
	}
	if size < wire.HeaderSize || size > sizeMax {
		*buf = b
		return nil, &wire.FrameSizeError{Size: size, Limit: sizeMax}
	}
	if int(size) > cap(b) {
		grown := make([]byte, size)
		copy(grown, b)
		b = grown
	}
	b = b[:size]
	*buf = b
	if _, err := io.ReadFull(c.conn, b[wire.HeaderSize:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame body (%d bytes): %w", size-wire.HeaderSize, err)
	}
	return b, nil
}
