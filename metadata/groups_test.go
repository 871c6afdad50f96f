package metadata

import "testing"

func TestConsumerGroupAssignmentAndGenerations(t *testing.T) {
	f := newFixture(t)
	s0, t0, g0 := ByID(0), ByID(0), ByName("g1")
	gen := func() uint64 {
		g, code := f.s.GetConsumerGroup(s0, t0, g0)
		if code != CodeOK {
			t.Fatalf("get group: %d", code)
		}
		return g.Generation
	}
	assertBalanced := func(wantMembers int) ConsumerGroup {
		t.Helper()
		g, _ := f.s.GetConsumerGroup(s0, t0, g0)
		if len(g.Members) != wantMembers {
			t.Fatalf("members %d, want %d", len(g.Members), wantMembers)
		}
		seen := map[uint32]bool{}
		minN, maxN := int(^uint(0)>>1), 0
		for i, m := range g.Members {
			if i > 0 && m.ID <= g.Members[i-1].ID {
				t.Fatalf("members not sorted by id: %+v", g.Members)
			}
			minN, maxN = min(minN, len(m.Partitions)), max(maxN, len(m.Partitions))
			for _, p := range m.Partitions {
				if seen[p] {
					t.Fatalf("partition %d assigned twice", p)
				}
				seen[p] = true
			}
		}
		if wantMembers > 0 && (len(seen) != int(g.PartitionsCount) || maxN-minN > 1) {
			t.Fatalf("unbalanced or incomplete assignment: %+v (partitions %d)", g.Members, g.PartitionsCount)
		}
		return g
	}

	g := gen()
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA})
	if gen() != g+1 {
		t.Fatal("join did not bump the generation")
	}
	assertBalanced(1)
	// Re-join by the same client is idempotent: no new member, no bump.
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA})
	if gen() != g+1 {
		t.Fatal("idempotent re-join bumped the generation")
	}
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientB})
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: ByID(0), Client: clientC})
	grp := assertBalanced(3)
	// Round-robin by member id: member i owns partition i.
	for i, m := range grp.Members {
		if len(m.Partitions) != 1 || m.Partitions[0] != uint32(i) {
			t.Fatalf("member %d partitions %v", i, m.Partitions)
		}
	}
	if gen, parts, code := f.s.Assignment(s0, t0, g0, clientB); code != CodeOK || len(parts) != 1 || parts[0] != 1 || gen != g+3 {
		t.Fatalf("assignment of B: gen %d parts %v code %d", gen, parts, code)
	}

	f.mustOK(RootUserID, CreatePartitions{Stream: s0, Topic: t0, Count: 4})
	if gen() != g+4 {
		t.Fatal("create partitions did not bump the generation")
	}
	assertBalanced(3)
	f.mustOK(RootUserID, DeletePartitions{Stream: s0, Topic: t0, Count: 2})
	if gen() != g+5 {
		t.Fatal("delete partitions did not bump the generation")
	}
	assertBalanced(3)

	f.mustOK(RootUserID, LeaveConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA})
	if gen() != g+6 {
		t.Fatal("leave did not bump the generation")
	}
	assertBalanced(2)
	if _, _, code := f.s.Assignment(s0, t0, g0, clientA); code != CodeGroupMemberNotFound {
		t.Fatalf("left member assignment code %d", code)
	}
	// The freed member id 0 is reused by the next joiner.
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA})
	if grp := assertBalanced(3); grp.Members[0].ClientID != clientA {
		t.Fatalf("member 0 is %+v, want client A", grp.Members[0])
	}

	// A second group on another topic; RemoveConsumerGroupMember drops the
	// client everywhere and bumps each affected group.
	f.mustOK(RootUserID, withTopicName(defaultTopic(), "t2"))
	f.mustOK(RootUserID, CreateConsumerGroup{Stream: s0, Topic: ByName("t2"), Name: "g2"})
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: s0, Topic: ByName("t2"), Group: ByName("g2"), Client: clientB})
	if ms := f.s.ClientMemberships(clientB); len(ms) != 2 {
		t.Fatalf("memberships of B: %+v", ms)
	}
	before := gen()
	f.mustOK(RootUserID, RemoveConsumerGroupMember{Client: clientB})
	if ms := f.s.ClientMemberships(clientB); len(ms) != 0 {
		t.Fatalf("memberships after remove: %+v", ms)
	}
	if gen() != before+1 {
		t.Fatal("remove member did not bump the generation")
	}
	assertBalanced(2)
	// Removing an unknown client is a no-op success.
	f.mustOK(RootUserID, RemoveConsumerGroupMember{Client: ClientID{Lo: 99}})

	// Group ids are never reused within a topic.
	f.mustOK(RootUserID, DeleteConsumerGroup{Stream: s0, Topic: t0, Group: g0})
	res := f.mustOK(RootUserID, CreateConsumerGroup{Stream: s0, Topic: t0, Name: "g1"})
	if res.Group.ID != 1 || len(res.Group.Members) != 0 || res.Group.PartitionsCount != 5 {
		t.Fatalf("recreated group %+v", res.Group)
	}
}

func TestAssignmentMoreMembersThanPartitions(t *testing.T) {
	f := newFixture(t)
	for i := uint64(1); i <= 5; i++ {
		f.mustOK(RootUserID, JoinConsumerGroup{Stream: ByID(0), Topic: ByID(0), Group: ByID(0), Client: ClientID{Lo: i}})
	}
	g, _ := f.s.GetConsumerGroup(ByID(0), ByID(0), ByID(0))
	idle := 0
	for _, m := range g.Members {
		if len(m.Partitions) == 0 {
			idle++
		}
	}
	if idle != 2 {
		t.Fatalf("idle members %d, want 2 (3 partitions, 5 members)", idle)
	}
}

// TestMembersRecordNodeAndSession: a membership records the node and the
// session it was joined through, survives a snapshot round trip, and a
// version-1 snapshot (no such fields) still restores with node 0.
func TestMembersRecordNodeAndSession(t *testing.T) {
	f := newFixture(t)
	f.mustOK(RootUserID, CreateStream{Name: "s"})
	topic := withPartitions(withTopicName(defaultTopic(), "t"), 2)
	topic.Stream = ByName("s")
	f.mustOK(RootUserID, topic)
	f.mustOK(RootUserID, CreateConsumerGroup{Stream: ByName("s"), Topic: ByName("t"), Name: "g"})
	f.op++
	res := f.s.Apply(ApplyContext{Op: f.op, Timestamp: f.nowUs + 1000, UserID: RootUserID, Node: 2, Session: 77},
		JoinConsumerGroup{Stream: ByName("s"), Topic: ByName("t"), Group: ByName("g"), Client: clientA})
	if res.Code != CodeOK {
		t.Fatalf("join: %d", res.Code)
	}
	if got := f.s.MembersBoundAt(2); len(got) != 1 || got[0].Client != clientA || got[0].Session != 77 {
		t.Fatalf("MembersBoundAt(2) = %+v", got)
	}
	if got := f.s.MembersBoundAt(0); len(got) != 0 {
		t.Fatalf("MembersBoundAt(0) = %+v", got)
	}
	restored, err := Restore(f.s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.MembersBoundAt(2); len(got) != 1 || got[0].Session != 77 {
		t.Fatalf("after restore: %+v", got)
	}
	v1, err := Restore(f.s.snapshotVersion(1))
	if err != nil {
		t.Fatalf("version-1 snapshot: %v", err)
	}
	if got := v1.MembersBoundAt(0); len(got) != 1 || got[0].Client != clientA {
		t.Fatalf("version-1 member: %+v", got)
	}
}

// TestSessionBindings: sessions record the node that registered them,
// a re-registration rebinds, a logout forgets, the bindings survive a
// snapshot round trip, and the table is bounded by evicting the oldest.
func TestSessionBindings(t *testing.T) {
	s := NewState()
	a, b := ClientID{Lo: 1}, ClientID{Lo: 2}
	s.BindSession(a, 1, 10)
	s.BindSession(b, 2, 11)
	s.BindSession(a, 2, 12) // registered again through node 2
	if got := s.SessionsBoundAt(1); len(got) != 0 {
		t.Fatalf("node 1 still holds %+v", got)
	}
	if got := s.SessionsBoundAt(2); len(got) != 2 || got[0].Client != a || got[0].Session != 12 {
		t.Fatalf("node 2 holds %+v", got)
	}
	restored, err := Restore(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.SessionsBoundAt(2); len(got) != 2 {
		t.Fatalf("after restore: %+v", got)
	}
	s.UnbindSession(b)
	if got := s.SessionsBoundAt(2); len(got) != 1 {
		t.Fatalf("after logout: %+v", got)
	}
	full := NewState()
	for i := 0; i < SessionsMax; i++ {
		full.BindSession(ClientID{Lo: uint64(i) + 10}, 0, uint64(i)+100)
	}
	full.BindSession(ClientID{Lo: 5}, 0, 1<<40)
	if got := len(full.SessionsBoundAt(0)); got != SessionsMax {
		t.Fatalf("bindings %d, want the bound %d", got, SessionsMax)
	}
	for _, m := range full.SessionsBoundAt(0) {
		if m.Session == 100 {
			t.Fatal("the oldest binding was not the one evicted")
		}
	}
}

// TestPartitionsRecordTheCreatingNode: partitions remember the replica that
// proposed their creation (their consensus group starts led by it), across
// a snapshot round trip; a version-2 snapshot restores them on node 0.
func TestPartitionsRecordTheCreatingNode(t *testing.T) {
	f := newFixture(t)
	f.op++
	if res := f.s.Apply(ApplyContext{Op: f.op, Timestamp: 5_000_000, UserID: RootUserID, Node: 2},
		f.topic("t2", 2)); res.Code != CodeOK {
		t.Fatalf("create topic on node 2: code %d", res.Code)
	}
	f.op++
	if res := f.s.Apply(ApplyContext{Op: f.op, Timestamp: 6_000_000, UserID: RootUserID, Node: 1},
		CreatePartitions{Stream: ByID(0), Topic: ByName("t2"), Count: 1}); res.Code != CodeOK {
		t.Fatalf("create partitions on node 1: code %d", res.Code)
	}
	check := func(s *State, want []uint8) {
		t.Helper()
		topic, code := s.GetTopic(ByID(0), ByName("t2"))
		if code != CodeOK || len(topic.Partitions) != len(want) {
			t.Fatalf("topic t2: code %d, %d partitions", code, len(topic.Partitions))
		}
		for i, p := range topic.Partitions {
			if p.CreatedOnNode != want[i] {
				t.Fatalf("partition %d created on node %d, want %d", i, p.CreatedOnNode, want[i])
			}
		}
	}
	check(f.s, []uint8{2, 2, 1})
	restored, err := Restore(f.s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	check(restored, []uint8{2, 2, 1})
	v2, err := Restore(f.s.snapshotVersion(2))
	if err != nil {
		t.Fatalf("version-2 snapshot: %v", err)
	}
	check(v2, []uint8{0, 0, 0})
}
