package transport

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func startWS(t *testing.T, cfg WebSocketConfig, h Handler) *WebSocketServer {
	t.Helper()
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := ListenWebSocket(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return s
}

func dialWS(t *testing.T, url string, writeBuffer int, tlsConf *tls.Config) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, WriteBufferSize: writeBuffer, TLSClientConfig: tlsConf}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	return ws
}

func wsEcho(t *testing.T, ws *websocket.Conn, f []byte) {
	t.Helper()
	if err := ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
		t.Fatal(err)
	}
	mt, got, err := ws.ReadMessage()
	if err != nil || mt != websocket.BinaryMessage || string(got) != string(f) {
		t.Fatalf("echo: type %d, %d bytes, %v", mt, len(got), err)
	}
}

// expectWSClosed fails unless the server closes ws.
func expectWSClosed(t *testing.T, ws *websocket.Conn) {
	t.Helper()
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("websocket still open")
			}
			return
		}
	}
}

func TestWebSocketBinaryFramesAnyPath(t *testing.T) {
	h := &echoHandler{}
	s := startWS(t, WebSocketConfig{}, h)
	for _, path := range []string{"/", "/any/path?x=1"} {
		ws := dialWS(t, "ws://"+s.Addr().String()+path, 4096, nil)
		wsEcho(t, ws, frameOf(0, 5))
		// 300 KiB through a 4 KiB client buffer arrives in fragments.
		wsEcho(t, ws, frameOf(300<<10, 5))
	}
	ws := dialWS(t, "ws://"+s.Addr().String(), 0, nil)
	ev := frameOf(0, 99)
	wsEcho(t, ws, ev)
	expectWSClosed(t, ws)
}

// TestWebSocketMalformed: each broken message closes its connection.
func TestWebSocketMalformed(t *testing.T) {
	h := &echoHandler{}
	s := startWS(t, WebSocketConfig{WSFrameBytesMax: 64 << 10, MessageBytesMax: 1 << 20,
		TCPConfig: TCPConfig{FrameReadTimeout: 300 * time.Millisecond}}, h)
	url := "ws://" + s.Addr().String()
	short := frameOf(100, 5)
	cases := []struct {
		name        string
		writeBuffer int
		send        func(ws *websocket.Conn)
	}{
		{"text message", 0, func(ws *websocket.Conn) { _ = ws.WriteMessage(websocket.TextMessage, frameOf(0, 5)) }},
		{"size above the message length", 0, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.BinaryMessage, short[:len(short)-10])
		}},
		{"message longer than the size", 0, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.BinaryMessage, append(frameOf(10, 5), 0, 0))
		}},
		{"half a header", 0, func(ws *websocket.Conn) { _ = ws.WriteMessage(websocket.BinaryMessage, make([]byte, 100)) }},
		{"empty message", 0, func(ws *websocket.Conn) { _ = ws.WriteMessage(websocket.BinaryMessage, nil) }},
		{"frame above max_frame_size", 256 << 10, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.BinaryMessage, frameOf(100<<10, 5))
		}},
		{"message above max_message_size", 4096, func(ws *websocket.Conn) {
			_ = ws.WriteMessage(websocket.BinaryMessage, frameOf(2<<20, 5))
		}},
		{"message never finished", 0, func(ws *websocket.Conn) {
			// A first fragment (FIN clear) and then nothing.
			_, _ = ws.UnderlyingConn().Write(rawWSFrame(false, websocket.BinaryMessage, frameOf(10<<10, 5)[:300]))
		}},
		{"abrupt reset", 0, func(ws *websocket.Conn) {
			w, _ := ws.NextWriter(websocket.BinaryMessage)
			_, _ = w.Write(frameOf(100<<10, 5))
			if tc, ok := ws.UnderlyingConn().(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = ws.UnderlyingConn().Close()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := dialWS(t, url, tc.writeBuffer, nil)
			tc.send(ws)
			if tc.name != "abrupt reset" {
				expectWSClosed(t, ws)
			}
		})
	}
	waitFor(t, func() bool { o, c, _ := h.counts(); return o == len(cases) && c == len(cases) })
	wsEcho(t, dialWS(t, url, 0, nil), frameOf(10, 5))
}

func TestWebSocketTLS(t *testing.T) {
	cert, err := SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	s := startWS(t, WebSocketConfig{TCPConfig: TCPConfig{TLS: cert}}, &echoHandler{})
	ws := dialWS(t, "wss://"+s.Addr().String()+"/", 0, &tls.Config{InsecureSkipVerify: true})
	wsEcho(t, ws, frameOf(1000, 5))
	// A plain ws:// client cannot upgrade on a WSS listener.
	d := websocket.Dialer{HandshakeTimeout: 2 * time.Second}
	if _, _, err := d.Dial("ws://"+s.Addr().String(), nil); err == nil {
		t.Fatal("plain websocket upgraded on a WSS listener")
	}
}

// rawWSFrame encodes one masked client frame (payload below 64 KiB).
func rawWSFrame(fin bool, opcode int, payload []byte) []byte {
	b0 := byte(opcode)
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	if len(payload) < 126 {
		out = append(out, 0x80|byte(len(payload)))
	} else {
		out = append(out, 0x80|126, byte(len(payload)>>8), byte(len(payload)))
	}
	mask := [4]byte{1, 2, 3, 4}
	out = append(out, mask[:]...)
	for i, b := range payload {
		out = append(out, b^mask[i%4])
	}
	return out
}
