package metadata

import (
	"reflect"
	"testing"
)

func allCommands() []Command {
	name := "carol"
	status := UserInactive
	perms := &Permissions{Global: GlobalPermissions{ReadUsers: true, SendMessages: true},
		Streams: map[uint32]StreamPermissions{
			3: {ManageTopics: true, Topics: map[uint32]TopicPermissions{1: {ReadTopic: true}, 0: {SendMessages: true}}},
			1: {PollMessages: true},
		}}
	s, tp, g := ByName("stream"), ByID(4), ByName("group")
	return []Command{
		CreateStream{Name: "stream"},
		UpdateStream{Stream: ByID(1), Name: "renamed"},
		DeleteStream{Stream: s},
		PurgeStream{Stream: ByID(0)},
		CreateTopic{Stream: s, Name: "t", PartitionsCount: 7, MessageExpiry: 99, Compression: CompressionGzip, MaxTopicSize: Never,
			Options: TopicOptions{SegmentSize: 1 << 20, EnforceFsync: true, MessagesRequiredToSave: 5, SizeOfMessagesRequiredToSave: 77,
				PreallocateSegments: true, Durability: DurabilityPersisted, ConsumerOffsetDurability: DurabilityReplicated},
			ExplicitOptions: OptEnforceFsync | OptDurability},
		UpdateTopic{Stream: s, Topic: tp, Name: "t2", MessageExpiry: 1, Compression: CompressionNone, MaxTopicSize: 1 << 31, ExplicitOptions: OptMaxTopicSize},
		DeleteTopic{Stream: s, Topic: tp},
		PurgeTopic{Stream: s, Topic: tp},
		CreatePartitions{Stream: s, Topic: tp, Count: 10},
		DeletePartitions{Stream: s, Topic: tp, Count: 2},
		TruncatePartition{Stream: s, Topic: tp, PartitionID: 3, UpToOffset: 1 << 40},
		CreateConsumerGroup{Stream: s, Topic: tp, Name: "group"},
		DeleteConsumerGroup{Stream: s, Topic: tp, Group: g},
		JoinConsumerGroup{Stream: s, Topic: tp, Group: g, Client: ClientID{Lo: 1, Hi: 2}},
		LeaveConsumerGroup{Stream: s, Topic: tp, Group: ByID(0), Client: ClientID{Lo: 3, Hi: 4}},
		RemoveConsumerGroupMember{Client: ClientID{Lo: 5, Hi: 6}},
		CreateUser{Username: "carol", PasswordHash: "$argon2id$x", Status: UserActive, Permissions: perms},
		CreateUser{Username: "dave", PasswordHash: "h", Status: UserInactive},
		UpdateUser{User: ByID(3), Username: &name, Status: &status},
		UpdateUser{User: ByName("carol")},
		DeleteUser{User: ByName("carol")},
		ChangePassword{User: ByID(1), NewPasswordHash: "new"},
		ChangePassword{User: ByID(1), CurrentPasswordMismatch: true},
		UpdatePermissions{User: ByID(1), Permissions: perms},
		UpdatePermissions{User: ByID(1)},
		CreatePersonalAccessToken{Name: "token", TokenHash: HashToken("x"), Expiry: Never},
		DeletePersonalAccessToken{Name: "token"},
		DeleteExpiredTokens{},
	}
}

func TestCommandCodecRoundTrip(t *testing.T) {
	kinds := map[Kind]bool{}
	for _, cmd := range allCommands() {
		b := EncodeCommand(cmd)
		got, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("%T: decode: %v", cmd, err)
		}
		if !reflect.DeepEqual(got, cmd) {
			t.Fatalf("%T: round trip\n got %+v\nwant %+v", cmd, got, cmd)
		}
		if again := EncodeCommand(got); string(again) != string(b) {
			t.Fatalf("%T: re-encoding differs", cmd)
		}
		kinds[cmd.Kind()] = true
		// Strictness: every proper prefix and any trailing byte fail.
		for n := 0; n < len(b); n++ {
			if _, err := DecodeCommand(b[:n]); err == nil {
				t.Fatalf("%T: prefix of %d/%d bytes decoded", cmd, n, len(b))
			}
		}
		if _, err := DecodeCommand(append(append([]byte(nil), b...), 0)); err == nil {
			t.Fatalf("%T: trailing byte accepted", cmd)
		}
	}
	if len(kinds) != 24 {
		t.Fatalf("covered %d command kinds, want 24", len(kinds))
	}
}

func TestCommandCodecRejects(t *testing.T) {
	cases := map[string][]byte{
		"empty":           nil,
		"unknown version": {2, byte(KindDeleteExpiredTokens)},
		"unknown kind":    {1, 200},
		"bad bool":        append(EncodeCommand(ChangePassword{User: ByID(1)})[:len(EncodeCommand(ChangePassword{User: ByID(1)}))-1], 2),
		"bad ident kind":  {1, byte(KindDeleteStream), 3, 0, 0, 0, 0},
		"empty name id":   {1, byte(KindDeleteStream), 2, 0, 0},
		"long name":       append([]byte{1, byte(KindCreateStream), 0, 1}, make([]byte, 256)...),
		"huge count":      {1, byte(KindUpdatePermissions), 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range cases {
		if _, err := DecodeCommand(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	s := seeded(t)
	res, err := s.ApplyEncoded(ApplyContext{Op: 1}, []byte{1, 200})
	if err == nil || res.Code != CodeInvalidCommand {
		t.Fatalf("ApplyEncoded of garbage: %+v %v", res, err)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, cmd := range allCommands() {
		f.Add(EncodeCommand(cmd))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := DecodeCommand(b)
		if err != nil {
			return
		}
		// Anything that decodes re-encodes to the same bytes (canonical).
		if again := EncodeCommand(cmd); string(again) != string(b) {
			t.Fatalf("non-canonical encoding accepted: %x vs %x", b, again)
		}
		s := seeded(t)
		s.Apply(ApplyContext{Op: 1, Timestamp: 1}, cmd)
	})
}

func FuzzRestore(f *testing.F) {
	f.Add(NewState().Snapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Restore(b)
		if err != nil {
			return
		}
		if again := s.Snapshot(); string(again) != string(b) {
			t.Fatal("restored snapshot re-encodes differently")
		}
	})
}

type foreignCommand struct{}

func (foreignCommand) Kind() Kind { return KindCreateStream }

func TestEncodeCommandUnrepresentable(t *testing.T) {
	huge := string(make([]byte, 70_000))
	for name, cmd := range map[string]Command{
		"nil":          nil,
		"nil pointer":  (*CreateStream)(nil),
		"foreign type": foreignCommand{},
		"huge name":    CreateStream{Name: huge},
	} {
		if _, err := DecodeCommand(EncodeCommand(cmd)); err == nil {
			t.Errorf("%s: encoding decoded", name)
		}
	}
	// A pointer to a command encodes and applies like the value.
	ptrCmd := &CreateStream{Name: "via-pointer"}
	if got, err := DecodeCommand(EncodeCommand(ptrCmd)); err != nil || got != (CreateStream{Name: "via-pointer"}) {
		t.Fatalf("pointer command: %v %v", got, err)
	}
	s := seeded(t)
	if res := s.Apply(ApplyContext{Op: 1}, ptrCmd); !res.OK() {
		t.Fatalf("apply pointer command: %d", res.Code)
	}
}

func TestReplaceFromTakesWholeState(t *testing.T) {
	src := NewState()
	src.Apply(ApplyContext{Op: 1, Timestamp: 10}, CreateStream{Name: "orders"})
	want := src.Snapshot()
	restored, err := Restore(want)
	if err != nil {
		t.Fatal(err)
	}
	dst := NewState()
	dst.Apply(ApplyContext{Op: 1, Timestamp: 5}, CreateStream{Name: "other"})
	dst.ReplaceFrom(restored)
	if got := dst.Snapshot(); string(got) != string(want) {
		t.Fatalf("after ReplaceFrom the snapshot differs from the source's")
	}
	if op, ts := dst.LastApplied(); op != 1 || ts != 10 {
		t.Fatalf("LastApplied = %d, %d; want 1, 10", op, ts)
	}
}
