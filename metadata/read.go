package metadata

import "sort"

// Read API for the node. Every method takes the read lock and returns
// copies; callers may keep and mutate them freely.

func (st *streamState) view() Stream {
	out := Stream{ID: st.id, Name: st.name, CreatedAt: st.createdAt, Topics: make([]Topic, 0, len(st.topics))}
	for _, tid := range sortedKeys(st.topics) {
		out.Topics = append(out.Topics, st.topics[tid].view(st.id))
	}
	return out
}

func (t *topicState) view(streamID uint32) Topic {
	out := Topic{
		ID: t.id, StreamID: streamID, Name: t.name, CreatedAt: t.createdAt,
		MessageExpiry: t.messageExpiry, Compression: t.compression, MaxTopicSize: t.maxTopicSize,
		Options: t.options, ExplicitOptions: t.explicitOptions,
		Partitions:          append([]Partition(nil), t.partitions...),
		ConsumerGroups:      make([]ConsumerGroup, 0, len(t.groups)),
		NextConsumerGroupID: t.nextGroupID,
	}
	for _, gid := range sortedKeys(t.groups) {
		out.ConsumerGroups = append(out.ConsumerGroups, t.groups[gid].view(len(t.partitions)))
	}
	return out
}

func (g *groupState) view(partitionsCount int) ConsumerGroup {
	out := ConsumerGroup{
		ID: g.id, Name: g.name, Generation: g.generation,
		PartitionsCount: uint32(partitionsCount),
		Members:         make([]Member, len(g.members)),
	}
	for i, m := range g.members {
		out.Members[i] = Member{ID: m.ID, ClientID: m.ClientID, Partitions: append([]uint32(nil), m.Partitions...)}
	}
	return out
}

func (u *userState) view() User {
	return User{
		ID: u.id, Username: u.username, PasswordHash: u.passwordHash, Status: u.status,
		CreatedAt: u.createdAt, Permissions: u.permissions.Clone(),
	}
}

// GetStream returns the stream named by id.
func (s *State) GetStream(id Ident) (Stream, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, code := s.resolveStream(id)
	if code != CodeOK {
		return Stream{}, false
	}
	return st.view(), true
}

// Streams returns all streams sorted by id.
func (s *State) Streams() []Stream {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Stream, 0, len(s.streams))
	for _, sid := range sortedKeys(s.streams) {
		out = append(out, s.streams[sid].view())
	}
	return out
}

// GetTopic returns the topic; code is 0, CodeStreamIDNotFound or CodeTopicIDNotFound.
func (s *State) GetTopic(stream, topic Ident) (Topic, uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return Topic{}, code
	}
	return t.view(st.id), CodeOK
}

// Topics returns the topics of a stream sorted by id; code 0 or CodeStreamIDNotFound.
func (s *State) Topics(stream Ident) ([]Topic, uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, code := s.resolveStream(stream)
	if code != CodeOK {
		return nil, code
	}
	return st.view().Topics, CodeOK
}

// GetPartition returns one partition; code 0, 1009, 2010 or CodePartitionNotFound.
func (s *State) GetPartition(stream, topic Ident, partitionID uint32) (Partition, uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return Partition{}, code
	}
	if int(partitionID) >= len(t.partitions) {
		return Partition{}, CodePartitionNotFound
	}
	return t.partitions[partitionID], CodeOK
}

// GetConsumerGroup returns a group; code 0, 1009, 2010 or CodeGroupIDNotFound.
func (s *State) GetConsumerGroup(stream, topic, group Ident) (ConsumerGroup, uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return ConsumerGroup{}, code
	}
	g, code := t.resolveGroup(group)
	if code != CodeOK {
		return ConsumerGroup{}, code
	}
	return g.view(len(t.partitions)), CodeOK
}

// ConsumerGroups returns a topic's groups sorted by id; code 0, 1009 or 2010.
func (s *State) ConsumerGroups(stream, topic Ident) ([]ConsumerGroup, uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return nil, code
	}
	return t.view(st.id).ConsumerGroups, CodeOK
}

// Assignment returns the generation and partitions of client's membership
// in a group; code 0, 1009, 2010, CodeGroupIDNotFound or CodeGroupMemberNotFound.
func (s *State) Assignment(stream, topic, group Ident, client ClientID) (generation uint64, partitions []uint32, code uint32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, t, code := s.resolveTopic(stream, topic)
	if code != CodeOK {
		return 0, nil, code
	}
	g, code := t.resolveGroup(group)
	if code != CodeOK {
		return 0, nil, code
	}
	for _, m := range g.members {
		if m.ClientID == client {
			return g.generation, append([]uint32(nil), m.Partitions...), CodeOK
		}
	}
	return g.generation, nil, CodeGroupMemberNotFound
}

// ClientMemberships lists every group the client is a member of, in
// (stream, topic, group) order.
func (s *State) ClientMemberships(client ClientID) []GroupMembership {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []GroupMembership
	for _, sid := range sortedKeys(s.streams) {
		st := s.streams[sid]
		for _, tid := range sortedKeys(st.topics) {
			t := st.topics[tid]
			for _, gid := range sortedKeys(t.groups) {
				for _, m := range t.groups[gid].members {
					if m.ClientID == client {
						out = append(out, GroupMembership{StreamID: sid, TopicID: tid, GroupID: gid, MemberID: m.ID})
					}
				}
			}
		}
	}
	return out
}

// GetUser returns the user named by id (numeric id or username).
func (s *State) GetUser(id Ident) (User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, code := s.resolveUser(id)
	if code != CodeOK {
		return User{}, false
	}
	return u.view(), true
}

// Users returns all users sorted by id.
func (s *State) Users() []User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]User, 0, len(s.users))
	for _, uid := range sortedKeys(s.users) {
		out = append(out, s.users[uid].view())
	}
	return out
}

// PersonalAccessTokens returns a user's tokens sorted by name (nil if the
// user does not exist).
func (s *State) PersonalAccessTokens(userID uint32) []PersonalAccessToken {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.users[userID]
	if !ok {
		return nil
	}
	out := make([]PersonalAccessToken, 0, len(u.pats))
	for _, name := range sortedStringKeys(u.pats) {
		out = append(out, u.pats[name])
	}
	return out
}

// HasExpiredTokens reports whether any token expired at or before nowMicros
// (the primary's cleaner proposes DeleteExpiredTokens only then).
func (s *State) HasExpiredTokens(nowMicros uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, u := range s.users {
		for _, p := range u.pats {
			if p.ExpiryAt != 0 && p.ExpiryAt <= nowMicros {
				return true
			}
		}
	}
	return false
}

// Authorize reports whether userID may perform perm on the given stream
// and topic ids (ignored by rules that are not entity-scoped). Root passes
// all; unknown or inactive users pass nothing.
func (s *State) Authorize(userID uint32, perm Permission, streamID, topicID uint32) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.authorize(userID, perm, streamID, topicID)
}

// Counts returns the numbers of streams, topics, partitions and consumer
// groups (for stats).
func (s *State) Counts() (streams, topics, partitions, groups int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, st := range s.streams {
		topics += len(st.topics)
		for _, t := range st.topics {
			partitions += len(t.partitions)
			groups += len(t.groups)
		}
	}
	return len(s.streams), topics, partitions, groups
}

// BoundMember is a consumer-group membership of a client whose connection
// was held by a given node.
type BoundMember struct {
	Client  ClientID
	Session uint64
}

// MembersBoundAt lists every client (once) that holds a group membership
// joined through node's connections, sorted by client id.
func (s *State) MembersBoundAt(node uint8) []BoundMember {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[ClientID]uint64{}
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				for _, m := range g.members {
					if m.Node == node {
						seen[m.ClientID] = max(seen[m.ClientID], m.Session)
					}
				}
			}
		}
	}
	out := make([]BoundMember, 0, len(seen))
	for c, session := range seen {
		out = append(out, BoundMember{Client: c, Session: session})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client.Hi != out[j].Client.Hi {
			return out[i].Client.Hi < out[j].Client.Hi
		}
		return out[i].Client.Lo < out[j].Client.Lo
	})
	return out
}
