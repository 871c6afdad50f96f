package metadata

// GlobalPermissions are the 10 global flags (wire order).
type GlobalPermissions struct {
	ManageServers, ReadServers bool
	ManageUsers, ReadUsers     bool
	ManageStreams, ReadStreams bool
	ManageTopics, ReadTopics   bool
	PollMessages, SendMessages bool
}

// StreamPermissions are the 6 per-stream flags plus per-topic entries.
type StreamPermissions struct {
	ManageStream, ReadStream   bool
	ManageTopics, ReadTopics   bool
	PollMessages, SendMessages bool
	Topics                     map[uint32]TopicPermissions
}

// TopicPermissions are the 4 per-topic flags.
type TopicPermissions struct {
	ManageTopic, ReadTopic     bool
	PollMessages, SendMessages bool
}

// Permissions of a user (wire-protocol §4.1). A nil *Permissions means
// the user has none.
type Permissions struct {
	Global  GlobalPermissions
	Streams map[uint32]StreamPermissions
}

// Clone returns a deep copy (nil stays nil).
func (p *Permissions) Clone() *Permissions {
	if p == nil {
		return nil
	}
	out := &Permissions{Global: p.Global}
	if len(p.Streams) > 0 {
		out.Streams = make(map[uint32]StreamPermissions, len(p.Streams))
		for sid, sp := range p.Streams {
			cp := sp
			if len(sp.Topics) > 0 {
				cp.Topics = make(map[uint32]TopicPermissions, len(sp.Topics))
				for tid, tp := range sp.Topics {
					cp.Topics[tid] = tp
				}
			}
			out.Streams[sid] = cp
		}
	}
	return out
}

// Permission names one RBAC rule of http-api.md §11.
type Permission uint8

const (
	PermReadServers  Permission = iota + 1 // stats, clients, snapshot
	PermReadUsers                          // get user(s)
	PermManageUsers                        // create/update/delete users, permissions
	PermReadStreams                        // list streams
	PermReadStream                         // get stream s
	PermCreateStream                       // create a stream
	PermManageStream                       // update/delete/purge stream s
	PermReadTopics                         // list topics of s
	PermReadTopic                          // get topic s/t; all consumer-group ops
	PermCreateTopic                        // create a topic in s
	PermManageTopic                        // update/delete/purge topic, partitions, segments
	PermPoll                               // poll, consumer offsets
	PermSend                               // produce
)

// RootUserID is the id of the root user; it passes every check.
const RootUserID uint32 = 0

// allows evaluates one rule against a permission set. Stream- and
// topic-scoped grants are looked up by the resolved numeric ids.
func (p *Permissions) allows(perm Permission, streamID, topicID uint32) bool {
	if p == nil {
		return false
	}
	g := p.Global
	sp, hasStream := p.Streams[streamID]
	var tp TopicPermissions
	hasTopic := false
	if hasStream {
		tp, hasTopic = sp.Topics[topicID]
	}
	switch perm {
	case PermReadServers:
		return g.ManageServers || g.ReadServers
	case PermReadUsers:
		return g.ManageUsers || g.ReadUsers
	case PermManageUsers:
		return g.ManageUsers
	case PermReadStreams:
		return g.ManageStreams || g.ReadStreams
	case PermReadStream:
		return g.ManageStreams || g.ReadStreams || (hasStream && (sp.ManageStream || sp.ReadStream))
	case PermCreateStream:
		return g.ManageStreams
	case PermManageStream:
		return g.ManageStreams || (hasStream && sp.ManageStream)
	case PermReadTopics:
		return p.readTopics(sp, hasStream)
	case PermReadTopic:
		return p.readTopics(sp, hasStream) || (hasTopic && (tp.ManageTopic || tp.ReadTopic))
	case PermCreateTopic:
		return g.ManageStreams || g.ManageTopics || (hasStream && (sp.ManageStream || sp.ManageTopics))
	case PermManageTopic:
		return g.ManageStreams || g.ManageTopics ||
			(hasStream && (sp.ManageStream || sp.ManageTopics)) ||
			(hasTopic && tp.ManageTopic)
	case PermPoll:
		return g.PollMessages || g.ReadTopics || g.ManageTopics || g.ReadStreams || g.ManageStreams ||
			(hasStream && (sp.PollMessages || sp.ManageStream || sp.ReadStream || sp.ManageTopics || sp.ReadTopics)) ||
			(hasTopic && (tp.ManageTopic || tp.ReadTopic || tp.PollMessages))
	case PermSend:
		return g.SendMessages || g.ManageStreams || g.ManageTopics ||
			(hasStream && (sp.SendMessages || sp.ManageStream || sp.ManageTopics)) ||
			(hasTopic && (tp.ManageTopic || tp.SendMessages))
	}
	return false
}

func (p *Permissions) readTopics(sp StreamPermissions, hasStream bool) bool {
	g := p.Global
	return g.ReadStreams || g.ManageStreams || g.ManageTopics || g.ReadTopics ||
		(hasStream && (sp.ManageStream || sp.ReadStream || sp.ManageTopics || sp.ReadTopics))
}
