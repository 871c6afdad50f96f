package transport

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
)

// ErrWebSocketFrameSize reports a WebSocket frame whose payload exceeds
// the frame limit (max_frame_size); the connection is closed before the
// payload is read. The WebSocket library bounds whole messages only.
var ErrWebSocketFrameSize = fmt.Errorf("%w: websocket frame above max_frame_size", ErrFrameSize)

// wsFrameGuard follows RFC 6455 frame headers through the bytes a
// WebSocket connection reads (any chunking), skipping payloads, and
// refuses a header that declares more than frameBytesMax payload bytes.
type wsFrameGuard struct {
	frameBytesMax uint64
	hdr           [14]byte // 2 bytes, up to 8 of extended length, 4 of mask
	hdrLen        int
	hdrNeed       int
	payloadLeft   uint64
}

// observe consumes p; after an error the guard must not be used again.
func (g *wsFrameGuard) observe(p []byte) error {
	for len(p) > 0 {
		if g.payloadLeft > 0 {
			n := min(uint64(len(p)), g.payloadLeft)
			g.payloadLeft -= n
			p = p[n:]
			continue
		}
		g.hdr[g.hdrLen] = p[0]
		g.hdrLen++
		p = p[1:]
		if g.hdrLen == 2 {
			g.hdrNeed = 2
			switch g.hdr[1] & 0x7f {
			case 126:
				g.hdrNeed += 2
			case 127:
				g.hdrNeed += 8
			}
			if g.hdr[1]&0x80 != 0 {
				g.hdrNeed += 4
			}
		}
		if g.hdrLen < 2 || g.hdrLen < g.hdrNeed {
			continue
		}
		var length uint64
		switch l := g.hdr[1] & 0x7f; l {
		case 126:
			length = uint64(binary.BigEndian.Uint16(g.hdr[2:4]))
		case 127:
			length = binary.BigEndian.Uint64(g.hdr[2:10])
		default:
			length = uint64(l)
		}
		if length > g.frameBytesMax {
			return fmt.Errorf("%w: %d bytes, allowed %d", ErrWebSocketFrameSize, length, g.frameBytesMax)
		}
		g.payloadLeft = length
		g.hdrLen, g.hdrNeed = 0, 0
	}
	return nil
}

// wsGuardConn is a server-side connection whose reads pass through a
// wsFrameGuard once armed (after the HTTP upgrade: the upgrade request is
// not WebSocket framing). Only the connection's reader reads from it.
type wsGuardConn struct {
	net.Conn
	armed atomic.Bool
	guard wsFrameGuard
	err   error
}

func (g *wsGuardConn) arm(frameBytesMax uint64) {
	g.guard.frameBytesMax = frameBytesMax
	g.armed.Store(true)
}

func (g *wsGuardConn) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.Conn.Read(p)
	if n > 0 && g.armed.Load() {
		if gerr := g.guard.observe(p[:n]); gerr != nil {
			g.err = gerr
			return 0, gerr
		}
	}
	return n, err
}
