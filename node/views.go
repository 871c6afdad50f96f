package node

import (
	"sort"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Conversions between the metadata state's views and the wire's response
// and request types. Message, size and segment statistics are zero until
// the partition plane lands (messages issue).

func wireIdent(id wire.Identifier) metadata.Ident {
	if id.Kind == wire.IdentString {
		return metadata.ByName(id.Name)
	}
	return metadata.ByID(id.Numeric)
}

func wireStream(s metadata.Stream) wire.Stream {
	return wire.Stream{ID: s.ID, CreatedAt: s.CreatedAt, TopicsCount: uint32(len(s.Topics)), Name: s.Name}
}

func appendStreamDetails(b []byte, s metadata.Stream) []byte {
	d := wire.StreamDetails{Stream: wireStream(s)}
	for _, t := range s.Topics {
		d.Topics = append(d.Topics, wireTopicHeader(t))
	}
	return d.Append(b)
}

func wireTopicHeader(t metadata.Topic) wire.TopicHeader {
	explicit, derived := topicOptionBlocks(t)
	return wire.TopicHeader{
		ID: t.ID, CreatedAt: t.CreatedAt, PartitionsCount: uint32(len(t.Partitions)),
		MessageExpiry: t.MessageExpiry, Compression: uint8(t.Compression), MaxTopicSize: t.MaxTopicSize,
		Name: t.Name, Options: explicit, DerivedOptions: derived,
	}
}

func appendTopicDetails(b []byte, t metadata.Topic) []byte {
	d := wire.TopicDetails{TopicHeader: wireTopicHeader(t)}
	for _, p := range t.Partitions {
		d.Partitions = append(d.Partitions, wire.Partition{ID: p.ID, CreatedAt: p.CreatedAt})
	}
	return d.Append(b)
}

func wireGroup(g metadata.ConsumerGroup) wire.ConsumerGroup {
	return wire.ConsumerGroup{ID: g.ID, PartitionsCount: g.PartitionsCount, MembersCount: uint32(len(g.Members)), Name: g.Name}
}

func appendGroupDetails(b []byte, g metadata.ConsumerGroup) []byte {
	d := wire.GroupDetails{ConsumerGroup: wireGroup(g)}
	for _, m := range g.Members {
		d.Members = append(d.Members, wire.GroupMember{ID: m.ID, Partitions: append([]uint32(nil), m.Partitions...)})
	}
	return d.Append(b)
}

func wireUser(u metadata.User) wire.User {
	return wire.User{ID: u.ID, CreatedAt: u.CreatedAt, Status: wire.UserStatus(u.Status), Username: u.Username}
}

func appendUserDetails(b []byte, u metadata.User) []byte {
	d := wire.UserDetails{User: wireUser(u), Permissions: wirePermissions(u.Permissions)}
	return d.Append(b)
}

func wirePermissions(p *metadata.Permissions) *wire.Permissions {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &wire.Permissions{Global: wire.GlobalPermissions{
		ManageServers: g.ManageServers, ReadServers: g.ReadServers, ManageUsers: g.ManageUsers,
		ReadUsers: g.ReadUsers, ManageStreams: g.ManageStreams, ReadStreams: g.ReadStreams,
		ManageTopics: g.ManageTopics, ReadTopics: g.ReadTopics, PollMessages: g.PollMessages,
		SendMessages: g.SendMessages,
	}}
	for _, sid := range sortedIDs(p.Streams) {
		sp := p.Streams[sid]
		ws := wire.StreamPermissions{
			StreamID: sid, ManageStream: sp.ManageStream, ReadStream: sp.ReadStream, ManageTopics: sp.ManageTopics,
			ReadTopics: sp.ReadTopics, PollMessages: sp.PollMessages, SendMessages: sp.SendMessages,
		}
		for _, tid := range sortedIDs(sp.Topics) {
			tp := sp.Topics[tid]
			ws.Topics = append(ws.Topics, wire.TopicPermissions{
				TopicID: tid, ManageTopic: tp.ManageTopic, ReadTopic: tp.ReadTopic,
				PollMessages: tp.PollMessages, SendMessages: tp.SendMessages,
			})
		}
		out.Streams = append(out.Streams, ws)
	}
	return out
}

func metadataPermissions(p *wire.Permissions) *metadata.Permissions {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &metadata.Permissions{Global: metadata.GlobalPermissions{
		ManageServers: g.ManageServers, ReadServers: g.ReadServers, ManageUsers: g.ManageUsers,
		ReadUsers: g.ReadUsers, ManageStreams: g.ManageStreams, ReadStreams: g.ReadStreams,
		ManageTopics: g.ManageTopics, ReadTopics: g.ReadTopics, PollMessages: g.PollMessages,
		SendMessages: g.SendMessages,
	}}
	for _, s := range p.Streams {
		if out.Streams == nil {
			out.Streams = make(map[uint32]metadata.StreamPermissions)
		}
		sp := metadata.StreamPermissions{
			ManageStream: s.ManageStream, ReadStream: s.ReadStream, ManageTopics: s.ManageTopics,
			ReadTopics: s.ReadTopics, PollMessages: s.PollMessages, SendMessages: s.SendMessages,
		}
		for _, t := range s.Topics {
			if sp.Topics == nil {
				sp.Topics = make(map[uint32]metadata.TopicPermissions)
			}
			sp.Topics[t.TopicID] = metadata.TopicPermissions{
				ManageTopic: t.ManageTopic, ReadTopic: t.ReadTopic, PollMessages: t.PollMessages, SendMessages: t.SendMessages,
			}
		}
		out.Streams[s.StreamID] = sp
	}
	return out
}

func sortedIDs[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
