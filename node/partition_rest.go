package node

import (
	"math"
	"slices"

	"github.com/lodestream/lodestream/consensus"
)

// Quiet partition groups rest (issue 8 point 8, cluster mode). A group
// ticks every 10 ms and its primary sends a commit heartbeat to every
// backup each commit_broadcast_interval, whatever it carries: with
// thousands of idle partitions that is most of a node's idle CPU. A group
// whose log has not moved for restAfter ticks, with nothing in flight, led
// by the metadata primary's node, stops ticking (its timers freeze, its
// primary sends only a heartbeat every 4 × heartbeat_timeout,
// partition_rest_heartbeat.go). The primary has then broadcast its final
// commit at least twice, and backups rest before their heartbeat timeout
// can fire (restAfter = 3 × commit_broadcast < heartbeat_timeout).
//
// A backup rests only once it heard from its view's primary in that view
// (a fresh or restarted replica may face a resting primary that sends
// nothing); until then it probes the primary every restAfter ticks
// (consensus ProbePrimary), which wakes it: its heartbeats then bring the
// backup up to date.
//
// Waking: any message for the group (a prepare, a view change, a probe)
// or a proposal wakes it. Failure detection of the node that leads the
// resting groups is the metadata group's (it never rests, and it is led by
// that same node): when the metadata group's view or status changes, every
// resting group wakes, and those whose primary's node is no longer
// connected start a view change at once (consensus SuspectPrimary).

// restProgress is what must stand still for a group to count as quiet.
type restProgress struct {
	view                     uint32
	status                   consensus.Status
	op, commitMin, commitMax uint64
}

func progressOf(g partitionGroup) restProgress {
	return restProgress{view: g.View(), status: g.Status(), op: g.Op(), commitMin: g.CommitMin(), commitMax: g.CommitMax()}
}

// noteQuiet (shard goroutine, after a group's tick) counts the ticks its
// log stood still and lets it rest once it may.
//
// elapsed is the ticks since the group last ran (quiet ticks are skipped,
// partition_ticks.go); schedule runs it again when its count reaches the
// next multiple of restAfterTicks.
func (s *partitionShard) noteQuiet(e *partitionEntry, elapsed uint64) {
	if s.restAfterTicks == 0 {
		return
	}
	now := progressOf(e.group)
	if now != e.lastProgress || e.inflight > 0 || len(e.backlog) > 0 || e.transfer != nil || e.fence.fenced() || e.writing {
		e.lastProgress, e.quietTicks = now, 0
		return
	}
	before := e.quietTicks
	e.quietTicks = uint32(min(uint64(e.quietTicks)+elapsed, math.MaxUint32))
	if primary := uint8(now.view % uint32(s.replicaCount)); primary != s.self && e.heardView != now.view+1 {
		if e.quietTicks/s.restAfterTicks != before/s.restAfterTicks && e.group.ProbePrimary() {
			s.touch(e)
		}
		return
	}
	if e.quietTicks >= s.restAfterTicks && s.mayRest(e, now) {
		if s.shrinkBeforeRest(e) { // partition_reserve.go
			return
		}
		e.resting = true
		s.awake.remove(e) // (the tick's loop runs backwards: allowed)
		// A resting group holds no WAL descriptor: the next write reopens
		// the file (a persisted write was synced already).
		if e.wal != nil {
			if err := e.wal.Close(); err != nil {
				s.log.Warn("close a resting partition's prepare WAL", "dir", e.dir, "err", err)
			}
		}
		if e.primary.Load() {
			s.restingLed++
			s.queueRestHeartbeat(e)
		}
	}
}

// mayRest: Normal, everything known committed and applied, led by the
// node the metadata group is led by (whose failure the metadata group
// detects).
func (s *partitionShard) mayRest(e *partitionEntry, p restProgress) bool {
	if p.status != consensus.StatusNormal || p.op != p.commitMin || p.commitMin != p.commitMax || e.appliedOp != p.op {
		return false
	}
	if s.alignTo == nil {
		return false
	}
	target, ok := s.alignTo()
	return ok && uint8(p.view%uint32(s.replicaCount)) == target
}

// heard (shard goroutine) notes a message from the group's primary in its
// current view: sent in that view, not only by the replica that leads it.
// A replica left in an old view whose primary's node leads the group again
// in a later one (view 0 and view 5 of five replicas) hears that node's
// heartbeats of the later view; counted, it rested in the old view for good
// instead of probing its way to the current one (metadata simulator seed
// 74876: a replica at op 0 while the others held op 10).
func (s *partitionShard) heard(e *partitionEntry, from uint8, view uint32) {
	if s.replicaCount == 0 {
		return
	}
	switch v := e.group.View(); {
	case view == v && from == uint8(v%uint32(s.replicaCount)):
		e.heardView = v + 1
	case view > v:
		// A later view exists (a resting primary's heartbeat found this
		// replica left behind, partition_rest_heartbeat.go): not heard
		// until its primary is, so the group probes (ProbePrimary asks
		// the later view's primary) instead of resting again.
		e.heardView = 0
	}
}

// wake makes a resting group tick again.
func (s *partitionShard) wake(e *partitionEntry) {
	if !e.resting {
		return
	}
	e.resting, e.quietTicks = false, 0
	if e.primary.Load() {
		s.restingLed--
	}
	if _, ok := s.groups[e]; ok {
		s.awake.add(e)
		s.startTicking(e) // a resting group's ticks were frozen: none owed
	}
}

// wakeAll (shard goroutine) wakes every resting group after the metadata
// group changed view or status; a group whose primary's node is gone, or
// was deposed by the metadata group (metadataViewChanged), starts a view
// change at once.
//
// Awake groups whose primary's node is gone suspect it too: a group that
// had not rested yet (a backup still probing, one that just moved) would
// otherwise wait for its own heartbeat timeout, one more timeout after
// the metadata group's (the tail of a 10,000-partition failover).
func (s *partitionShard) wakeAll() {
	deposed := int32(-1)
	if s.deposed != nil {
		deposed = s.deposed.Load()
	}
	// In key order, not the map's: the frames the wake sends leave in a
	// stable order (a simulator's seed replays them).
	groups := make([]*partitionEntry, 0, len(s.groups))
	for e := range s.groups {
		groups = append(groups, e)
	}
	slices.SortFunc(groups, func(a, b *partitionEntry) int { return a.key.compare(b.key) })
	for _, e := range groups {
		if e.resting {
			s.wake(e)
		} else {
			s.catchUp(e)
		}
		primary := uint8(e.group.View() % uint32(s.replicaCount))
		gone := (s.connected != nil && !s.connected(primary)) || (deposed >= 0 && uint8(deposed) == primary)
		if primary != s.self && gone && e.group.SuspectPrimary() {
			s.touch(e)
		}
		s.schedule(e)
	}
}

// metadataViewChanged (driver goroutine) wakes every shard's resting
// groups after the metadata group changed view or status, and names the
// node the change deposed: the primary of the last view the metadata
// group was Normal in, once a later view with another primary started. A
// quorum started that view change, so partition groups led by the deposed
// node suspect it at once, connected or not (a hung or cut-off node keeps
// its connections); otherwise they would wait for their own heartbeat
// timeout after the metadata group's (issue 8 point 8).
func (p *partitionPlane) metadataViewChanged(old, cur groupStatus) {
	n := uint32(p.topo.count)
	if n == 0 {
		return
	}
	if old.status == consensus.StatusNormal {
		p.lastNormalView, p.sawNormal = old.view, true
	}
	deposed := int32(-1)
	if p.sawNormal && cur.view > p.lastNormalView && cur.view%n != p.lastNormalView%n {
		deposed = int32(p.lastNormalView % n)
	}
	p.deposed.Store(deposed)
	p.wakePartitions()
}

// wakePartitions asks every shard to wake its resting groups (the
// metadata group changed view or status); non-blocking.
func (p *partitionPlane) wakePartitions() {
	for _, s := range p.shards {
		select {
		case s.wakeups <- struct{}{}:
		default: // one is pending already
		}
	}
}

// restWhenQuiet lets a single node's groups rest after restAfter quiet
// ticks: one replica has no backup to heartbeat and no primary to follow
// (it is its own, replica 0), so a quiet group only costs ticks.
func (p *partitionPlane) restWhenQuiet(restAfter uint32) {
	for _, sh := range p.shards {
		sh.do(func() {
			sh.alignTo = func() (uint8, bool) { return 0, true }
			sh.restAfterTicks = restAfter
		})
	}
}
