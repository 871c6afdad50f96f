package metadata

import (
	"strings"
	"testing"
)

func TestApplyRejections(t *testing.T) {
	long := strings.Repeat("x", 256)
	s0, t0, g0 := ByID(0), ByID(0), ByID(0)
	missing := ByID(77)
	twoFiftySix := "user" + strings.Repeat("u", 47) // 51 bytes
	cases := []struct {
		name string
		user uint32
		cmd  Command
		want uint32
	}{
		{"create stream unauthorized", aliceID, CreateStream{Name: "x"}, CodeUnauthorized},
		{"create stream inactive user", bobID, CreateStream{Name: "x"}, CodeUnauthorized},
		{"create stream unknown user", 99, CreateStream{Name: "x"}, CodeUnauthorized},
		{"create stream blank name", RootUserID, CreateStream{Name: "  "}, CodeInvalidStreamName},
		{"create stream long name", RootUserID, CreateStream{Name: long}, CodeInvalidStreamName},
		{"create stream duplicate", RootUserID, CreateStream{Name: "s1"}, CodeStreamNameExists},
		{"update stream missing", RootUserID, UpdateStream{Stream: missing, Name: "x"}, CodeStreamIDNotFound},
		{"update stream missing by name", RootUserID, UpdateStream{Stream: ByName("nope"), Name: "x"}, CodeStreamIDNotFound},
		{"update stream unauthorized", aliceID, UpdateStream{Stream: s0, Name: "x"}, CodeUnauthorized},
		{"update stream bad name", RootUserID, UpdateStream{Stream: s0, Name: ""}, CodeInvalidStreamName},
		{"delete stream missing", RootUserID, DeleteStream{Stream: missing}, CodeStreamIDNotFound},
		{"delete stream unauthorized", aliceID, DeleteStream{Stream: s0}, CodeUnauthorized},
		{"purge stream missing", RootUserID, PurgeStream{Stream: missing}, CodeStreamIDNotFound},
		{"purge stream unauthorized", aliceID, PurgeStream{Stream: s0}, CodeUnauthorized},
		{"create topic missing stream", RootUserID, CreateTopic{Stream: missing, Name: "x"}, CodeStreamIDNotFound},
		{"create topic unauthorized", aliceID, CreateTopic{Stream: s0, Name: "x"}, CodeUnauthorized},
		{"create topic duplicate", RootUserID, withTopicName(defaultTopic(), "t1"), CodeTopicNameExists},
		{"create topic bad name", RootUserID, withTopicName(defaultTopic(), long), CodeInvalidTopicName},
		{"create topic 1001 partitions", RootUserID, withPartitions(defaultTopic(), 1001), CodeInvalidPartitions},
		{"create topic bad compression", RootUserID, withCompression(defaultTopic(), 9), CodeInvalidOptionValue},
		{"create topic small segment", RootUserID, withSegment(defaultTopic(), 1<<19), CodeInvalidOptionValue},
		{"create topic unaligned segment", RootUserID, withSegment(defaultTopic(), 1<<20+1), CodeInvalidOptionValue},
		{"create topic max size below segment", RootUserID, withMaxSize(defaultTopic(), 1<<20), CodeInvalidOptionValue},
		{"create topic bad durability", RootUserID, withDurability(defaultTopic(), 0), CodeInvalidOptionValue},
		{"create topic preallocate too big", RootUserID, withPrealloc(withPartitions(defaultTopic(), 65)), CodeInvalidOptionValue},
		{"update topic missing stream", RootUserID, UpdateTopic{Stream: missing, Topic: t0, Name: "x", Compression: CompressionNone, MaxTopicSize: Never}, CodeStreamIDNotFound},
		{"update topic missing topic", RootUserID, UpdateTopic{Stream: s0, Topic: missing, Name: "x", Compression: CompressionNone, MaxTopicSize: Never}, CodeTopicIDNotFound},
		{"update topic unauthorized", aliceID, UpdateTopic{Stream: s0, Topic: t0, Name: "x", Compression: CompressionNone, MaxTopicSize: Never}, CodeUnauthorized},
		{"update topic bad compression", RootUserID, UpdateTopic{Stream: s0, Topic: t0, Name: "x", Compression: 0, ExplicitOptions: OptCompression}, CodeInvalidOptionValue},
		{"update topic max size below segment", RootUserID, UpdateTopic{Stream: s0, Topic: t0, Name: "x", MaxTopicSize: 1 << 20, ExplicitOptions: OptMaxTopicSize}, CodeInvalidOptionValue},
		{"delete topic missing", RootUserID, DeleteTopic{Stream: s0, Topic: missing}, CodeTopicIDNotFound},
		{"delete topic missing stream", RootUserID, DeleteTopic{Stream: missing, Topic: t0}, CodeStreamIDNotFound},
		{"delete topic unauthorized", aliceID, DeleteTopic{Stream: s0, Topic: t0}, CodeUnauthorized},
		{"purge topic missing", RootUserID, PurgeTopic{Stream: s0, Topic: missing}, CodeTopicIDNotFound},
		{"purge topic unauthorized", aliceID, PurgeTopic{Stream: s0, Topic: t0}, CodeUnauthorized},
		{"create partitions zero", RootUserID, CreatePartitions{Stream: s0, Topic: t0, Count: 0}, CodeInvalidPartitions},
		{"create partitions 1001", RootUserID, CreatePartitions{Stream: s0, Topic: t0, Count: 1001}, CodeInvalidPartitions},
		{"create partitions missing topic", RootUserID, CreatePartitions{Stream: s0, Topic: missing, Count: 1}, CodeTopicIDNotFound},
		{"create partitions unauthorized", aliceID, CreatePartitions{Stream: s0, Topic: t0, Count: 1}, CodeUnauthorized},
		{"delete partitions more than exist", RootUserID, DeletePartitions{Stream: s0, Topic: t0, Count: 4}, CodeInvalidPartitions},
		{"delete partitions zero", RootUserID, DeletePartitions{Stream: s0, Topic: t0, Count: 0}, CodeInvalidPartitions},
		{"delete partitions missing stream", RootUserID, DeletePartitions{Stream: missing, Topic: t0, Count: 1}, CodeStreamIDNotFound},
		{"truncate partition missing", RootUserID, TruncatePartition{Stream: s0, Topic: t0, PartitionID: 3, UpToOffset: 5}, CodePartitionNotFound},
		{"truncate partition missing topic", RootUserID, TruncatePartition{Stream: s0, Topic: missing, UpToOffset: 5}, CodeTopicIDNotFound},
		{"truncate partition unauthorized", aliceID, TruncatePartition{Stream: s0, Topic: t0, UpToOffset: 5}, CodeUnauthorized},
		{"create group duplicate", RootUserID, CreateConsumerGroup{Stream: s0, Topic: t0, Name: "g1"}, CodeGroupNameExists},
		{"create group bad name", RootUserID, CreateConsumerGroup{Stream: s0, Topic: t0, Name: ""}, CodeInvalidGroupName},
		{"create group missing stream", RootUserID, CreateConsumerGroup{Stream: missing, Topic: t0, Name: "g"}, CodeStreamIDNotFound},
		{"create group missing topic", RootUserID, CreateConsumerGroup{Stream: s0, Topic: missing, Name: "g"}, CodeTopicIDNotFound},
		{"create group unauthorized", aliceID, CreateConsumerGroup{Stream: s0, Topic: t0, Name: "g"}, CodeUnauthorized},
		{"delete group missing", RootUserID, DeleteConsumerGroup{Stream: s0, Topic: t0, Group: missing}, CodeGroupIDNotFound},
		{"delete group missing by name", RootUserID, DeleteConsumerGroup{Stream: s0, Topic: t0, Group: ByName("zz")}, CodeGroupIDNotFound},
		{"delete group unauthorized", aliceID, DeleteConsumerGroup{Stream: s0, Topic: t0, Group: g0}, CodeUnauthorized},
		{"join group missing", RootUserID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: missing, Client: clientA}, CodeGroupIDNotFound},
		{"join group missing topic", RootUserID, JoinConsumerGroup{Stream: s0, Topic: missing, Group: g0, Client: clientA}, CodeTopicIDNotFound},
		{"join group missing stream", RootUserID, JoinConsumerGroup{Stream: missing, Topic: t0, Group: g0, Client: clientA}, CodeStreamIDNotFound},
		{"join group unauthorized", aliceID, JoinConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA}, CodeUnauthorized},
		{"leave group not member", RootUserID, LeaveConsumerGroup{Stream: s0, Topic: t0, Group: g0, Client: clientA}, CodeGroupMemberNotFound},
		{"leave group missing", RootUserID, LeaveConsumerGroup{Stream: s0, Topic: t0, Group: missing, Client: clientA}, CodeGroupIDNotFound},
		{"leave group missing stream", RootUserID, LeaveConsumerGroup{Stream: missing, Topic: t0, Group: g0, Client: clientA}, CodeStreamIDNotFound},
		{"create user unauthorized", aliceID, CreateUser{Username: "carol", PasswordHash: "h", Status: UserActive}, CodeUnauthorized},
		{"create user short name", RootUserID, CreateUser{Username: "ab", PasswordHash: "h", Status: UserActive}, CodeInvalidUsername},
		{"create user long name", RootUserID, CreateUser{Username: twoFiftySix, PasswordHash: "h", Status: UserActive}, CodeInvalidUsername},
		{"create user duplicate", RootUserID, CreateUser{Username: "alice", PasswordHash: "h", Status: UserActive}, CodeUserAlreadyExists},
		{"create user bad status", RootUserID, CreateUser{Username: "carol", PasswordHash: "h", Status: 3}, CodeInvalidUserStatus},
		{"create user empty hash", RootUserID, CreateUser{Username: "carol", Status: UserActive}, CodeInvalidPassword},
		{"update user missing", RootUserID, UpdateUser{User: missing, Username: ptr("carol")}, CodeResourceNotFound},
		{"update user unauthorized", aliceID, UpdateUser{User: ByID(aliceID), Username: ptr("carol")}, CodeUnauthorized},
		{"update user bad name", RootUserID, UpdateUser{User: ByID(aliceID), Username: ptr("a")}, CodeInvalidUsername},
		{"update user duplicate name", RootUserID, UpdateUser{User: ByID(aliceID), Username: ptr("bob")}, CodeUserAlreadyExists},
		{"update user bad status", RootUserID, UpdateUser{User: ByID(aliceID), Status: ptr(UserStatus(7))}, CodeInvalidUserStatus},
		{"delete user root", RootUserID, DeleteUser{User: ByID(RootUserID)}, CodeCannotDeleteUser},
		{"delete user missing", RootUserID, DeleteUser{User: ByName("nobody")}, CodeResourceNotFound},
		{"delete user unauthorized", aliceID, DeleteUser{User: ByID(bobID)}, CodeUnauthorized},
		{"change password missing", RootUserID, ChangePassword{User: missing, NewPasswordHash: "h"}, CodeResourceNotFound},
		{"change password mismatch", aliceID, ChangePassword{User: ByID(aliceID), CurrentPasswordMismatch: true}, CodeInvalidCredentials},
		{"change password other user", aliceID, ChangePassword{User: ByID(bobID), NewPasswordHash: "h"}, CodeUnauthorized},
		{"change password empty hash", aliceID, ChangePassword{User: ByID(aliceID)}, CodeInvalidPassword},
		{"update permissions root", RootUserID, UpdatePermissions{User: ByID(RootUserID)}, CodeCannotChangePerms},
		{"update permissions missing", RootUserID, UpdatePermissions{User: missing}, CodeResourceNotFound},
		{"update permissions unauthorized", aliceID, UpdatePermissions{User: ByID(aliceID), Permissions: RootPermissions()}, CodeUnauthorized},
		{"create pat short name", aliceID, CreatePersonalAccessToken{Name: "ab", TokenHash: HashToken("x")}, CodeInvalidPATName},
		{"create pat long name", aliceID, CreatePersonalAccessToken{Name: strings.Repeat("n", 31), TokenHash: HashToken("x")}, CodeInvalidPATName},
		{"create pat bad hash", aliceID, CreatePersonalAccessToken{Name: "tok", TokenHash: "XYZ"}, CodeInvalidPAT},
		{"create pat unknown user", 99, CreatePersonalAccessToken{Name: "tok", TokenHash: HashToken("x")}, CodeUnauthorized},
		{"delete pat missing", aliceID, DeletePersonalAccessToken{Name: "nope"}, CodeResourceNotFound},
		{"nil command", RootUserID, nil, CodeInvalidCommand},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustReject(tc.user, tc.cmd, tc.want)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func defaultTopic() CreateTopic {
	return CreateTopic{Stream: ByID(0), Name: "new", PartitionsCount: 1, MessageExpiry: Never,
		Compression: CompressionNone, MaxTopicSize: Never,
		Options: DefaultTopicOptions(DurabilityReplicated, DurabilityPersisted)}
}

func withTopicName(c CreateTopic, n string) CreateTopic        { c.Name = n; return c }
func withPartitions(c CreateTopic, n uint32) CreateTopic       { c.PartitionsCount = n; return c }
func withCompression(c CreateTopic, v Compression) CreateTopic { c.Compression = v; return c }
func withSegment(c CreateTopic, v uint64) CreateTopic          { c.Options.SegmentSize = v; return c }
func withMaxSize(c CreateTopic, v uint64) CreateTopic          { c.MaxTopicSize = v; return c }
func withDurability(c CreateTopic, d Durability) CreateTopic   { c.Options.Durability = d; return c }
func withPrealloc(c CreateTopic) CreateTopic                   { c.Options.PreallocateSegments = true; return c }

func TestApplyLimits(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < PATsPerUserMax; i++ {
		f.mustOK(aliceID, CreatePersonalAccessToken{Name: "tok" + itoa(i), TokenHash: HashToken(itoa(i))})
	}
	f.mustReject(aliceID, CreatePersonalAccessToken{Name: "extra", TokenHash: HashToken("extra")}, CodePATLimitReached)
	f.mustReject(aliceID, CreatePersonalAccessToken{Name: "tok0", TokenHash: HashToken("y")}, CodePATAlreadyExists)

	// Partition id space: fill to the bound in chunks of 1000.
	f.mustOK(RootUserID, withTopicName(withPartitions(defaultTopic(), 1000), "big"))
	big := ByName("big")
	for total := 1000; total < PartitionsPerTopicMax; total += 1000 {
		f.mustOK(RootUserID, CreatePartitions{Stream: ByID(0), Topic: big, Count: 1000})
	}
	f.mustReject(RootUserID, CreatePartitions{Stream: ByID(0), Topic: big, Count: 1}, CodePartitionIDExhausted)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestStreamAndTopicLifecycle(t *testing.T) {
	f := newFixture(t)
	res := f.mustOK(RootUserID, CreateStream{Name: "s2"})
	if res.Stream == nil || res.Stream.ID != 1 || res.Stream.CreatedAt != f.nowUs || len(res.Stream.Topics) != 0 {
		t.Fatalf("created stream view %+v", res.Stream)
	}
	f.mustOK(RootUserID, CreateStream{Name: "s3"})
	f.mustOK(RootUserID, DeleteStream{Stream: ByName("s2")})
	// Lowest free id is reused.
	if res := f.mustOK(RootUserID, CreateStream{Name: "s4"}); res.Stream.ID != 1 {
		t.Fatalf("reused stream id %d, want 1", res.Stream.ID)
	}
	f.mustOK(RootUserID, UpdateStream{Stream: ByID(1), Name: "s4-renamed"})
	if _, ok := f.s.GetStream(ByName("s4")); ok {
		t.Fatal("old stream name still resolves")
	}
	if st, ok := f.s.GetStream(ByName("s4-renamed")); !ok || st.ID != 1 {
		t.Fatalf("renamed stream lookup: %+v %v", st, ok)
	}
	// Renaming to its own name is allowed.
	f.mustOK(RootUserID, UpdateStream{Stream: ByID(1), Name: "s4-renamed"})
	f.mustReject(RootUserID, UpdateStream{Stream: ByID(1), Name: "s1"}, CodeStreamNameExists)

	tr := f.mustOK(RootUserID, withTopicName(defaultTopic(), "t2"))
	if tr.Topic == nil || tr.Topic.ID != 1 || len(tr.Topic.Partitions) != 1 || tr.Topic.Options.ConsumerOffsetDurability != DurabilityPersisted {
		t.Fatalf("created topic view %+v", tr.Topic)
	}
	f.mustOK(RootUserID, UpdateTopic{Stream: ByID(0), Topic: ByName("t2"), Name: "t2b", MessageExpiry: 5_000_000,
		Compression: CompressionGzip, MaxTopicSize: 2 << 30, ExplicitOptions: OptCompression | OptMessageExpiry}) // size not sent: kept
	topic, code := f.s.GetTopic(ByID(0), ByName("t2b"))
	if code != CodeOK || topic.Compression != CompressionGzip || topic.MessageExpiry != 5_000_000 ||
		topic.MaxTopicSize != Never || topic.ExplicitOptions != OptCompression|OptMessageExpiry {
		t.Fatalf("updated topic %+v code %d", topic, code)
	}
	f.mustReject(RootUserID, UpdateTopic{Stream: ByID(0), Topic: ByID(1), Name: "t1", Compression: CompressionNone, MaxTopicSize: Never}, CodeTopicNameExists)
	// A rename alone (no keys sent) keeps every setting; create-only bits
	// in the command are ignored; a sent key becomes explicit.
	f.mustOK(RootUserID, UpdateTopic{Stream: ByID(0), Topic: ByID(1), Name: "t2b", ExplicitOptions: OptSegmentSize})
	f.mustOK(RootUserID, UpdateTopic{Stream: ByID(0), Topic: ByID(1), Name: "t2b", MaxTopicSize: 3 << 30, ExplicitOptions: OptMaxTopicSize})
	topic, _ = f.s.GetTopic(ByID(0), ByID(1))
	if topic.Compression != CompressionGzip || topic.MessageExpiry != 5_000_000 || topic.MaxTopicSize != 3<<30 ||
		topic.ExplicitOptions != OptCompression|OptMessageExpiry|OptMaxTopicSize {
		t.Fatalf("patched topic %+v", topic)
	}

	f.mustOK(RootUserID, TruncatePartition{Stream: ByID(0), Topic: ByID(0), PartitionID: 2, UpToOffset: 50})
	f.mustOK(RootUserID, TruncatePartition{Stream: ByID(0), Topic: ByID(0), PartitionID: 2, UpToOffset: 10})
	if p, _ := f.s.GetPartition(ByID(0), ByID(0), 2); p.DeletedUpToOffset != 50 {
		t.Fatalf("deleted_up_to_offset %d, want 50 (never moves back)", p.DeletedUpToOffset)
	}
	f.mustOK(RootUserID, PurgeTopic{Stream: ByID(0), Topic: ByID(0)})
	f.mustOK(RootUserID, PurgeStream{Stream: ByID(0)})
	if p, _ := f.s.GetPartition(ByID(0), ByID(0), 0); p.PurgeGeneration != 2 {
		t.Fatalf("purge generation %d, want 2", p.PurgeGeneration)
	}
	if p, _ := f.s.GetPartition(ByID(0), ByID(1), 0); p.PurgeGeneration != 1 {
		t.Fatalf("purge generation of t2b %d, want 1", p.PurgeGeneration)
	}

	// Delete + recreate reuses partition ids with a new created_revision.
	before, _ := f.s.GetPartition(ByID(0), ByID(0), 2)
	f.mustOK(RootUserID, DeletePartitions{Stream: ByID(0), Topic: ByID(0), Count: 1})
	if _, code := f.s.GetPartition(ByID(0), ByID(0), 2); code != CodePartitionNotFound {
		t.Fatalf("deleted partition code %d", code)
	}
	f.mustOK(RootUserID, CreatePartitions{Stream: ByID(0), Topic: ByID(0), Count: 2})
	after, _ := f.s.GetPartition(ByID(0), ByID(0), 2)
	if after.CreatedRevision <= before.CreatedRevision || after.DeletedUpToOffset != 0 {
		t.Fatalf("recreated partition %+v, before %+v", after, before)
	}
	f.mustOK(RootUserID, DeleteTopic{Stream: ByID(0), Topic: ByName("t2b")})
	if _, code := f.s.GetTopic(ByID(0), ByID(1)); code != CodeTopicIDNotFound {
		t.Fatalf("deleted topic code %d", code)
	}
	if _, code := f.s.GetTopic(ByID(9), ByID(0)); code != CodeStreamIDNotFound {
		t.Fatalf("missing stream code %d", code)
	}
	streams, topics, partitions, groups := f.s.Counts()
	if streams != 3 || topics != 1 || partitions != 4 || groups != 1 {
		t.Fatalf("counts %d %d %d %d", streams, topics, partitions, groups)
	}
}

func TestUserLifecycle(t *testing.T) {
	f := newFixture(t)
	res := f.mustOK(RootUserID, CreateUser{Username: "carol", PasswordHash: cheapHash("carolpw"), Status: UserActive,
		Permissions: &Permissions{Streams: map[uint32]StreamPermissions{0: {ReadStream: true}}}})
	if res.User == nil || res.User.ID != 3 || res.User.Permissions == nil {
		t.Fatalf("created user view %+v", res.User)
	}
	// The result is a copy: mutating it does not touch the state.
	res.User.Permissions.Global.ManageServers = true
	if u, _ := f.s.GetUser(ByID(3)); u.Permissions.Global.ManageServers {
		t.Fatal("result aliases state")
	}
	f.mustOK(RootUserID, UpdateUser{User: ByName("carol"), Username: ptr("carla"), Status: ptr(UserInactive)})
	if u, ok := f.s.GetUser(ByName("carla")); !ok || u.Status != UserInactive {
		t.Fatalf("updated user %+v", u)
	}
	f.mustOK(RootUserID, UpdatePermissions{User: ByID(3), Permissions: nil})
	if u, _ := f.s.GetUser(ByID(3)); u.Permissions != nil {
		t.Fatal("permissions not cleared")
	}
	// Self password change without manage_users.
	f.mustOK(aliceID, ChangePassword{User: ByID(aliceID), NewPasswordHash: cheapHash("newpass")})
	if _, code := f.s.VerifyPassword("alice", "newpass"); code != CodeOK {
		t.Fatalf("login with new password: %d", code)
	}
	// Token lifecycle; deleting the user drops its tokens.
	f.mustOK(3, CreatePersonalAccessToken{Name: "ci-token", TokenHash: HashToken("tok-carla")})
	f.mustOK(RootUserID, DeleteUser{User: ByID(3)})
	if _, code := f.s.VerifyPAT("tok-carla", f.nowUs); code != CodeInvalidPAT {
		t.Fatalf("token of deleted user: %d", code)
	}
	if got := len(f.s.Users()); got != 3 {
		t.Fatalf("users %d, want 3", got)
	}
	if res := f.mustOK(RootUserID, CreateUser{Username: "dave", PasswordHash: "h", Status: UserActive}); res.User.ID != 3 {
		t.Fatalf("lowest free user id %d, want 3", res.User.ID)
	}
}

func TestTopicAndUserLimits(t *testing.T) {
	f := newFixture(t)
	for i := 1; i < TopicsPerStreamMax; i++ { // t1 holds id 0
		f.mustOK(RootUserID, withPartitions(withTopicName(defaultTopic(), "topic-"+itoa(i)), 0))
	}
	f.mustReject(RootUserID, withTopicName(defaultTopic(), "one-too-many"), CodeTooManyTopics)

	for i := 3; i < UsersMax; i++ { // root, alice, bob hold 0..2
		f.mustOK(RootUserID, CreateUser{Username: "user-" + itoa(i), PasswordHash: "h", Status: UserActive})
	}
	f.mustReject(RootUserID, CreateUser{Username: "one-too-many", PasswordHash: "h", Status: UserActive}, CodeUsersLimitReached)
}

// TestLowestFreeBound covers the id-space exhaustion path used for
// streams (1020), whose 2^20 bound is too large to fill in a unit test.
func TestLowestFreeBound(t *testing.T) {
	used := map[uint32]bool{0: true, 1: true, 3: true}
	hint := 0
	if id, ok := lowestFree(used, 8, &hint); !ok || id != 2 || hint != 3 {
		t.Fatalf("lowest free %d %v hint %d", id, ok, hint)
	}
	used[2] = true
	if id, ok := lowestFree(used, 8, &hint); !ok || id != 4 {
		t.Fatalf("next free %d %v", id, ok)
	}
	lowerHint(&hint, 1)
	delete(used, 1)
	if id, _ := lowestFree(used, 8, &hint); id != 1 {
		t.Fatalf("freed id not reused: %d", id)
	}
	full := map[uint32]bool{0: true, 1: true}
	hint = 0
	if _, ok := lowestFree(full, 2, &hint); ok {
		t.Fatal("full id space reported a free id")
	}
}
