package httpapi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lodestream/lodestream/wire"
)

// Permissions JSON (spec §6): every flag is required when its object is
// present; stream and topic maps are keyed by numeric ids as strings.

type globalPermsJSON struct {
	ManageServers *bool `json:"manage_servers"`
	ReadServers   *bool `json:"read_servers"`
	ManageUsers   *bool `json:"manage_users"`
	ReadUsers     *bool `json:"read_users"`
	ManageStreams *bool `json:"manage_streams"`
	ReadStreams   *bool `json:"read_streams"`
	ManageTopics  *bool `json:"manage_topics"`
	ReadTopics    *bool `json:"read_topics"`
	PollMessages  *bool `json:"poll_messages"`
	SendMessages  *bool `json:"send_messages"`
}

type streamPermsJSON struct {
	ManageStream *bool                     `json:"manage_stream"`
	ReadStream   *bool                     `json:"read_stream"`
	ManageTopics *bool                     `json:"manage_topics"`
	ReadTopics   *bool                     `json:"read_topics"`
	PollMessages *bool                     `json:"poll_messages"`
	SendMessages *bool                     `json:"send_messages"`
	Topics       map[string]topicPermsJSON `json:"topics"`
}

type topicPermsJSON struct {
	ManageTopic  *bool `json:"manage_topic"`
	ReadTopic    *bool `json:"read_topic"`
	PollMessages *bool `json:"poll_messages"`
	SendMessages *bool `json:"send_messages"`
}

type permissionsJSON struct {
	Global  *globalPermsJSON           `json:"global"`
	Streams map[string]streamPermsJSON `json:"streams"`
}

func boolPtr(b bool) *bool { return &b }

var errPermissionFlag = errors.New("permissions: every flag is required")

func all(flags ...*bool) bool { return !slices.Contains(flags, nil) }

// toWire checks and converts request permissions (nil stays nil).
func (p *permissionsJSON) toWire() (*wire.Permissions, error) {
	if p == nil {
		return nil, nil
	}
	g := p.Global
	if g == nil || !all(g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams, g.ReadStreams,
		g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages) {
		return nil, errPermissionFlag
	}
	out := &wire.Permissions{Global: wire.GlobalPermissions{ManageServers: *g.ManageServers, ReadServers: *g.ReadServers,
		ManageUsers: *g.ManageUsers, ReadUsers: *g.ReadUsers, ManageStreams: *g.ManageStreams, ReadStreams: *g.ReadStreams,
		ManageTopics: *g.ManageTopics, ReadTopics: *g.ReadTopics, PollMessages: *g.PollMessages, SendMessages: *g.SendMessages}}
	if len(p.Streams)+countTopics(p.Streams) > wire.PermissionEntriesMax {
		return nil, fmt.Errorf("permissions: more than %d stream and topic entries", wire.PermissionEntriesMax)
	}
	for key, s := range p.Streams {
		id, err := strconv.ParseUint(key, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("permissions: stream key %q is not a u32", key)
		}
		if !all(s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages) {
			return nil, errPermissionFlag
		}
		sp := wire.StreamPermissions{StreamID: uint32(id), ManageStream: *s.ManageStream, ReadStream: *s.ReadStream,
			ManageTopics: *s.ManageTopics, ReadTopics: *s.ReadTopics, PollMessages: *s.PollMessages, SendMessages: *s.SendMessages}
		for tkey, t := range s.Topics {
			tid, err := strconv.ParseUint(tkey, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("permissions: topic key %q is not a u32", tkey)
			}
			if !all(t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages) {
				return nil, errPermissionFlag
			}
			sp.Topics = append(sp.Topics, wire.TopicPermissions{TopicID: uint32(tid), ManageTopic: *t.ManageTopic,
				ReadTopic: *t.ReadTopic, PollMessages: *t.PollMessages, SendMessages: *t.SendMessages})
		}
		slices.SortFunc(sp.Topics, func(a, b wire.TopicPermissions) int { return int(int64(a.TopicID) - int64(b.TopicID)) })
		out.Streams = append(out.Streams, sp)
	}
	slices.SortFunc(out.Streams, func(a, b wire.StreamPermissions) int { return int(int64(a.StreamID) - int64(b.StreamID)) })
	return out, nil
}

func countTopics(streams map[string]streamPermsJSON) int {
	n := 0
	for _, s := range streams {
		n += len(s.Topics)
	}
	return n
}

// permissionsOf renders stored permissions (nil → null).
func permissionsOf(p *wire.Permissions) *permissionsJSON {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &permissionsJSON{Global: &globalPermsJSON{ManageServers: boolPtr(g.ManageServers), ReadServers: boolPtr(g.ReadServers),
		ManageUsers: boolPtr(g.ManageUsers), ReadUsers: boolPtr(g.ReadUsers), ManageStreams: boolPtr(g.ManageStreams),
		ReadStreams: boolPtr(g.ReadStreams), ManageTopics: boolPtr(g.ManageTopics), ReadTopics: boolPtr(g.ReadTopics),
		PollMessages: boolPtr(g.PollMessages), SendMessages: boolPtr(g.SendMessages)}}
	if len(p.Streams) > 0 {
		out.Streams = make(map[string]streamPermsJSON, len(p.Streams))
	}
	for _, s := range p.Streams {
		sp := streamPermsJSON{ManageStream: boolPtr(s.ManageStream), ReadStream: boolPtr(s.ReadStream), ManageTopics: boolPtr(s.ManageTopics),
			ReadTopics: boolPtr(s.ReadTopics), PollMessages: boolPtr(s.PollMessages), SendMessages: boolPtr(s.SendMessages)}
		if len(s.Topics) > 0 {
			sp.Topics = make(map[string]topicPermsJSON, len(s.Topics))
		}
		for _, t := range s.Topics {
			sp.Topics[strconv.FormatUint(uint64(t.TopicID), 10)] = topicPermsJSON{ManageTopic: boolPtr(t.ManageTopic),
				ReadTopic: boolPtr(t.ReadTopic), PollMessages: boolPtr(t.PollMessages), SendMessages: boolPtr(t.SendMessages)}
		}
		out.Streams[strconv.FormatUint(uint64(s.StreamID), 10)] = sp
	}
	return out
}
