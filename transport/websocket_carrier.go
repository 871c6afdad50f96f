package transport

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gorilla/websocket"
)

// wsCloseGrace bounds the close frame sent when a peer breaks the framing.
const wsCloseGrace = time.Second

// wsCarrier carries one frame per Binary message.
type wsCarrier struct{ ws *websocket.Conn }

func (w *wsCarrier) handshake(*Conn) error { return nil }

// nextFrame waits for the next message without a deadline (as on TCP),
// then reads it whole within the frame read deadline. A Text message, or a
// message whose length differs from the declared frame size, closes the
// connection.
func (w *wsCarrier) nextFrame(c *Conn) ([]byte, int64, error) {
	mt, r, err := w.ws.NextReader()
	if err != nil {
		return nil, 0, err
	}
	if mt != websocket.BinaryMessage {
		w.refuse(websocket.CloseUnsupportedData, "binary messages only")
		return nil, 0, fmt.Errorf("%w: websocket message type %d, want Binary", ErrProtocol, mt)
	}
	frame, held, err := c.readExactFrame(r, func(extra time.Duration) {
		_ = w.ws.SetReadDeadline(time.Now().Add(c.cfg.FrameReadTimeout + extra))
	})
	if err != nil {
		if errors.Is(err, ErrFrameSize) {
			w.refuse(websocket.ClosePolicyViolation, "bad frame size")
		}
		return nil, 0, fmt.Errorf("websocket message: %w", err)
	}
	_ = w.ws.SetReadDeadline(time.Time{})
	return frame, held, nil
}

// refuse tells the peer why its connection closes (best effort).
func (w *wsCarrier) refuse(code int, text string) {
	_ = w.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text),
		time.Now().Add(wsCloseGrace))
}

func (w *wsCarrier) writeFrame(frame []byte, deadline time.Time) error {
	_ = w.ws.SetWriteDeadline(deadline)
	return w.ws.WriteMessage(websocket.BinaryMessage, frame)
}

func (w *wsCarrier) close()              { _ = w.ws.NetConn().Close() }
func (w *wsCarrier) localAddr() net.Addr { return w.ws.LocalAddr() }
