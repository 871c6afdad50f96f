package consensus

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuorumTable(t *testing.T) {
	// Seeds (durability.mdx) and spec §3.2.
	want := []struct{ n, repl, vc int }{{1, 1, 1}, {2, 2, 2}, {3, 2, 2}, {4, 2, 3}, {5, 3, 3}, {6, 3, 4}, {7, 3, 5}}
	for _, w := range want {
		if ReplicationQuorum(w.n) != w.repl || ViewChangeQuorum(w.n) != w.vc {
			t.Errorf("n=%d: repl %d vc %d, want %d %d", w.n, ReplicationQuorum(w.n), ViewChangeQuorum(w.n), w.repl, w.vc)
		}
		if w.n > 1 && ReplicationQuorum(w.n)+ViewChangeQuorum(w.n) <= w.n {
			t.Errorf("n=%d: quorums do not intersect", w.n)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"zero replicas", func(c *Config) { c.ReplicaCount = 0 }, "replica_count"},
		{"33 replicas", func(c *Config) { c.ReplicaCount = 33 }, "replica_count"},
		{"id out of range", func(c *Config) { c.ReplicaID = 3 }, "replica_id"},
		{"zero timeout", func(c *Config) { c.PrepareRetransmitTicks = 0 }, "prepare_retransmit_ticks"},
		{"heartbeat too short", func(c *Config) { c.HeartbeatTimeoutTicks = 50 }, "heartbeat_timeout_ticks"},
		{"depth 0", func(c *Config) { c.PrepareQueueDepth = 0 }, "prepare_queue_depth"},
		{"depth 128", func(c *Config) { c.PrepareQueueDepth = 128 }, "prepare_queue_depth"},
		{"journal too small", func(c *Config) { c.JournalSlots = 10 }, "journal_slots"},
		{"probe attempts", func(c *Config) { c.ViewProbeAttemptsMax = 0 }, "view_probe_attempts_max"},
		{"repair chunk", func(c *Config) { c.RepairChunkMax = 2000 }, "repair_chunk_max"},
		{"client table 1", func(c *Config) { c.ClientTableMax = 1 }, "client_table_max"},
		{"testing quorum", func(c *Config) { c.TestingReplicationQuorum = 4 }, "quorum"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig(0, 3)
		tc.tweak(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(DefaultConfig(2, 3)); err != nil {
		t.Fatalf("default config rejected: %v", err)
	}
}

// TestHeartbeatReplayIgnored: within a view, a Commit whose counter is not
// above the last accepted one is ignored (spec §3.4 step 6).
func TestHeartbeatReplayIgnored(t *testing.T) {
	r, err := New(DefaultConfig(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	r.Step(Message{Kind: MsgCommit, From: 0, To: 1, View: 0, CommitMin: 0, HeartbeatCounter: 5})
	r.Step(Message{Kind: MsgCommit, From: 0, To: 1, View: 0, CommitMin: 9, HeartbeatCounter: 5})
	if r.CommitMax() != 0 {
		t.Fatalf("replayed heartbeat accepted: commit_max %d", r.CommitMax())
	}
	r.Step(Message{Kind: MsgCommit, From: 0, To: 1, View: 0, CommitMin: 9, HeartbeatCounter: 6})
	if r.CommitMax() != 9 {
		t.Fatalf("fresh heartbeat rejected: commit_max %d", r.CommitMax())
	}
	r.Step(Message{Kind: MsgCommit, From: 2, To: 1, View: 0, CommitMin: 20, HeartbeatCounter: 7})
	if r.CommitMax() != 9 {
		t.Fatalf("heartbeat from a non-primary accepted")
	}
}

// TestPreflightNotCaughtUp: a primary whose commit_min lags commit_max
// answers metadata requests 57 (spec §3.11 preflight step 2).
func TestPreflightNotCaughtUp(t *testing.T) {
	cfg := DefaultConfig(0, 1)
	cfg.ClientTableMax = 4
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.commitMax = r.commitMin + 1 // as after a view change, before the commit walk
	r.Propose(Request{Client: Uint128{Lo: 1}, Operation: OperationRegister, Tag: 77})
	rd := r.Ready()
	if len(rd.Replies) != 1 || rd.Replies[0].Kind != ReplyNotCommitted || rd.Replies[0].Tag != 77 {
		t.Fatalf("replies %+v, want one NotCommitted", rd.Replies)
	}
}

func TestClientTableEvictionAndSnapshot(t *testing.T) {
	tab := newClientTable(2)
	tab.register(Uint128{Lo: 1}, 10, 1)
	tab.register(Uint128{Lo: 2}, 20, 2)
	tab.record(&PrepareHeader{Client: Uint128{Lo: 1}, Session: 1, Request: 1, Op: 3})
	tab.register(Uint128{Lo: 3}, 30, 4) // evicts client 2 (latest reply op 2 < 3)
	if tab.lookup(Uint128{Lo: 2}) != nil || tab.lookup(Uint128{Lo: 1}) == nil || tab.lookup(Uint128{Lo: 3}) == nil {
		t.Fatal("eviction did not pick the entry with the oldest latest reply")
	}
	// Ties: lowest slot.
	tab2 := newClientTable(2)
	tab2.register(Uint128{Lo: 5}, 0, 7)
	tab2.register(Uint128{Lo: 6}, 0, 7)
	tab2.register(Uint128{Lo: 8}, 0, 9)
	if tab2.lookup(Uint128{Lo: 5}) != nil || tab2.lookup(Uint128{Lo: 6}) == nil {
		t.Fatal("tie did not evict the lowest slot")
	}

	cfg := DefaultConfig(0, 1)
	cfg.ClientTableMax = 4
	r, _ := New(cfg)
	r.clients = tab
	for req := uint64(2); req <= 8; req++ {
		tab.record(&PrepareHeader{Client: Uint128{Lo: 1}, Session: 1, Request: req, ReqSum: req, Op: 10 + req})
	}
	tab.lookup(Uint128{Lo: 1}).findReply(8).body = []byte("eight")
	snap := r.ClientTableSnapshot()
	r2, _ := New(cfg)
	if err := r2.RestoreClientTable(snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r2.ClientTableSnapshot(), snap) {
		t.Fatal("snapshot does not round-trip")
	}
	e := r2.clients.lookup(Uint128{Lo: 1})
	if e == nil || e.watermark != 8 || e.findReply(8) == nil || string(e.findReply(8).body) != "eight" || e.findReply(3) != nil {
		t.Fatalf("restored entry wrong: %+v", e)
	}
	if err := r2.RestoreClientTable(snap[:len(snap)-3]); err == nil {
		t.Fatal("truncated snapshot accepted")
	}
	if err := r2.RestoreClientTable(append(append([]byte(nil), snap...), 0)); err == nil {
		t.Fatal("snapshot with trailing bytes accepted")
	}
}

func TestRestartRejectsBadInput(t *testing.T) {
	cfg := DefaultConfig(0, 3)
	cfg.Incarnation = Uint128{Lo: 1}
	if _, err := Restart(cfg, Restored{Superblock: &VsrState{View: 1, LogView: 2}}); err == nil ||
		!strings.Contains(err.Error(), "log_view") {
		t.Fatalf("log_view > view accepted: %v", err)
	}
	bad := Prepare{Header: PrepareHeader{Op: 1, Checksum: 5}}
	if _, err := Restart(cfg, Restored{Entries: []Prepare{bad}}); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt entry accepted: %v", err)
	}
	if _, err := Restart(cfg, Restored{Snapshot: &Snapshot{Op: 3, Checksum: 1, Data: []byte("x")}}); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
}

func TestBackoffBounded(t *testing.T) {
	rng := newPRNG(1)
	for attempts := uint32(0); attempts < 10; attempts++ {
		for k := 0; k < 100; k++ {
			b := uint64(25) << min(attempts, 4)
			got := backoffTicks(&rng, 25, attempts)
			if got < b || got > 2*b {
				t.Fatalf("attempt %d: wait %d outside [%d, %d]", attempts, got, b, 2*b)
			}
		}
	}
}

func TestRestartRejectsTooManyEntries(t *testing.T) {
	cfg := DefaultConfig(0, 1)
	cfg.PrepareQueueDepth = 2
	cfg.JournalSlots = 4
	var entries []Prepare
	parent := uint64(0)
	for op := uint64(1); op <= 5; op++ {
		h := PrepareHeader{Op: op, Parent: parent}
		h.Checksum = PrepareChecksum(&h, nil)
		parent = h.Checksum
		entries = append(entries, Prepare{Header: h})
	}
	if _, err := Restart(cfg, Restored{Entries: entries[:4]}); err != nil {
		t.Fatalf("4 entries in 4 slots rejected: %v", err)
	}
	if _, err := Restart(cfg, Restored{Entries: entries}); err == nil {
		t.Fatal("5 entries in 4 slots accepted")
	}
}

// A group created with InitialView starts led by view mod n on every
// replica, commits there, and a later view change moves on from it.
func TestInitialViewPicksTheFirstPrimary(t *testing.T) {
	h := newHarness(3, func(c *Config) { c.InitialView = 4 }, t.Fatalf)
	for i, r := range h.replicas {
		if r.View() != 4 || r.LogView() != 4 || r.Status() != StatusNormal {
			t.Fatalf("replica %d: view %d log_view %d status %v, want Normal in view 4", i, r.View(), r.LogView(), r.Status())
		}
		if r.IsPrimary() != (i == 1) {
			t.Fatalf("replica %d: IsPrimary %v (view 4 of 3 replicas is led by replica 1)", i, r.IsPrimary())
		}
	}
	backupTag := h.propose(0, Request{Operation: 9, Body: []byte("x")})
	if rep := h.replies[backupTag]; rep.Kind != ReplyNotAccepted {
		t.Fatalf("a proposal on a backup of view 4: %+v, want NotAccepted", rep)
	}
	tag := h.propose(1, Request{Operation: 9, Body: []byte("y")})
	h.deliverAll()
	if rep, ok := h.replies[tag]; !ok || rep.Kind != ReplyCommitted || rep.Op != 1 {
		t.Fatalf("a proposal on the primary of view 4: %+v (found %v), want committed op 1", rep, ok)
	}
	// A fresh Restart (nothing durable) starts in the same view.
	r, err := Restart(h.cfgs[2], Restored{})
	if err != nil || r.View() != 4 || r.Status() != StatusNormal {
		t.Fatalf("fresh restart: view %d status %v err %v", r.View(), r.Status(), err)
	}
}

// HandOver: the primary of view 0 hands the group to replica 2. It stops
// being primary at once (its in-flight proposal answers NotCommitted), the
// group moves to view 2 (the first view replica 2 leads), and the new
// primary holds and commits on top of everything committed before.
func TestHandOverIsAnOrderlyViewChange(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	first := h.propose(0, Request{Operation: 9, Body: []byte("a")})
	h.deliverAll()
	if rep := h.replies[first]; rep.Kind != ReplyCommitted {
		t.Fatalf("before the hand-over: %+v", rep)
	}
	if h.replicas[1].HandOver(2) || h.replicas[0].HandOver(0) || h.replicas[0].HandOver(3) {
		t.Fatal("a backup, a hand-over to itself or to a replica outside the group was accepted")
	}
	inflight := h.propose(0, Request{Operation: 9, Body: []byte("b")})
	if !h.replicas[0].HandOver(2) {
		t.Fatal("the primary refused to hand over")
	}
	h.drain(0)
	if h.replicas[0].IsPrimary() {
		t.Fatal("the old primary is still primary after handing over")
	}
	if rep := h.replies[inflight]; rep.Kind != ReplyNotCommitted {
		t.Fatalf("in-flight proposal at the hand-over: %+v, want NotCommitted", rep)
	}
	h.deliverAll()
	for i, r := range h.replicas {
		if r.View() != 2 || r.Status() != StatusNormal || r.IsPrimary() != (i == 2) {
			t.Fatalf("replica %d: view %d status %v primary %v, want Normal in view 2 led by replica 2", i, r.View(), r.Status(), r.IsPrimary())
		}
	}
	next := h.propose(2, Request{Operation: 9, Body: []byte("c")})
	h.deliverAll()
	if rep := h.replies[next]; rep.Kind != ReplyCommitted || rep.Op < 2 {
		t.Fatalf("the new primary's first proposal: %+v", rep)
	}
	h.checkAppliedAgree()
}

// SuspectPrimary: a backup told its primary's node is gone starts the next
// view at once, as its heartbeat timeout would; the primary refuses.
func TestSuspectPrimaryStartsTheNextView(t *testing.T) {
	h := newHarness(3, nil, t.Fatalf)
	if h.replicas[0].SuspectPrimary() {
		t.Fatal("the primary suspected itself")
	}
	if !h.replicas[1].SuspectPrimary() {
		t.Fatal("a Normal backup refused")
	}
	h.drain(1)
	if h.replicas[1].Status() != StatusViewChange || h.replicas[1].View() != 1 {
		t.Fatalf("after SuspectPrimary: status %v view %d, want a view change to 1", h.replicas[1].Status(), h.replicas[1].View())
	}
	h.crash(0)
	h.deliverAll()
	for _, i := range []int{1, 2} {
		if r := h.replicas[i]; r.View() != 1 || r.Status() != StatusNormal {
			t.Fatalf("replica %d: view %d status %v, want Normal in view 1", i, r.View(), r.Status())
		}
	}
}

// TestStorageLostNeverFallsBackToAnElection: a restarted replica with
// recovered state falls back to an election when its probes go
// unanswered; one whose storage was lost never does (it may have
// acknowledged prepares it no longer holds), it keeps probing.
func TestStorageLostNeverFallsBackToAnElection(t *testing.T) {
	for _, lost := range []bool{false, true} {
		cfg := DefaultConfig(1, 3)
		r, err := Restart(cfg, Restored{Superblock: &VsrState{}, StorageLost: lost})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status() != StatusRecovering {
			t.Fatalf("lost=%v: status %v after restart, want recovering", lost, r.Status())
		}
		probes, elections := 0, 0
		ticks := int(cfg.RequestStartViewTicks) * int(cfg.ViewProbeAttemptsMax) * 4
		for i := 0; i < ticks; i++ {
			r.Tick()
			rd := r.Ready()
			for _, m := range rd.Messages {
				switch m.Kind {
				case MsgRequestStartView:
					probes++
				case MsgStartViewChange, MsgDoViewChange:
					elections++
				}
			}
			r.Advance(rd)
		}
		switch {
		case lost && (elections > 0 || r.Status() != StatusRecovering):
			t.Fatalf("storage lost: %d election messages, status %v; want none, recovering", elections, r.Status())
		case lost && probes < 4*int(cfg.ViewProbeAttemptsMax)-1:
			t.Fatalf("storage lost: %d probes over %d ticks, want it to keep probing", probes, ticks)
		case !lost && elections == 0:
			t.Fatalf("recovered state: no election after %d unanswered probes", cfg.ViewProbeAttemptsMax)
		}
	}
}
