package metadata

import (
	"bytes"
	"testing"
)

// cheapHash returns a valid argon2id PHC string with tiny parameters so
// tests stay fast (verification reads the parameters from the string).
func cheapHash(password string) string {
	return hashWith(password, []byte("test-salt-16byte"), argonParams{memoryKiB: 8, time: 1, threads: 1})
}

const (
	aliceID = 1 // no permissions
	bobID   = 2 // global manage_streams etc. per test
)

var (
	clientA = ClientID{Lo: 1}
	clientB = ClientID{Lo: 2}
	clientC = ClientID{Lo: 3}
)

type fixture struct {
	t     *testing.T
	s     *State
	op    uint64
	nowUs uint64
}

// newFixture: root (0), alice (1, no permissions), bob (2, inactive),
// stream "s1" (0) with topic "t1" (0, 3 partitions) and group "g1" (0).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, s: NewState(), nowUs: 1_000_000}
	if err := f.s.SeedRoot("root", cheapHash("secret")); err != nil {
		t.Fatalf("seed root: %v", err)
	}
	f.mustOK(RootUserID, CreateUser{Username: "alice", PasswordHash: cheapHash("alicepw"), Status: UserActive})
	f.mustOK(RootUserID, CreateUser{Username: "bob", PasswordHash: cheapHash("bobpw"), Status: UserInactive,
		Permissions: RootPermissions()})
	f.mustOK(RootUserID, CreateStream{Name: "s1"})
	f.mustOK(RootUserID, f.topic("t1", 3))
	f.mustOK(RootUserID, CreateConsumerGroup{Stream: ByID(0), Topic: ByID(0), Name: "g1"})
	return f
}

func (f *fixture) topic(name string, partitions uint32) CreateTopic {
	return CreateTopic{Stream: ByID(0), Name: name, PartitionsCount: partitions, MessageExpiry: Never,
		Compression: CompressionNone, MaxTopicSize: Never,
		Options: DefaultTopicOptions(DurabilityReplicated, DurabilityReplicated)}
}

func (f *fixture) apply(user uint32, cmd Command) Result {
	f.op++
	f.nowUs += 1000
	return f.s.Apply(ApplyContext{Op: f.op, Timestamp: f.nowUs, UserID: user}, cmd)
}

func (f *fixture) mustOK(user uint32, cmd Command) Result {
	f.t.Helper()
	res := f.apply(user, cmd)
	if res.Code != CodeOK {
		f.t.Fatalf("%T: code %d, want 0", cmd, res.Code)
	}
	return res
}

// mustReject applies cmd and checks the code and that the state (its
// snapshot, with the same op identity) is unchanged.
func (f *fixture) mustReject(user uint32, cmd Command, want uint32) {
	f.t.Helper()
	before := f.s.Snapshot()
	res := f.s.Apply(ApplyContext{Op: f.op, Timestamp: f.nowUs, UserID: user}, cmd)
	if res.Code != want {
		f.t.Fatalf("%T %+v: code %d, want %d", cmd, cmd, res.Code, want)
	}
	if after := f.s.Snapshot(); !bytes.Equal(before, after) {
		f.t.Fatalf("%T: rejected command changed the state", cmd)
	}
}
