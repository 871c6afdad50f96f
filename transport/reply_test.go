package transport

import (
	"testing"
)

// replyHandler answers a frame whose byte 60 is 1 with Reply alone, and any
// other frame with Send of a marker frame first, then Reply of the echo.
type replyHandler struct{}

func (replyHandler) Opened(*Conn) {}
func (replyHandler) Closed(*Conn) {}
func (replyHandler) HandleFrame(c *Conn, f []byte) {
	if f[60] != 1 {
		c.Send(frameOf(8, 7))
	}
	c.Reply(f, false)
}

// Reply writes inline when nothing is queued and never overtakes a frame
// queued before it.
func TestReplyKeepsOrderBehindQueuedFrames(t *testing.T) {
	s := startServer(t, TCPConfig{}, replyHandler{})
	c := dial(t, s)
	for i := 0; i < 50; i++ {
		alone := frameOf(100+i, 1)
		if _, err := c.Write(alone); err != nil {
			t.Fatal(err)
		}
		readEcho(t, c, alone)
		behind := frameOf(100+i, 2)
		if _, err := c.Write(behind); err != nil {
			t.Fatal(err)
		}
		readEcho(t, c, frameOf(8, 7))
		readEcho(t, c, behind)
	}
}
