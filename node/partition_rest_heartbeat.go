package node

import (
	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
)

// A resting partition group's primary sends nothing (partition_rest.go),
// and a backup rests once it heard its view's primary; a backup that
// missed the group's last prepare and the commit heartbeats after it, or
// the view changes to a later view led by the same node, then stayed
// behind until the partition's next write, with every replica resting
// and every bus connection up (metadata simulator M23, seeds 47430 and
// 59820: its polls capped at an old commit, nothing lost).
//
// So a primary's resting group broadcasts one commit heartbeat every
// restHeartbeatTicks (4 × heartbeat_timeout) without waking
// (consensus RestHeartbeat). A resting backup that holds what it says (its
// view, everything committed up to its commit) drops it without waking
// (restHeartbeatHeld); any other backup wakes on it and catches up as
// after any heartbeat: it repairs the ops it lacks, or, in an older view,
// probes the later view's primary (heard, ProbePrimary).
//
// The cost is bounded per shard, not per group: a shard sends at most one
// every restHeartbeatSpacingTicks (12.5 a second), so with more resting
// groups than an interval covers a round takes longer (10,000 groups on
// four shards: about 200 s). Measured first without the bound: 10,000
// resting groups heartbeating every 20 s (1,000 frames a second) raised a
// node's idle CPU from 2.6-2.8 % to 6.1-8.4 % of one core.

// restHeartbeatSpacingTicks: a shard's rest heartbeats are at least this
// many ticks apart.
const restHeartbeatSpacingTicks = 8

// restHeartbeatIntervals: a resting primary's heartbeat interval, in
// heartbeat timeouts.
const restHeartbeatIntervals = 4

// restHeartbeatTicksOf is the resting primaries' heartbeat interval in
// shard ticks.
func restHeartbeatTicksOf(t config.ConsensusTicks) uint64 {
	return restHeartbeatIntervals * t.HeartbeatTimeoutTicks
}

// restHeartbeatDue is a resting led group's next heartbeat.
type restHeartbeatDue struct {
	e   *partitionEntry
	due uint64 // shard tick
	seq uint32 // e.restSeq when queued: a group that woke and rested since is queued anew
}

// queueRestHeartbeat (noteQuiet) queues the heartbeats of a led group
// that just rested.
func (s *partitionShard) queueRestHeartbeat(e *partitionEntry) {
	e.restSeq++
	if s.restHeartbeatTicks == 0 {
		return
	}
	s.restHeartbeats = append(s.restHeartbeats, restHeartbeatDue{e: e, due: s.tickNo + s.restHeartbeatTicks, seq: e.restSeq})
}

// sendRestHeartbeats (each tick) has the first queued resting group
// whose heartbeat is due broadcast it, if the shard sent none in the last
// restHeartbeatSpacingTicks, and queues its next one. Groups that woke,
// were dropped or no longer lead leave the queue as they come up.
func (s *partitionShard) sendRestHeartbeats() {
	if s.tickNo < s.restHeartbeatNext {
		return
	}
	q := s.restHeartbeats
	i := 0
	for ; i < len(q) && q[i].due <= s.tickNo; i++ {
		d := q[i]
		if _, ok := s.groups[d.e]; !ok || !d.e.resting || d.e.restSeq != d.seq || !d.e.group.RestHeartbeat() {
			continue
		}
		s.touch(d.e) // its Ready carries the heartbeat; the group stays resting
		s.restHeartbeatNext = s.tickNo + restHeartbeatSpacingTicks
		d.due = s.tickNo + s.restHeartbeatTicks
		n := copy(q, q[i+1:])
		s.restHeartbeats = append(q[:n], d)
		return
	}
	n := copy(q, q[i:])
	s.restHeartbeats = q[:n]
}

// restHeartbeatHeld: m is a commit heartbeat of e's view from its
// primary, and e (a resting backup) holds everything it says committed:
// nothing to catch up on, no reason to wake.
func (s *partitionShard) restHeartbeatHeld(e *partitionEntry, m *consensus.Message) bool {
	g := e.group
	return m.Kind == consensus.MsgCommit && s.replicaCount > 0 && m.View == g.View() &&
		m.From == uint8(m.View%uint32(s.replicaCount)) && m.From != s.self &&
		g.Status() == consensus.StatusNormal && m.CommitMin == g.CommitMax() && g.Op() == g.CommitMax()
}
