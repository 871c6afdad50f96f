package node

import (
	"context"
	"fmt"
	"github.com/lodestream/lodestream/config"
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/metadata"
)

// BenchmarkCreateTopicAmongPartitions: the metadata apply plus the
// partition plane's reconcile of one CreateTopic (10 partitions) while
// `existing` partitions are already served. Creation must not slow down
// as partitions accumulate (issue: hardening, creation cost).
func BenchmarkCreateTopicAmongPartitions(b *testing.B) {
	for _, existing := range []int{0, 1000, 12000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			p := newPartitionPlane(log, b.TempDir(), 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 16}, topology{count: 1}, config.ClusterConfig{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { p.shards[0].run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			state := metadata.NewState()
			hash, err := metadata.RootPasswordHash("bench", "iggy", "iggy")
			if err != nil {
				b.Fatal(err)
			}
			if err := state.SeedRoot("iggy", hash); err != nil {
				b.Fatal(err)
			}
			op := uint64(0)
			apply := func(cmd metadata.Command) metadata.Result {
				op++
				res := state.Apply(metadata.ApplyContext{Op: op, Timestamp: op * 1000, UserID: metadata.RootUserID}, cmd)
				if res.Code != 0 {
					b.Fatalf("%T: code %d", cmd, res.Code)
				}
				return res
			}
			apply(metadata.CreateStream{Name: "s"})
			topic := func(name string) metadata.CreateTopic {
				return metadata.CreateTopic{Stream: metadata.ByName("s"), Name: name, PartitionsCount: 10,
					MessageExpiry: metadata.Never, Compression: metadata.CompressionNone, MaxTopicSize: metadata.Never,
					Options: metadata.DefaultTopicOptions(metadata.DurabilityReplicated, metadata.DurabilityReplicated)}
			}
			for i := 0; i < existing/10; i++ {
				apply(topic(fmt.Sprintf("old-%d", i)))
			}
			p.reconcile(state)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := topic(fmt.Sprintf("new-%d", i))
				p.reconcileAfter(state, cmd, apply(cmd)) // what applyCommitted does
			}
			b.StopTimer()
		})
	}
}
