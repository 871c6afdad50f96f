package client

import (
	"context"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

// samplePayloads is what the fake server answers for each command (before any result section).
func samplePayloads() map[wire.CommandCode][]byte {
	topic := wire.TopicHeader{ID: 1, PartitionsCount: 1, MessageExpiry: wire.Unlimited, Compression: wire.CompressionNone, MaxTopicSize: wire.Unlimited, Name: "t"}
	td := wire.TopicDetails{TopicHeader: topic, Partitions: []wire.Partition{{ID: 0}}}
	sd := wire.StreamDetails{Stream: wire.Stream{ID: 1, Name: "s"}, Topics: []wire.TopicHeader{topic}}
	gd := wire.GroupDetails{ConsumerGroup: wire.ConsumerGroup{ID: 1, Name: "g"}, Members: []wire.GroupMember{{ID: 1, Partitions: []uint32{0}}}}
	ud := wire.UserDetails{User: wire.User{ID: 1, Status: wire.UserActive, Username: "u"}}
	cd := wire.ClientDetails{Client: wire.Client{ClientID: 1, UserID: 0, Transport: wire.TransportTCP, Address: "127.0.0.1:1"}}
	cm := wire.ClusterMetadata{Name: "single-node", Nodes: []wire.ClusterNode{{Name: "iggy-node", IP: "127.0.0.1", TCP: 8090}}}
	return map[wire.CommandCode][]byte{
		wire.CodeGetStats:                  (&wire.Stats{Hostname: "h"}).Append(nil),
		wire.CodeGetClusterMetadata:        cm.Append(nil),
		wire.CodeDescribeOptions:           wire.AppendOptionSpecs(nil, wire.OptionSpecsForScope(wire.ScopeTopic)),
		wire.CodeGetMe:                     cd.Append(nil),
		wire.CodeGetClient:                 cd.Append(nil),
		wire.CodeGetClients:                cd.Client.Append(nil),
		wire.CodeGetUser:                   ud.Append(nil),
		wire.CodeGetUsers:                  ud.User.Append(nil),
		wire.CodeCreateUser:                ud.Append(nil),
		wire.CodeGetPersonalAccessTokens:   (&wire.PersonalAccessToken{Name: "p"}).Append(nil),
		wire.CodeCreatePersonalAccessToken: (&wire.RawToken{Token: "secret-token"}).Append(nil),
		wire.CodeGetConsumerOffset:         (&wire.ConsumerOffset{PartitionID: 0, CurrentOffset: 5, StoredOffset: 3}).Append(nil),
		wire.CodeGetStream:                 sd.Append(nil),
		wire.CodeGetStreams:                sd.Stream.Append(nil),
		wire.CodeCreateStream:              (&wire.StreamDetails{Stream: wire.Stream{ID: 2, Name: "n"}}).Append(nil),
		wire.CodeGetTopic:                  td.Append(nil),
		wire.CodeGetTopics:                 wire.AppendTopics(nil, []wire.TopicHeader{topic}),
		wire.CodeCreateTopic:               td.Append(nil),
		wire.CodeGetConsumerGroup:          gd.Append(nil),
		wire.CodeGetConsumerGroups:         gd.ConsumerGroup.Append(nil),
		wire.CodeCreateConsumerGroup:       gd.Append(nil),
		wire.CodeSyncConsumerGroup:         (&wire.Assignment{Generation: 1, Partitions: []uint32{0}}).Append(nil),
	}
}

// Every command method sends its own command code with a body the strict decoder accepts, and decodes
// the canonical reply payload.
func TestEveryCommandSendsItsCode(t *testing.T) {
	payloads := samplePayloads()
	var mu sync.Mutex
	var seen []wire.CommandCode
	s := newFakeServer(t, nil)
	s.handle = func(f wire.Frame) [][]byte {
		h := s.header(f)
		if h.Operation == wire.OpRegister {
			return [][]byte{registerReply(h, 1)}
		}
		code := h.Code
		if h.Operation != wire.OpNonReplicated {
			var ok bool
			if code, ok = wire.CodeForOperation(h.Operation); !ok {
				t.Errorf("operation %s has no command code", h.Operation)
			}
		}
		if _, err := wire.DecodeRequestBody(code, f.Body); err != nil {
			t.Errorf("%s body refused by the server codec: %v", code, err)
		}
		mu.Lock()
		seen = append(seen, code)
		mu.Unlock()
		return [][]byte{replyOK(h, payloads[code])}
	}
	c := dial(t, s)
	ctx := testCtx(t)
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	sid, tid, gid := wire.NumericID(1), wire.NamedID("t"), wire.NamedID("g")
	consumer := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: gid}
	name := "renamed"
	status := wire.UserInactive
	perms := &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}}
	calls := []struct {
		code wire.CommandCode
		run  func(context.Context) error
	}{
		{wire.CodePing, c.Ping},
		{wire.CodeGetStats, func(ctx context.Context) error { _, err := c.GetStats(ctx); return err }},
		{wire.CodeGetClusterMetadata, func(ctx context.Context) error { _, err := c.GetClusterMetadata(ctx); return err }},
		{wire.CodeDescribeOptions, func(ctx context.Context) error { _, err := c.DescribeOptions(ctx, wire.ScopeTopic); return err }},
		{wire.CodeGetMe, func(ctx context.Context) error { _, err := c.GetMe(ctx); return err }},
		{wire.CodeGetClient, func(ctx context.Context) error { _, err := c.GetClient(ctx, 1); return err }},
		{wire.CodeGetClients, func(ctx context.Context) error { _, err := c.GetClients(ctx); return err }},
		{wire.CodeGetUser, func(ctx context.Context) error { _, err := c.GetUser(ctx, wire.NamedID("u")); return err }},
		{wire.CodeGetUsers, func(ctx context.Context) error { _, err := c.GetUsers(ctx); return err }},
		{wire.CodeCreateUser, func(ctx context.Context) error {
			_, err := c.CreateUser(ctx, "u", "password", wire.UserActive, perms)
			return err
		}},
		{wire.CodeUpdateUser, func(ctx context.Context) error { return c.UpdateUser(ctx, wire.NumericID(1), &name, &status) }},
		{wire.CodeDeleteUser, func(ctx context.Context) error { return c.DeleteUser(ctx, wire.NumericID(1)) }},
		{wire.CodeChangePassword, func(ctx context.Context) error { return c.ChangePassword(ctx, wire.NumericID(1), "old", "new") }},
		{wire.CodeUpdatePermissions, func(ctx context.Context) error { return c.UpdatePermissions(ctx, wire.NumericID(1), perms) }},
		{wire.CodeGetPersonalAccessTokens, func(ctx context.Context) error { _, err := c.GetPersonalAccessTokens(ctx); return err }},
		{wire.CodeCreatePersonalAccessToken, func(ctx context.Context) error {
			tok, err := c.CreatePersonalAccessToken(ctx, "p", 0)
			if err == nil && tok != "secret-token" {
				t.Errorf("token %q", tok)
			}
			return err
		}},
		{wire.CodeDeletePersonalAccessToken, func(ctx context.Context) error { return c.DeletePersonalAccessToken(ctx, "p") }},
		{wire.CodeGetStream, func(ctx context.Context) error { _, err := c.GetStream(ctx, sid); return err }},
		{wire.CodeGetStreams, func(ctx context.Context) error { _, err := c.GetStreams(ctx); return err }},
		{wire.CodeCreateStream, func(ctx context.Context) error { _, err := c.CreateStream(ctx, "n"); return err }},
		{wire.CodeUpdateStream, func(ctx context.Context) error { return c.UpdateStream(ctx, sid, "n2") }},
		{wire.CodeDeleteStream, func(ctx context.Context) error { return c.DeleteStream(ctx, sid) }},
		{wire.CodePurgeStream, func(ctx context.Context) error { return c.PurgeStream(ctx, sid) }},
		{wire.CodeGetTopic, func(ctx context.Context) error { _, err := c.GetTopic(ctx, sid, tid); return err }},
		{wire.CodeGetTopics, func(ctx context.Context) error { _, err := c.GetTopics(ctx, sid); return err }},
		{wire.CodeCreateTopic, func(ctx context.Context) error {
			_, err := c.CreateTopic(ctx, sid, "t", 1, wire.OptionString(wire.OptMessageExpiry, "1h"))
			return err
		}},
		{wire.CodeUpdateTopic, func(ctx context.Context) error { return c.UpdateTopic(ctx, sid, tid, "t2") }},
		{wire.CodeDeleteTopic, func(ctx context.Context) error { return c.DeleteTopic(ctx, sid, tid) }},
		{wire.CodePurgeTopic, func(ctx context.Context) error { return c.PurgeTopic(ctx, sid, tid) }},
		{wire.CodeCreatePartitions, func(ctx context.Context) error { return c.CreatePartitions(ctx, sid, tid, 2) }},
		{wire.CodeDeletePartitions, func(ctx context.Context) error { return c.DeletePartitions(ctx, sid, tid, 1) }},
		{wire.CodeDeleteSegments, func(ctx context.Context) error { return c.DeleteSegments(ctx, sid, tid, 0, 1) }},
		{wire.CodeGetConsumerGroup, func(ctx context.Context) error { _, err := c.GetConsumerGroup(ctx, sid, tid, gid); return err }},
		{wire.CodeGetConsumerGroups, func(ctx context.Context) error { _, err := c.GetConsumerGroups(ctx, sid, tid); return err }},
		{wire.CodeCreateConsumerGroup, func(ctx context.Context) error { _, err := c.CreateConsumerGroup(ctx, sid, tid, "g"); return err }},
		{wire.CodeDeleteConsumerGroup, func(ctx context.Context) error { return c.DeleteConsumerGroup(ctx, sid, tid, gid) }},
		{wire.CodeJoinConsumerGroup, func(ctx context.Context) error { return c.JoinConsumerGroup(ctx, sid, tid, gid) }},
		{wire.CodeLeaveConsumerGroup, func(ctx context.Context) error { return c.LeaveConsumerGroup(ctx, sid, tid, gid) }},
		{wire.CodeSyncConsumerGroup, func(ctx context.Context) error { _, err := c.SyncConsumerGroup(ctx, sid, tid, gid); return err }},
		{wire.CodeGetConsumerOffset, func(ctx context.Context) error {
			o, err := c.GetConsumerOffset(ctx, consumer, sid, tid, wire.SomePartition(0))
			if err == nil && (o == nil || o.StoredOffset != 3) {
				t.Errorf("offset %+v", o)
			}
			return err
		}},
		{wire.CodeStoreConsumerOffset, func(ctx context.Context) error {
			return c.StoreConsumerOffset(ctx, consumer, sid, tid, wire.SomePartition(0), 3)
		}},
		{wire.CodeDeleteConsumerOffset, func(ctx context.Context) error {
			return c.DeleteConsumerOffset(ctx, consumer, sid, tid, wire.SomePartition(0))
		}},
		{wire.CodeLogoutUser, c.Logout},
	}
	for i, call := range calls {
		if err := call.run(ctx); err != nil {
			t.Fatalf("%s: %v", call.code, err)
		}
		mu.Lock()
		got := seen[len(seen)-1]
		n := len(seen)
		mu.Unlock()
		if n != i+1 || got != call.code {
			t.Fatalf("call %d sent %s (%d frames), want %s", i, got, n, call.code)
		}
	}
}
