package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// restTestGroup is a group reduced to what resting reads; anything else
// panics (the embedded nil group).
type restTestGroup struct {
	drivenGroup
	view          uint32
	op, commit    uint64
	primary       bool
	restHeartbeat int
}

func (g *restTestGroup) View() uint32             { return g.view }
func (g *restTestGroup) Status() consensus.Status { return consensus.StatusNormal }
func (g *restTestGroup) Op() uint64               { return g.op }
func (g *restTestGroup) CommitMax() uint64        { return g.commit }
func (g *restTestGroup) IsPrimary() bool          { return g.primary }
func (g *restTestGroup) RestHeartbeat() bool {
	if g.primary {
		g.restHeartbeat++
	}
	return g.primary
}

func restTestShard() *partitionShard {
	s := newPartitionShard(slog.New(slog.NewTextHandler(io.Discard, nil)), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 16}, nil)
	s.replicaCount = 3
	return s
}

// TestRestingPrimariesHeartbeatEveryIntervalSpacedPerShard: the groups a
// replica leads heartbeat while they rest, each once per round, no
// earlier than restHeartbeatTicks after it rested, and the shard sends at
// most one every restHeartbeatSpacingTicks (its idle cost is bounded
// whatever the number of groups); a group that woke and rested again is
// not heartbeated from its old place in the queue, and groups that woke,
// were dropped or lead no more leave the queue.
func TestRestingPrimariesHeartbeatEveryIntervalSpacedPerShard(t *testing.T) {
	s := restTestShard()
	s.restHeartbeatTicks = 100
	const groups = 20
	var entries []*partitionEntry
	for range groups {
		e := &partitionEntry{group: &restTestGroup{primary: true}, shard: s, resting: true}
		s.groups[e] = struct{}{}
		s.queueRestHeartbeat(e)
		entries = append(entries, e)
	}
	beats := func() int {
		n := 0
		for _, e := range entries {
			n += e.group.(*restTestGroup).restHeartbeat
		}
		return n
	}
	woke := entries[groups-1]
	lastSent := uint64(0)
	for tick := uint64(1); tick < 100+groups*restHeartbeatSpacingTicks; tick++ {
		before := beats()
		s.tickNo = tick
		s.sendRestHeartbeats()
		if sent := beats() - before; sent > 0 {
			if tick < 100 {
				t.Fatalf("a heartbeat at tick %d, before the interval", tick)
			}
			if lastSent != 0 && tick-lastSent < restHeartbeatSpacingTicks {
				t.Fatalf("heartbeats at ticks %d and %d: closer than %d ticks", lastSent, tick, restHeartbeatSpacingTicks)
			}
			lastSent = tick
		}
		if tick == 50 { // woke (partition_rest.go wake) and rested again at once
			woke.resting = false
			woke.resting = true
			s.queueRestHeartbeat(woke)
		}
	}
	for i, e := range entries {
		if got := e.group.(*restTestGroup).restHeartbeat; got != 1 {
			t.Fatalf("group %d: %d heartbeats in the first round, want 1 (the woken group's old place is dropped)", i, got)
		}
	}
	if len(s.restHeartbeats) != groups {
		t.Fatalf("%d queued heartbeats for %d resting groups", len(s.restHeartbeats), groups)
	}
	entries[0].resting = false
	delete(s.groups, entries[1])
	entries[2].group.(*restTestGroup).primary = false
	for range 4 * groups * restHeartbeatSpacingTicks {
		s.tickNo++
		s.sendRestHeartbeats()
	}
	if len(s.restHeartbeats) != groups-3 {
		t.Fatalf("%d queued heartbeats, want %d", len(s.restHeartbeats), groups-3)
	}
}

// TestARestingBackupWakesOnlyForAHeartbeatItDoesNotHold: a commit
// heartbeat of its view's primary that says what the resting backup holds
// leaves it resting; a later commit, a later view or another sender
// wakes it, and a message of a later view makes it probe again instead of
// resting (heard).
func TestARestingBackupWakesOnlyForAHeartbeatItDoesNotHold(t *testing.T) {
	s := restTestShard()
	s.self = 2
	g := &restTestGroup{view: 4, op: 7, commit: 7}
	e := &partitionEntry{group: g, shard: s, resting: true, heardView: 5}
	held := consensus.Message{Kind: consensus.MsgCommit, From: 1, View: 4, CommitMin: 7}
	if !s.restHeartbeatHeld(e, &held) {
		t.Fatal("a heartbeat the backup holds would wake it")
	}
	for name, m := range map[string]consensus.Message{
		"a later commit":  {Kind: consensus.MsgCommit, From: 1, View: 4, CommitMin: 8},
		"a later view":    {Kind: consensus.MsgCommit, From: 1, View: 7, CommitMin: 7},
		"another sender":  {Kind: consensus.MsgCommit, From: 0, View: 4, CommitMin: 7},
		"another message": {Kind: consensus.MsgStartViewChange, From: 1, View: 4},
	} {
		if s.restHeartbeatHeld(e, &m) {
			t.Fatalf("%s counted as held: the backup would not wake", name)
		}
	}
	s.heard(e, 1, 7)
	if e.heardView != 0 {
		t.Fatalf("a message of a later view left heardView %d: the backup would rest again without probing", e.heardView)
	}
}
