package bus

import "sync/atomic"

// Stats is a snapshot of a bus's counters (monotonic since New).
type Stats struct {
	FramesSent     uint64 // frames written to a peer's socket
	FramesReceived uint64 // frames decoded and delivered to OnMessage, OnForward or OnFetch
	FramesInvalid  uint64 // received frames logged and dropped (unknown, malformed, bad checksum, wrong sender)
	WriteBatches   uint64 // socket writes (each up to max_batch frames)
	LargestBatch   uint64 // most frames coalesced into one write so far

	FramesDroppedQueueFull    uint64 // peer send queue at peer_queue_capacity
	FramesDroppedNotConnected uint64 // no live connection to the peer (or not a roster peer)
	FramesDroppedOversize     uint64 // frame above max_message_size (a prepare, a fetch reply), never sent
	FramesDroppedEncode       uint64 // message that does not encode (unknown kind, missing prepare, forward outcome or fetch fields out of range)
	FramesDroppedNoHandler    uint64 // valid forward (fetch) frame received with no OnForward (OnFetch) set

	ConnectionsClosedOversize uint64 // peer declared a frame size outside [256, max_message_size]
	ConnectionsDialed         uint64 // handshakes completed as the dialer (to a higher id)
	ConnectionsAccepted       uint64 // handshakes completed as the acceptor (from a lower id)
	// HandshakesRefused counts failed handshakes by Refusal (index), both
	// as acceptor and as dialer.
	HandshakesRefused [refusalCount]uint64
	DialFailures      uint64 // TCP connect errors (peer down)
	AcceptsShed       uint64 // inbound connections closed because too many handshakes were pending
}

// Refused returns the refusal count for reason r.
func (s Stats) Refused(r Refusal) uint64 {
	if r >= refusalCount {
		return 0
	}
	return s.HandshakesRefused[r]
}

// counters are the live atomic counters behind Stats.
type counters struct {
	framesSent, framesReceived, framesInvalid, writeBatches                   atomic.Uint64
	droppedQueueFull, droppedNotConnected, droppedOversize, droppedEncode     atomic.Uint64
	droppedNoHandler                                                          atomic.Uint64
	closedOversize, dialed, accepted, dialFailures, acceptsShed, largestBatch atomic.Uint64
	refused                                                                   [refusalCount]atomic.Uint64
}

func (c *counters) snapshot() Stats {
	s := Stats{
		FramesSent: c.framesSent.Load(), FramesReceived: c.framesReceived.Load(),
		FramesInvalid: c.framesInvalid.Load(), WriteBatches: c.writeBatches.Load(),
		FramesDroppedQueueFull: c.droppedQueueFull.Load(), FramesDroppedNotConnected: c.droppedNotConnected.Load(),
		FramesDroppedOversize: c.droppedOversize.Load(), FramesDroppedEncode: c.droppedEncode.Load(),
		FramesDroppedNoHandler: c.droppedNoHandler.Load(),
		LargestBatch:           c.largestBatch.Load(), ConnectionsClosedOversize: c.closedOversize.Load(),
		ConnectionsDialed: c.dialed.Load(), ConnectionsAccepted: c.accepted.Load(),
		DialFailures: c.dialFailures.Load(), AcceptsShed: c.acceptsShed.Load(),
	}
	for i := range c.refused {
		s.HandshakesRefused[i] = c.refused[i].Load()
	}
	return s
}

// noteBatch records a write of n frames.
func (c *counters) noteBatch(n int) {
	c.framesSent.Add(uint64(n))
	c.writeBatches.Add(1)
	for {
		cur := c.largestBatch.Load()
		if uint64(n) <= cur || c.largestBatch.CompareAndSwap(cur, uint64(n)) {
			return
		}
	}
}
