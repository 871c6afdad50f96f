package metadata

import "sort"

// Partitions and consumer groups.

func (t *topicState) addPartitions(count uint32, ctx ApplyContext, revision uint64) {
	for i := uint32(0); i < count; i++ {
		t.partitions = append(t.partitions, Partition{
			ID: uint32(len(t.partitions)), CreatedAt: ctx.Timestamp, CreatedRevision: revision,
			CreatedOnNode: ctx.Node,
		})
	}
}

// rebalanceAll reassigns every group after the partition set changed.
func (t *topicState) rebalanceAll() {
	for _, g := range t.groups {
		g.rebalance(uint32(len(t.partitions)))
	}
}

// rebalance deals partitions 0..n-1 round-robin over the members sorted by
// member id and bumps the generation, so clients re-sync.
func (g *groupState) rebalance(partitionsCount uint32) {
	g.generation++
	for i := range g.members {
		g.members[i].Partitions = nil
	}
	if len(g.members) == 0 {
		return
	}
	for p := uint32(0); p < partitionsCount; p++ {
		m := &g.members[int(p)%len(g.members)]
		m.Partitions = append(m.Partitions, p)
	}
}

func (s *State) applyCreatePartitions(ctx ApplyContext, c CreatePartitions) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	if c.Count < 1 || c.Count > PartitionsPerOpMax {
		return fail(CodeInvalidPartitions)
	}
	if len(t.partitions)+int(c.Count) > PartitionsPerTopicMax {
		return fail(CodePartitionIDExhausted)
	}
	if t.options.PreallocateSegments &&
		t.options.SegmentSize*uint64(len(t.partitions)+int(c.Count)) > PreallocatedBytesPerTopicMax {
		return fail(CodeInvalidPartitions)
	}
	t.addPartitions(c.Count, ctx, s.revision+1)
	t.rebalanceAll()
	return Result{}
}

func (s *State) applyDeletePartitions(ctx ApplyContext, c DeletePartitions) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	if c.Count < 1 || c.Count > PartitionsPerOpMax || int(c.Count) > len(t.partitions) {
		return fail(CodeInvalidPartitions)
	}
	t.partitions = t.partitions[:len(t.partitions)-int(c.Count)]
	t.rebalanceAll()
	return Result{}
}

func (s *State) applyTruncatePartition(ctx ApplyContext, c TruncatePartition) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	if int(c.PartitionID) >= len(t.partitions) {
		return fail(CodePartitionNotFound)
	}
	p := &t.partitions[c.PartitionID]
	if c.UpToOffset > p.DeletedUpToOffset {
		p.DeletedUpToOffset = c.UpToOffset
	}
	return Result{}
}

func (s *State) applyCreateGroup(ctx ApplyContext, c CreateConsumerGroup) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermReadTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	if !validName(c.Name) {
		return fail(CodeInvalidGroupName)
	}
	if _, dup := t.groupByName[c.Name]; dup {
		return fail(CodeGroupNameExists)
	}
	if len(t.groups) >= GroupsPerTopicMax || t.nextGroupID == ^uint32(0) {
		return fail(CodeError)
	}
	g := &groupState{id: t.nextGroupID, name: c.Name}
	t.nextGroupID++
	t.groups[g.id] = g
	t.groupByName[g.name] = g.id
	v := g.view(len(t.partitions))
	return Result{Group: &v}
}

// resolveGroupFor resolves stream, topic and group and checks the
// consumer-group rule (get_topic).
func (s *State) resolveGroupFor(ctx ApplyContext, stream, topic, group Ident) (*topicState, *groupState, uint32) {
	st, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return nil, nil, code
	}
	if !s.authorize(ctx.UserID, PermReadTopic, st.id, t.id) {
		return nil, nil, CodeUnauthorized
	}
	g, code := t.resolveGroup(group)
	if code != CodeOK {
		return nil, nil, code
	}
	return t, g, CodeOK
}

func (s *State) applyDeleteGroup(ctx ApplyContext, c DeleteConsumerGroup) Result {
	t, g, code := s.resolveGroupFor(ctx, c.Stream, c.Topic, c.Group)
	if code != CodeOK {
		return fail(code)
	}
	delete(t.groups, g.id)
	delete(t.groupByName, g.name)
	return Result{}
}

func (s *State) applyJoinGroup(ctx ApplyContext, c JoinConsumerGroup) Result {
	t, g, code := s.resolveGroupFor(ctx, c.Stream, c.Topic, c.Group)
	if code != CodeOK {
		return fail(code)
	}
	for _, m := range g.members {
		if m.ClientID == c.Client {
			return Result{} // idempotent re-join keeps the membership
		}
	}
	if len(g.members) >= MembersPerGroupMax {
		return fail(CodeError)
	}
	// Lowest free member id; members stay sorted by id.
	id := uint32(0)
	for _, m := range g.members {
		if m.ID != id {
			break
		}
		id++
	}
	g.members = append(g.members, Member{ID: id, ClientID: c.Client, Node: ctx.Node, Session: ctx.Session})
	sort.Slice(g.members, func(i, j int) bool { return g.members[i].ID < g.members[j].ID })
	g.rebalance(uint32(len(t.partitions)))
	return Result{}
}

func (s *State) applyLeaveGroup(ctx ApplyContext, c LeaveConsumerGroup) Result {
	t, g, code := s.resolveGroupFor(ctx, c.Stream, c.Topic, c.Group)
	if code != CodeOK {
		return fail(code)
	}
	if !g.removeClient(c.Client) {
		return fail(CodeGroupMemberNotFound)
	}
	g.rebalance(uint32(len(t.partitions)))
	return Result{}
}

func (g *groupState) removeClient(client ClientID) bool {
	for i, m := range g.members {
		if m.ClientID == client {
			g.members = append(g.members[:i], g.members[i+1:]...)
			return true
		}
	}
	return false
}

// applyRemoveMember drops a client from every group (logout/disconnect).
func (s *State) applyRemoveMember(c RemoveConsumerGroupMember) Result {
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				if g.removeClient(c.Client) {
					g.rebalance(uint32(len(t.partitions)))
				}
			}
		}
	}
	return Result{}
}
