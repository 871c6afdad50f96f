package bus

import (
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
	c, lns := unstartedCluster(t, 2, func(id uint8, o *Options) {
		o.MessageBus.ReconnectPeriod = config.Dur(time.Hour) // only the fast start can reach the late peer
	})
	if err := lns[late].Close(); err != nil { // refused until the late node binds it again
		t.Fatal(err)
	}
	c.start(0, lns[0]) // dials replica 1 at once: refused
	time.Sleep(300 * time.Millisecond)
	c.start(late, nil)
	waitFor(t, "the late peer to be reached", c.allConnected)
}
