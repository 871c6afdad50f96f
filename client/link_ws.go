package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// wsLink carries each request frame as one Binary message and reads each
// reply from one message (wire-protocol §7).
type wsLink struct {
	ws *websocket.Conn
	r  io.Reader // the reply message being read

	mu       sync.Mutex // SetDeadline may come from a context's AfterFunc
	deadline time.Time
}

func dialWebSocket(ctx context.Context, addr string, cfg config) (link, error) {
	d := websocket.Dialer{HandshakeTimeout: cfg.dialTimeout, WriteBufferSize: wsClientBufferBytes,
		NetDialContext: (&net.Dialer{Timeout: cfg.dialTimeout}).DialContext}
	scheme := "ws"
	if cfg.tls != nil {
		scheme = "wss"
		d.TLSClientConfig = clientTLS(cfg.tls, addr)
	}
	ws, _, err := d.DialContext(ctx, scheme+"://"+addr+"/", nil)
	if err != nil {
		return nil, err
	}
	if tc, ok := ws.NetConn().(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &wsLink{ws: ws}, nil
}

// SetDeadline bounds the next exchange; from another goroutine it only
// moves the socket's deadline (which interrupts blocked I/O).
func (l *wsLink) SetDeadline(t time.Time) error {
	l.mu.Lock()
	l.deadline = t
	l.mu.Unlock()
	return l.ws.NetConn().SetDeadline(t)
}

func (l *wsLink) Write(p []byte) (int, error) {
	l.r = nil
	l.mu.Lock()
	d := l.deadline
	l.mu.Unlock()
	_ = l.ws.SetWriteDeadline(d)
	if err := l.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read reads the current reply message; it starts on the next one when
// the previous was read to its end.
func (l *wsLink) Read(p []byte) (int, error) {
	if l.r == nil {
		mt, r, err := l.ws.NextReader()
		if err != nil {
			return 0, err
		}
		if mt != websocket.BinaryMessage {
			return 0, fmt.Errorf("websocket: server sent message type %d, want Binary", mt)
		}
		l.r = r
	}
	n, err := l.r.Read(p)
	if err == io.EOF {
		l.r = nil
	}
	return n, err
}

func (l *wsLink) Close() error { return l.ws.Close() }

func (l *wsLink) RemoteAddr() net.Addr { return l.ws.RemoteAddr() }
