package node

import (
	"time"
)

// Leadership alignment (issue 8 point 7, beyond upstream): a leader-
// following client (the Go SDK) talks to the metadata primary only, so a
// partition whose primary sits on another node would refuse its writes
// (58) forever. Each partition group's primary therefore hands the group
// over to the metadata primary's node when that node is healthy: an orderly
// VSR view change (consensus HandOver), which never produces two primaries.
// The shard loops check every group on every tick, a bounded number of
// hand-overs per tick, and a group that did not end up on the target is
// tried again only after a back-off that doubles while hand-overs to the
// same target keep failing, so an unreachable or recovering target cannot
// make the group flap.

const (
	alignHandOversPerTick = 32               // per shard per tick
	alignRetryAfter       = 10 * time.Second // per group, after a hand-over
	alignRetryMax         = 5 * time.Minute  // the back-off after hand-overs that keep failing
	// alignStuckWindow: leading the group again within this much of the
	// back-off, towards the same target, means the hand-over did not stick.
	alignStuckWindow = 30 * time.Second
)

// alignTarget is the replica partition primaries should move to, published
// by the node: ok is false on a single node, while the metadata group has
// no Normal primary, or when this node has no bus connection to it.
type alignTarget func() (replica uint8, ok bool)

// metadataAlignTarget implements alignTarget for the node.
func (n *Node) metadataAlignTarget() (uint8, bool) {
	if !n.topo.clustered || n.driver == nil {
		return 0, false
	}
	st := n.driver.status.Load()
	if st == nil || st.status != statusNormal {
		return 0, false
	}
	primary := uint8(st.view % uint32(n.topo.count))
	if primary != n.topo.self && (n.bus == nil || !n.bus.Connected(primary)) {
		return 0, false
	}
	return primary, true
}

// align (shard goroutine, each tick) hands over the groups this replica
// leads when the metadata primary is another healthy node.
func (s *partitionShard) align(nowTick time.Time) {
	if s.alignTo == nil {
		return
	}
	target, ok := s.alignTo()
	if !ok || target == s.self {
		return
	}
	budget := alignHandOversPerTick
	for _, e := range s.awake.list { // a resting group is aligned (partition_rest.go)
		if budget == 0 {
			return
		}
		// The published role (the entry's first cache lines), not the
		// group's: this walk runs every tick over every awake group.
		if !e.primary.Load() || nowTick.Before(e.alignRetryAt) || e.transfer != nil {
			continue
		}
		if !s.reservationSettled(e, nowTick) {
			continue // not yet: it hands over once its reservation is exact (partition_reserve.go)
		}
		s.catchUp(e)
		handed := e.group.HandOver(target)
		e.handoverUntil = 0
		s.schedule(e)
		if handed {
			budget--
			e.alignRetryAt = nowTick.Add(alignBackoff(e, target, nowTick))
			e.stampValid = false
			s.touch(e)
		}
	}
}

// alignBackoff is how long a group waits after a hand-over to target
// before the next: alignRetryAfter, doubled (up to alignRetryMax) each
// time this replica leads the group again towards the same target soon
// after handing it over. A target whose replica of the group cannot take
// over (recovering, its storage lost) made each hand-over a failed view
// change, and with a fixed back-off about as long as that failure the
// group was down most of the time, its recovering replicas never answered
// (whole-node simulator seed 17214).
func alignBackoff(e *partitionEntry, target uint8, now time.Time) time.Duration {
	if e.alignLastTarget == target && !e.alignLastAt.IsZero() && now.Sub(e.alignLastAt) < e.alignWait+alignStuckWindow {
		e.alignWait = min(2*e.alignWait, alignRetryMax)
	} else {
		e.alignWait = alignRetryAfter
	}
	e.alignLastTarget, e.alignLastAt = target, now
	return e.alignWait
}

// logLeadership (background job, every leadershipCheckEvery) logs how
// many partition groups this node leads whenever the number changed: the
// operator's view of where partition leadership sits (and what the
// alignment and failover tests read). While leadership moves it logs at
// most once per leadershipLogEvery, except that a settled state (this
// node leads all of its partitions or none, or the metadata primary
// moved) is logged at once, so the moment a failover completes is known
// to within a check interval.
func (n *Node) logLeadership(now time.Time) {
	if n.plane == nil || !n.topo.clustered {
		return
	}
	led, total := 0, 0
	var dropped uint64
	for _, s := range n.plane.shards {
		led += int(s.led.Load())
		total += int(s.served.Load())
		dropped += s.inboxDropped.Load()
	}
	var queueFull uint64
	if n.bus != nil {
		queueFull = n.bus.Stats().FramesDroppedQueueFull
	}
	if (dropped != n.lastInboxDropped || queueFull != n.lastQueueFull) && now.Sub(n.lastDropLog) >= leadershipLogEvery {
		// Replica messages dropped at a full shard inbox or peer send
		// queue: VSR retransmits, but each drop costs a retransmit timeout.
		n.log.Warn("replica messages dropped at full queues", "shard_inbox", dropped-n.lastInboxDropped,
			"peer_send_queue", queueFull-n.lastQueueFull, "shard_inbox_total", dropped, "peer_send_queue_total", queueFull)
		n.lastInboxDropped, n.lastQueueFull, n.lastDropLog = dropped, queueFull, now
	}
	meta := n.isMetadataPrimary()
	if led == n.lastLed && total == n.lastServed && meta == n.lastMetaPrimary {
		return
	}
	settled := led == 0 || led == total || meta != n.lastMetaPrimary
	if !settled && now.Sub(n.lastLeadershipLog) < leadershipLogEvery {
		return
	}
	n.lastLed, n.lastServed, n.lastMetaPrimary, n.lastLeadershipLog = led, total, meta, now
	n.log.Info("partition leadership", "primaries_here", led, "partitions", total, "metadata_primary_here", meta)
}

const (
	leadershipCheckEvery = 100 * time.Millisecond
	leadershipLogEvery   = time.Second
)
