package metadata

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/zeebo/xxh3"
)

func xxh3Hash(b []byte) uint64 { return xxh3.Hash(b) }

// randomCommand draws a command (valid or not) over a small name space so
// creations, collisions, deletions and rejections all happen.
func randomCommand(r *rand.Rand) (uint32, Command) {
	name := func(prefix string) string { return prefix + itoa(r.IntN(4)) }
	ident := func(prefix string) Ident {
		if r.IntN(2) == 0 {
			return ByID(uint32(r.IntN(4)))
		}
		return ByName(name(prefix))
	}
	client := ClientID{Lo: uint64(r.IntN(5) + 1)}
	user := uint32(r.IntN(4)) // root, alice, bob(inactive) or unknown/new
	if r.IntN(3) > 0 {
		user = RootUserID
	}
	switch r.IntN(20) {
	case 0:
		return user, CreateStream{Name: name("s")}
	case 1:
		return user, UpdateStream{Stream: ident("s"), Name: name("s")}
	case 2:
		return user, DeleteStream{Stream: ident("s")}
	case 3:
		return user, PurgeStream{Stream: ident("s")}
	case 4, 5:
		c := defaultTopic()
		c.Stream, c.Name, c.PartitionsCount = ident("s"), name("t"), uint32(r.IntN(5))
		return user, c
	case 6:
		return user, UpdateTopic{Stream: ident("s"), Topic: ident("t"), Name: name("t"), MessageExpiry: uint64(r.IntN(9)),
			Compression: Compression(r.IntN(3)), MaxTopicSize: Never}
	case 7:
		return user, DeleteTopic{Stream: ident("s"), Topic: ident("t")}
	case 8:
		return user, CreatePartitions{Stream: ident("s"), Topic: ident("t"), Count: uint32(r.IntN(4))}
	case 9:
		return user, DeletePartitions{Stream: ident("s"), Topic: ident("t"), Count: uint32(r.IntN(3))}
	case 10:
		return user, TruncatePartition{Stream: ident("s"), Topic: ident("t"), PartitionID: uint32(r.IntN(3)), UpToOffset: uint64(r.IntN(100))}
	case 11:
		return user, CreateConsumerGroup{Stream: ident("s"), Topic: ident("t"), Name: name("g")}
	case 12:
		return user, JoinConsumerGroup{Stream: ident("s"), Topic: ident("t"), Group: ident("g"), Client: client}
	case 13:
		return user, LeaveConsumerGroup{Stream: ident("s"), Topic: ident("t"), Group: ident("g"), Client: client}
	case 14:
		return user, RemoveConsumerGroupMember{Client: client}
	case 15:
		return user, DeleteConsumerGroup{Stream: ident("s"), Topic: ident("t"), Group: ident("g")}
	case 16:
		return user, CreateUser{Username: name("user"), PasswordHash: "hash-" + name("p"), Status: UserStatus(1 + r.IntN(2)),
			Permissions: &Permissions{Streams: map[uint32]StreamPermissions{uint32(r.IntN(3)): {ReadStream: true,
				Topics: map[uint32]TopicPermissions{1: {PollMessages: true}}}}}}
	case 17:
		return user, UpdatePermissions{User: ident("user"), Permissions: &Permissions{Global: GlobalPermissions{ReadStreams: r.IntN(2) == 0}}}
	case 18:
		return user, CreatePersonalAccessToken{Name: name("tok"), TokenHash: HashToken(name("raw")), Expiry: uint64(r.IntN(3) * 5000)}
	default:
		return user, DeleteExpiredTokens{}
	}
}

func seeded(t *testing.T) *State {
	s := NewState()
	if err := s.SeedRoot("root", cheapHash("secret")); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeterminism: two states fed the same sequence (one through the
// codec) end in identical snapshots; a restored snapshot re-encodes to
// the same bytes and keeps evolving identically.
func TestDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	a, b := seeded(t), seeded(t)
	var restored *State
	accepted := 0
	for op := uint64(1); op <= 3000; op++ {
		user, cmd := randomCommand(r)
		ctx := ApplyContext{Op: op, Timestamp: op * 1000, UserID: user}
		ra := a.Apply(ctx, cmd)
		rb, err := b.ApplyEncoded(ctx, EncodeCommand(cmd))
		if err != nil {
			t.Fatalf("op %d: decode %T: %v", op, cmd, err)
		}
		if ra.Code != rb.Code || ra.Revision != rb.Revision {
			t.Fatalf("op %d %T: results differ %+v vs %+v", op, cmd, ra, rb)
		}
		if restored != nil {
			if rr := restored.Apply(ctx, cmd); !reflect.DeepEqual(rr, ra) {
				t.Fatalf("op %d %T: restored state result %+v, original %+v", op, cmd, rr, ra)
			}
		}
		if ra.OK() {
			accepted++
		}
		if op == 1500 {
			snap := a.Snapshot()
			var err error
			if restored, err = Restore(snap); err != nil {
				t.Fatalf("restore at op %d: %v", op, err)
			}
			if again := restored.Snapshot(); !bytes.Equal(again, snap) {
				t.Fatal("restored state re-encodes differently")
			}
		}
	}
	sa, sb, sr := a.Snapshot(), b.Snapshot(), restored.Snapshot()
	if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sr) {
		t.Fatal("snapshots differ after the same command sequence")
	}
	if accepted < 300 {
		t.Fatalf("only %d of 3000 commands accepted; the generator is not exercising the state", accepted)
	}
	if !reflect.DeepEqual(a.Streams(), restored.Streams()) || !reflect.DeepEqual(a.Users(), restored.Users()) {
		t.Fatal("read views differ between original and restored state")
	}
	t.Logf("accepted %d/3000, snapshot %d bytes", accepted, len(sa))
}

func TestRestoreRejectsDamage(t *testing.T) {
	f := newFixture(t)
	f.mustOK(RootUserID, JoinConsumerGroup{Stream: ByID(0), Topic: ByID(0), Group: ByID(0), Client: clientA})
	f.mustOK(aliceID, CreatePersonalAccessToken{Name: "token", TokenHash: HashToken("t")})
	snap := f.s.Snapshot()
	if _, err := Restore(snap); err != nil {
		t.Fatalf("clean restore: %v", err)
	}
	for i := 0; i < len(snap); i++ {
		bad := append([]byte(nil), snap...)
		bad[i] ^= 0x10
		if _, err := Restore(bad); err == nil {
			t.Fatalf("bit flip at byte %d accepted", i)
		}
	}
	for n := 0; n < len(snap); n++ {
		if _, err := Restore(snap[:n]); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}
}

// TestRestoreChecksInvariants: a well-checksummed snapshot with an
// inconsistent body (duplicate stream name, future version) is refused.
func TestRestoreChecksInvariants(t *testing.T) {
	reseal := func(body []byte) []byte {
		w := &writer{buf: append([]byte(nil), body...)}
		w.u64(xxh3Hash(body))
		return w.buf
	}
	s := seeded(t)
	s.Apply(ApplyContext{Op: 1, Timestamp: 1}, CreateStream{Name: "dup"})
	s.Apply(ApplyContext{Op: 2, Timestamp: 2}, CreateStream{Name: "dux"})
	snap := s.Snapshot()
	body := snap[:len(snap)-snapshotTrailer]
	i := bytes.LastIndex(body, []byte("dux"))
	dup := append([]byte(nil), body...)
	copy(dup[i:], "dup")
	if _, err := Restore(reseal(dup)); err == nil {
		t.Fatal("duplicate stream name accepted")
	}
	ver := append([]byte(nil), body...)
	ver[4] = 9
	if _, err := Restore(reseal(ver)); err == nil {
		t.Fatal("unknown snapshot version accepted")
	}
	if _, err := Restore(reseal(body)); err != nil {
		t.Fatalf("resealed original refused: %v", err)
	}
}
