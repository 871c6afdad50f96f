package metadata

import "testing"

// TestRBACMatrix checks every rule of http-api.md §11 against grants that
// should and should not satisfy it. Stream 5 / topic 7 are the targets;
// grants on stream 6 or topic 8 must not leak across.
func TestRBACMatrix(t *testing.T) {
	global := func(g GlobalPermissions) *Permissions { return &Permissions{Global: g} }
	stream := func(sp StreamPermissions) *Permissions {
		return &Permissions{Streams: map[uint32]StreamPermissions{5: sp}}
	}
	otherStream := func(sp StreamPermissions) *Permissions {
		return &Permissions{Streams: map[uint32]StreamPermissions{6: sp}}
	}
	topic := func(tp TopicPermissions) *Permissions {
		return &Permissions{Streams: map[uint32]StreamPermissions{5: {Topics: map[uint32]TopicPermissions{7: tp}}}}
	}
	otherTopic := func(tp TopicPermissions) *Permissions {
		return &Permissions{Streams: map[uint32]StreamPermissions{5: {Topics: map[uint32]TopicPermissions{8: tp}}}}
	}
	type row struct {
		perm   Permission
		allow  []*Permissions
		refuse []*Permissions
	}
	rows := []row{
		{PermReadServers,
			[]*Permissions{global(GlobalPermissions{ManageServers: true}), global(GlobalPermissions{ReadServers: true})},
			[]*Permissions{nil, global(GlobalPermissions{ManageUsers: true, ManageStreams: true})}},
		{PermReadUsers,
			[]*Permissions{global(GlobalPermissions{ManageUsers: true}), global(GlobalPermissions{ReadUsers: true})},
			[]*Permissions{global(GlobalPermissions{ManageServers: true})}},
		{PermManageUsers,
			[]*Permissions{global(GlobalPermissions{ManageUsers: true})},
			[]*Permissions{global(GlobalPermissions{ReadUsers: true, ManageServers: true})}},
		{PermReadStreams,
			[]*Permissions{global(GlobalPermissions{ManageStreams: true}), global(GlobalPermissions{ReadStreams: true})},
			[]*Permissions{stream(StreamPermissions{ReadStream: true, ManageStream: true}), global(GlobalPermissions{ReadTopics: true})}},
		{PermReadStream,
			[]*Permissions{global(GlobalPermissions{ReadStreams: true}), stream(StreamPermissions{ReadStream: true}), stream(StreamPermissions{ManageStream: true})},
			[]*Permissions{otherStream(StreamPermissions{ReadStream: true}), stream(StreamPermissions{ReadTopics: true}), global(GlobalPermissions{ReadTopics: true})}},
		{PermCreateStream,
			[]*Permissions{global(GlobalPermissions{ManageStreams: true})},
			[]*Permissions{global(GlobalPermissions{ManageTopics: true}), stream(StreamPermissions{ManageStream: true})}},
		{PermManageStream,
			[]*Permissions{global(GlobalPermissions{ManageStreams: true}), stream(StreamPermissions{ManageStream: true})},
			[]*Permissions{otherStream(StreamPermissions{ManageStream: true}), global(GlobalPermissions{ManageTopics: true}), stream(StreamPermissions{ManageTopics: true})}},
		{PermReadTopics,
			[]*Permissions{global(GlobalPermissions{ReadStreams: true}), global(GlobalPermissions{ManageTopics: true}), global(GlobalPermissions{ReadTopics: true}),
				stream(StreamPermissions{ReadStream: true}), stream(StreamPermissions{ManageTopics: true}), stream(StreamPermissions{ReadTopics: true})},
			[]*Permissions{otherStream(StreamPermissions{ReadTopics: true}), topic(TopicPermissions{ReadTopic: true}), global(GlobalPermissions{PollMessages: true})}},
		{PermReadTopic,
			[]*Permissions{topic(TopicPermissions{ReadTopic: true}), topic(TopicPermissions{ManageTopic: true}), stream(StreamPermissions{ReadTopics: true}), global(GlobalPermissions{ReadTopics: true})},
			[]*Permissions{otherTopic(TopicPermissions{ReadTopic: true}), topic(TopicPermissions{PollMessages: true, SendMessages: true})}},
		{PermCreateTopic,
			[]*Permissions{global(GlobalPermissions{ManageStreams: true}), global(GlobalPermissions{ManageTopics: true}), stream(StreamPermissions{ManageStream: true}), stream(StreamPermissions{ManageTopics: true})},
			[]*Permissions{otherStream(StreamPermissions{ManageTopics: true}), topic(TopicPermissions{ManageTopic: true}), global(GlobalPermissions{ReadTopics: true})}},
		{PermManageTopic,
			[]*Permissions{global(GlobalPermissions{ManageTopics: true}), stream(StreamPermissions{ManageTopics: true}), stream(StreamPermissions{ManageStream: true}), topic(TopicPermissions{ManageTopic: true})},
			[]*Permissions{otherTopic(TopicPermissions{ManageTopic: true}), topic(TopicPermissions{ReadTopic: true}), stream(StreamPermissions{ReadTopics: true})}},
		{PermPoll,
			[]*Permissions{global(GlobalPermissions{PollMessages: true}), global(GlobalPermissions{ReadStreams: true}), stream(StreamPermissions{PollMessages: true}),
				stream(StreamPermissions{ReadStream: true}), topic(TopicPermissions{PollMessages: true}), topic(TopicPermissions{ReadTopic: true})},
			[]*Permissions{global(GlobalPermissions{SendMessages: true}), topic(TopicPermissions{SendMessages: true}), otherTopic(TopicPermissions{PollMessages: true})}},
		{PermSend,
			[]*Permissions{global(GlobalPermissions{SendMessages: true}), global(GlobalPermissions{ManageTopics: true}), stream(StreamPermissions{SendMessages: true}),
				stream(StreamPermissions{ManageStream: true}), topic(TopicPermissions{SendMessages: true}), topic(TopicPermissions{ManageTopic: true})},
			[]*Permissions{global(GlobalPermissions{PollMessages: true, ReadStreams: true}), topic(TopicPermissions{ReadTopic: true}), otherStream(StreamPermissions{SendMessages: true})}},
	}
	for _, r := range rows {
		for i, p := range r.allow {
			if !p.allows(r.perm, 5, 7) {
				t.Errorf("perm %d: allow case %d refused: %+v", r.perm, i, p)
			}
		}
		for i, p := range r.refuse {
			if p.allows(r.perm, 5, 7) {
				t.Errorf("perm %d: refuse case %d allowed: %+v", r.perm, i, p)
			}
		}
	}
}

func TestAuthorizeRootInactiveUnknown(t *testing.T) {
	f := newFixture(t)
	for perm := PermReadServers; perm <= PermSend; perm++ {
		if !f.s.Authorize(RootUserID, perm, 42, 42) {
			t.Errorf("root refused perm %d", perm)
		}
		if f.s.Authorize(bobID, perm, 0, 0) {
			t.Errorf("inactive bob (all permissions) allowed perm %d", perm)
		}
		if f.s.Authorize(99, perm, 0, 0) {
			t.Errorf("unknown user allowed perm %d", perm)
		}
		if f.s.Authorize(aliceID, perm, 0, 0) {
			t.Errorf("alice (nil permissions) allowed perm %d", perm)
		}
	}
	// Granting alice per-stream manage lets Apply pass the same rule.
	f.mustOK(RootUserID, UpdatePermissions{User: ByID(aliceID), Permissions: &Permissions{
		Streams: map[uint32]StreamPermissions{0: {ManageStream: true}}}})
	f.mustOK(aliceID, UpdateStream{Stream: ByID(0), Name: "alice-owns"})
	f.mustOK(aliceID, CreateTopic{Stream: ByID(0), Name: "mine", MessageExpiry: Never, Compression: CompressionNone,
		MaxTopicSize: Never, Options: DefaultTopicOptions(DurabilityReplicated, DurabilityReplicated)})
	f.mustReject(aliceID, CreateStream{Name: "not-allowed"}, CodeUnauthorized)
}
