package metadata

import (
	"testing"
)

// bigState: 100 streams × 10 topics × 10 partitions, one group per topic
// with 3 members, 100 users.
func bigState(b *testing.B) *State {
	s := NewState()
	if err := s.SeedRoot("root", cheapHash("secret")); err != nil {
		b.Fatal(err)
	}
	op := uint64(0)
	apply := func(cmd Command) {
		op++
		if res := s.Apply(ApplyContext{Op: op, Timestamp: op}, cmd); !res.OK() {
			b.Fatalf("%T: %d", cmd, res.Code)
		}
	}
	for si := 0; si < 100; si++ {
		apply(CreateStream{Name: "stream-" + itoa(si)})
		for ti := 0; ti < 10; ti++ {
			c := defaultTopic()
			c.Stream, c.Name, c.PartitionsCount = ByID(uint32(si)), "topic-"+itoa(ti), 10
			apply(c)
			apply(CreateConsumerGroup{Stream: ByID(uint32(si)), Topic: ByID(uint32(ti)), Name: "group"})
			for m := uint64(1); m <= 3; m++ {
				apply(JoinConsumerGroup{Stream: ByID(uint32(si)), Topic: ByID(uint32(ti)), Group: ByID(0), Client: ClientID{Lo: m}})
			}
		}
	}
	for u := 0; u < 100; u++ {
		apply(CreateUser{Username: "user-" + itoa(u), PasswordHash: cheapHash("pw"), Status: UserActive, Permissions: RootPermissions()})
	}
	return s
}

func BenchmarkApplyEncodedCreateDeleteStream(b *testing.B) {
	s := bigState(b)
	create, del := EncodeCommand(CreateStream{Name: "bench"}), EncodeCommand(DeleteStream{Stream: ByName("bench")})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx := ApplyContext{Op: uint64(i), Timestamp: uint64(i)}
		if res, _ := s.ApplyEncoded(ctx, create); !res.OK() {
			b.Fatal(res.Code)
		}
		if res, _ := s.ApplyEncoded(ctx, del); !res.OK() {
			b.Fatal(res.Code)
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	s := bigState(b)
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		n = len(s.Snapshot())
	}
	b.ReportMetric(float64(n), "bytes")
}

func BenchmarkRestore(b *testing.B) {
	snap := bigState(b).Snapshot()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Restore(snap); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashPassword(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := HashPassword("benchmark-password"); err != nil {
			b.Fatal(err)
		}
	}
}
