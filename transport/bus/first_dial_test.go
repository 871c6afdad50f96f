package bus

import (
	"net"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
)

// TestBusReachesALatePeerWithinAFractionOfTheReconnectPeriod: a peer whose
// listener comes up just after the first dial is reached after a short
// pause (doubling from firstDialGap), not after a whole reconnect_period.
// Nodes started together otherwise formed a quorum without the late one,
// which then rejoined as a replica that lost its storage.
func TestBusReachesALatePeerWithinAFractionOfTheReconnectPeriod(t *testing.T) {
	const late = 1
	c := &cluster{t: t, nodes: make([]*node, 2), opts: func(id uint8, o *Options) {
		o.MessageBus.ReconnectPeriod = config.Dur(time.Hour) // only the fast start can reach the late peer
	}}
	lns := make([]net.Listener, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.addrs = append(c.addrs, ln.Addr().String())
	}
	if err := lns[late].Close(); err != nil { // refused until the late node binds it again
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd != nil {
				_ = nd.bus.Close()
			}
		}
	})
	c.start(0, lns[0]) // dials replica 1 at once: refused
	time.Sleep(300 * time.Millisecond)
	c.start(late, nil)
	waitFor(t, "the late peer to be reached", c.allConnected)
}
