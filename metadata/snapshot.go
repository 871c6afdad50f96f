package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Snapshot layout: [magic u32 "LSMS"][version u16] body [XXH3-64 of all
// preceding bytes]. The body lists every collection in ascending id (or
// name) order, so equal states encode to identical bytes.
const (
	snapshotMagic uint32 = 0x534D534C // "LSMS" little-endian
	// SnapshotVersion 2 adds each group member's node and session; version
	// 3 each partition's creating node. Older snapshots still restore
	// (members bound at node 0, session 0; partitions created on node 0).
	SnapshotVersion uint16 = 3
	snapshotHeader         = 6
	snapshotTrailer        = 8
)

// Snapshot returns the deterministic encoding of the whole state.
func (s *State) Snapshot() []byte { return s.snapshotVersion(SnapshotVersion) }

// snapshotVersion encodes in format version (tests write version 1 to
// check that older snapshots still restore).
func (s *State) snapshotVersion(version uint16) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	w := &writer{buf: make([]byte, 0, 4096)}
	w.u32(snapshotMagic)
	w.u16(version)
	w.u64(s.revision)
	w.u64(s.lastOp)
	w.u64(s.lastTimestamp)
	w.u32(uint32(len(s.streams)))
	for _, sid := range sortedKeys(s.streams) {
		writeStream(w, s.streams[sid], version)
	}
	w.u32(uint32(len(s.users)))
	for _, uid := range sortedKeys(s.users) {
		u := s.users[uid]
		w.u32(u.id)
		w.str16(u.username)
		w.str16(u.passwordHash)
		w.u8(uint8(u.status))
		w.u64(u.createdAt)
		w.permissions(u.permissions)
		w.u32(uint32(len(u.pats)))
		for _, name := range sortedStringKeys(u.pats) {
			p := u.pats[name]
			w.str16(p.Name)
			w.str16(p.TokenHash)
			w.u64(p.ExpiryAt)
		}
	}
	if version >= 2 {
		writeSessions(w, s)
	}
	w.u64(xxh3.Hash(w.buf))
	return w.buf
}

func writeStream(w *writer, st *streamState, version uint16) {
	w.u32(st.id)
	w.str16(st.name)
	w.u64(st.createdAt)
	w.u32(uint32(len(st.topics)))
	for _, tid := range sortedKeys(st.topics) {
		t := st.topics[tid]
		w.u32(t.id)
		w.str16(t.name)
		w.u64(t.createdAt)
		w.u64(t.messageExpiry)
		w.u8(uint8(t.compression))
		w.u64(t.maxTopicSize)
		o := t.options
		w.u64(o.SegmentSize)
		w.boolean(o.EnforceFsync)
		w.u32(o.MessagesRequiredToSave)
		w.u64(o.SizeOfMessagesRequiredToSave)
		w.boolean(o.PreallocateSegments)
		w.u8(uint8(o.Durability))
		w.u8(uint8(o.ConsumerOffsetDurability))
		w.u16(uint16(t.explicitOptions))
		w.u32(t.nextGroupID)
		w.u32(uint32(len(t.partitions)))
		for _, p := range t.partitions {
			w.u32(p.ID)
			w.u64(p.CreatedAt)
			w.u64(p.CreatedRevision)
			w.u64(p.DeletedUpToOffset)
			w.u64(p.PurgeGeneration)
			if version >= 3 {
				w.u8(p.CreatedOnNode)
			}
		}
		w.u32(uint32(len(t.groups)))
		for _, gid := range sortedKeys(t.groups) {
			g := t.groups[gid]
			w.u32(g.id)
			w.str16(g.name)
			w.u64(g.generation)
			w.u32(uint32(len(g.members)))
			for _, m := range g.members {
				w.u32(m.ID)
				w.client(m.ClientID)
				if version >= 2 {
					w.u8(m.Node)
					w.u64(m.Session)
				}
				w.u32(uint32(len(m.Partitions)))
				for _, p := range m.Partitions {
					w.u32(p)
				}
			}
		}
	}
}

// Restore decodes a snapshot strictly: magic, version, checksum, bounds,
// ascending unique ids, unique names and internal consistency.
func Restore(b []byte) (*State, error) {
	if len(b) < snapshotHeader+snapshotTrailer {
		return nil, fmt.Errorf("restore snapshot: %d bytes is shorter than header and trailer", len(b))
	}
	body := b[:len(b)-snapshotTrailer]
	if got, want := xxh3.Hash(body), binary.LittleEndian.Uint64(b[len(b)-snapshotTrailer:]); got != want {
		return nil, fmt.Errorf("restore snapshot: checksum mismatch (computed %016x, stored %016x)", got, want)
	}
	r := &reader{buf: body}
	if m := r.u32(); m != snapshotMagic {
		return nil, fmt.Errorf("restore snapshot: bad magic %08x", m)
	}
	if v := r.u16(); v < 1 || v > SnapshotVersion {
		return nil, fmt.Errorf("restore snapshot: unsupported version %d (want 1 to %d)", v, SnapshotVersion)
	} else {
		r.version = v
	}
	s := NewState()
	s.revision, s.lastOp, s.lastTimestamp = r.u64(), r.u64(), r.u64()
	n := r.count(StreamsMax, 20)
	prev := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		st := readStream(r, s.revision)
		if r.err != nil {
			break
		}
		if int64(st.id) <= prev {
			r.fail(fmt.Errorf("stream id %d not ascending", st.id))
			break
		}
		prev = int64(st.id)
		if _, dup := s.streamByName[st.name]; dup {
			r.fail(fmt.Errorf("duplicate stream name %q", st.name))
			break
		}
		s.streams[st.id] = st
		s.streamByName[st.name] = st.id
	}
	readUsers(r, s)
	if r.version >= 2 {
		readSessions(r, s)
	}
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("restore snapshot: %w", err)
	}
	return s, nil
}

func readStream(r *reader, revision uint64) *streamState {
	st := &streamState{id: r.u32(), name: r.str16(NameBytesMax), createdAt: r.u64(),
		topics: make(map[uint32]*topicState), topicByName: make(map[string]uint32)}
	if r.err == nil && (!validName(st.name) || st.id >= StreamsMax) {
		r.fail(fmt.Errorf("stream %d: invalid name or id", st.id))
	}
	n := r.count(TopicsPerStreamMax, 60)
	prev := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		t := readTopic(r, revision)
		if r.err != nil {
			break
		}
		if int64(t.id) <= prev || t.id >= TopicsPerStreamMax {
			r.fail(fmt.Errorf("stream %d: topic id %d not ascending or out of range", st.id, t.id))
			break
		}
		prev = int64(t.id)
		if _, dup := st.topicByName[t.name]; dup {
			r.fail(fmt.Errorf("stream %d: duplicate topic name %q", st.id, t.name))
			break
		}
		st.topics[t.id] = t
		st.topicByName[t.name] = t.id
	}
	return st
}

func readTopic(r *reader, revision uint64) *topicState {
	t := &topicState{id: r.u32(), name: r.str16(NameBytesMax), createdAt: r.u64(), messageExpiry: r.u64(),
		compression: Compression(r.u8()), maxTopicSize: r.u64(),
		groups: make(map[uint32]*groupState), groupByName: make(map[string]uint32)}
	t.options = TopicOptions{SegmentSize: r.u64(), EnforceFsync: r.boolean(), MessagesRequiredToSave: r.u32(),
		SizeOfMessagesRequiredToSave: r.u64(), PreallocateSegments: r.boolean(),
		Durability: Durability(r.u8()), ConsumerOffsetDurability: Durability(r.u8())}
	t.explicitOptions = OptionKey(r.u16())
	t.nextGroupID = r.u32()
	if r.err != nil {
		return t
	}
	if !validName(t.name) || !validateTopicOptions(CreateTopic{Compression: t.compression, MaxTopicSize: t.maxTopicSize,
		Options: t.options, ExplicitOptions: t.explicitOptions}) {
		r.fail(fmt.Errorf("topic %d: invalid name or options", t.id))
		return t
	}
	np := r.count(PartitionsPerTopicMax, 36)
	t.partitions = make([]Partition, 0, np)
	for i := 0; i < np && r.err == nil; i++ {
		p := Partition{ID: r.u32(), CreatedAt: r.u64(), CreatedRevision: r.u64(),
			DeletedUpToOffset: r.u64(), PurgeGeneration: r.u64()}
		if r.version >= 3 {
			p.CreatedOnNode = r.u8()
		}
		if r.err == nil && (p.ID != uint32(i) || p.CreatedRevision > revision) {
			r.fail(fmt.Errorf("topic %d: partition %d at index %d (or revision %d beyond %d)", t.id, p.ID, i, p.CreatedRevision, revision))
		}
		t.partitions = append(t.partitions, p)
	}
	ng := r.count(GroupsPerTopicMax, 20)
	prev := int64(-1)
	for i := 0; i < ng && r.err == nil; i++ {
		g := readGroup(r, uint32(len(t.partitions)))
		if r.err != nil {
			break
		}
		if int64(g.id) <= prev || g.id >= t.nextGroupID {
			r.fail(fmt.Errorf("topic %d: group id %d not ascending or not below next id %d", t.id, g.id, t.nextGroupID))
			break
		}
		prev = int64(g.id)
		if _, dup := t.groupByName[g.name]; dup {
			r.fail(fmt.Errorf("topic %d: duplicate group name %q", t.id, g.name))
			break
		}
		t.groups[g.id] = g
		t.groupByName[g.name] = g.id
	}
	return t
}

func readGroup(r *reader, partitionsCount uint32) *groupState {
	g := &groupState{id: r.u32(), name: r.str16(NameBytesMax), generation: r.u64()}
	if r.err == nil && !validName(g.name) {
		r.fail(fmt.Errorf("group %d: invalid name", g.id))
	}
	nm := r.count(MembersPerGroupMax, 24)
	clients := make(map[ClientID]bool, nm)
	assigned := make(map[uint32]bool)
	for i := 0; i < nm && r.err == nil; i++ {
		m := Member{ID: r.u32(), ClientID: r.client()}
		if r.version >= 2 {
			m.Node, m.Session = r.u8(), r.u64()
		}
		if i > 0 && m.ID <= g.members[i-1].ID {
			r.fail(fmt.Errorf("group %d: member id %d not ascending", g.id, m.ID))
		}
		if clients[m.ClientID] {
			r.fail(fmt.Errorf("group %d: duplicate member client", g.id))
		}
		clients[m.ClientID] = true
		np := r.count(PartitionsPerTopicMax, 4)
		for j := 0; j < np && r.err == nil; j++ {
			p := r.u32()
			if p >= partitionsCount || assigned[p] {
				r.fail(fmt.Errorf("group %d: partition %d out of range or assigned twice", g.id, p))
			}
			assigned[p] = true
			m.Partitions = append(m.Partitions, p)
		}
		g.members = append(g.members, m)
	}
	return g
}

func readUsers(r *reader, s *State) {
	n := r.count(UsersMax, 20)
	prev := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		u := &userState{id: r.u32(), username: r.str16(NameBytesMax), passwordHash: r.str16(PasswordHashBytesMax),
			status: UserStatus(r.u8()), createdAt: r.u64(), pats: make(map[string]PersonalAccessToken)}
		u.permissions = r.permissions()
		if r.err != nil {
			return
		}
		if int64(u.id) <= prev || !validUsername(u.username) || !validStatus(u.status) || !validHash(u.passwordHash) {
			r.fail(fmt.Errorf("user %d: id not ascending or invalid fields", u.id))
			return
		}
		prev = int64(u.id)
		if _, dup := s.userByName[u.username]; dup {
			r.fail(fmt.Errorf("duplicate username %q", u.username))
			return
		}
		np := r.count(PATsPerUserMax, 12)
		prevName := ""
		for j := 0; j < np && r.err == nil; j++ {
			p := PersonalAccessToken{Name: r.str16(NameBytesMax), TokenHash: r.str16(PasswordHashBytesMax), ExpiryAt: r.u64()}
			if r.err != nil {
				return
			}
			if (j > 0 && p.Name <= prevName) || !validPATName(p.Name) || !validTokenHash(p.TokenHash) {
				r.fail(fmt.Errorf("user %d: token %q not ascending or invalid", u.id, p.Name))
				return
			}
			if _, dup := s.patByHash[p.TokenHash]; dup {
				r.fail(errors.New("duplicate token hash"))
				return
			}
			prevName = p.Name
			u.pats[p.Name] = p
			s.patByHash[p.TokenHash] = patRef{userID: u.id, name: p.Name}
		}
		s.users[u.id] = u
		s.userByName[u.username] = u.id
	}
}

// ReplaceFrom makes s hold exactly other's state (a state transfer
// installs a peer's snapshot into the live state readers hold). other must
// not be used afterwards.
func (s *State) ReplaceFrom(other *State) {
	other.mu.Lock()
	defer other.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams, s.streamByName = other.streams, other.streamByName
	s.users, s.userByName, s.patByHash = other.users, other.userByName, other.patByHash
	s.sessions = other.sessions
	s.revision = other.revision
	s.streamIDHint, s.userIDHint = 0, 0
	s.lastOp, s.lastTimestamp = other.lastOp, other.lastTimestamp
}
