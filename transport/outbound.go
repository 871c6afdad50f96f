package transport

import "sync/atomic"

// outboundBudget counts the reply bytes queued on every connection of a
// server and not yet written. It is not a reservation: a reply is always
// queued (never dropped), and a connection whose replies pile up stops
// reading requests instead (Conn.awaitDrain). While the total exceeds
// bytesMax, only connections that still have replies queued are held back,
// so a lockstep client that drains its replies is never made to wait for a
// slow one. The total therefore stays below bytesMax plus at most one reply
// per connection that had nothing queued.
type outboundBudget struct {
	bytesMax int64
	used     atomic.Int64
}

func (b *outboundBudget) add(n int64) { b.used.Add(n) }

func (b *outboundBudget) over() bool { return b.used.Load() > b.bytesMax }

// inUse is the number of queued reply bytes (tests, metrics).
func (b *outboundBudget) inUse() int64 { return b.used.Load() }
