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

// TestRestingPrimariesHeartbeatEveryIntervalWithABoundPerTick: the groups
// a replica leads heartbeat once per restHeartbeatTicks while they rest,
// at most restHeartbeatsPerTickMax in one tick (the rest the next tick);
// a group that woke (and one that rested again since) is not heartbeated
// from its old place in the queue.
func TestRestingPrimariesHeartbeatEveryIntervalWithABoundPerTick(t *testing.T) {
	s := restTestShard()
	s.restHeartbeatTicks = 10
	groups := restHeartbeatsPerTickMax + 10
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
	for tick := 1; tick <= 41; tick++ {
		before := beats()
		s.tickNo++
		s.sendRestHeartbeats()
		sent := beats() - before
		if sent > restHeartbeatsPerTickMax {
			t.Fatalf("tick %d: %d heartbeats, over the bound %d", tick, sent, restHeartbeatsPerTickMax)
		}
		switch tick {
		case 9:
			if sent := beats(); sent != 0 {
				t.Fatalf("%d heartbeats before the interval", sent)
			}
		case 11:
			if sent := beats(); sent != groups {
				t.Fatalf("%d heartbeats by the tick after the interval, want one per group (%d)", sent, groups)
			}
			woke.resting = false // woke (partition_rest.go wake); rests again at once:
			woke.resting = true
			s.queueRestHeartbeat(woke)
		}
	}
	for i, e := range entries {
		got := e.group.(*restTestGroup).restHeartbeat
		// Ticks 10/11, 20/21, 30/31, 40/41; the woken group's old place in
		// the queue is dropped (else 7: twice per interval after tick 11).
		if want := 4; got != want {
			t.Fatalf("group %d: %d heartbeats in 41 ticks, want %d", i, got, want)
		}
	}
	if len(s.restHeartbeats) != groups {
		t.Fatalf("%d queued heartbeats for %d resting groups", len(s.restHeartbeats), groups)
	}
	// Groups that woke, were dropped or lead no more leave the queue.
	entries[0].resting = false
	delete(s.groups, entries[1])
	entries[2].group.(*restTestGroup).primary = false
	for range 20 {
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
