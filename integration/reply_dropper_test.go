package integration

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// replyDropper is a TCP proxy in front of one node's client port that can lose the reply of a
// SendMessages after the node committed it: the request is forwarded, the node's reply is read
// and thrown away, and both connections are closed — the client cannot know whether the send was
// applied (a node dying between commit and reply, made deterministic). Loopback only; every
// connection and goroutine ends at test cleanup.
type replyDropper struct {
	t      *testing.T
	ln     net.Listener
	target string
	drops  *atomic.Int32 // SendMessages replies still to drop (shared by a cluster's proxies)
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func startReplyDropper(t *testing.T, listen, target string, drops *atomic.Int32) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("proxy listen on %s: %v", listen, err)
	}
	d := &replyDropper{t: t, ln: ln, target: target, drops: drops}
	d.wg.Add(1)
	go d.accept()
	t.Cleanup(func() {
		ln.Close()
		d.mu.Lock()
		for _, c := range d.conns {
			c.Close()
		}
		d.mu.Unlock()
		d.wg.Wait()
	})
	return d
}

func (d *replyDropper) track(c net.Conn) {
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
}

func (d *replyDropper) accept() {
	defer d.wg.Done()
	for {
		in, err := d.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", d.target, 5*time.Second)
		if err != nil {
			in.Close() // the node is down: the client sees a refused connection
			continue
		}
		d.track(in)
		d.track(out)
		sends := make(chan bool, 64) // one entry per forwarded request: is it a SendMessages?
		d.wg.Add(2)
		go func() { // client → node
			defer d.wg.Done()
			defer close(sends)
			for {
				f, err := wire.ReadFrame(in, 0)
				if err != nil {
					out.Close()
					return
				}
				h, _ := wire.DecodeRequestHeader(f.Header[:])
				sends <- h.Operation == wire.OpSendMessages
				if err := wire.WriteFrame(out, append(f.Header[:], f.Body...)); err != nil {
					in.Close()
					return
				}
			}
		}()
		go func() { // node → client
			defer d.wg.Done()
			for {
				f, err := wire.ReadFrame(out, 0)
				if err != nil {
					in.Close()
					return
				}
				isSend := false
				if wire.FrameCommand(f.Header[:]) == wire.CommandReply {
					isSend = <-sends
				}
				if isSend && d.drops.Add(-1) >= 0 {
					in.Close() // the reply is lost with the connection
					out.Close()
					return
				} else if isSend {
					d.drops.Add(1)
				}
				if err := wire.WriteFrame(in, append(f.Header[:], f.Body...)); err != nil {
					out.Close()
					return
				}
			}
		}()
	}
}
