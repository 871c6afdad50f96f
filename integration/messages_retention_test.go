package integration

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

func u64Option(key string, v uint64) wire.Option {
	return wire.Option{Key: key, Kind: wire.KindUint64, Value: binary.LittleEndian.AppendUint64(nil, v)}
}

func stringOption(key, v string) wire.Option {
	return wire.Option{Key: key, Kind: wire.KindString, Value: []byte(v)}
}

// fillPartition sends batches of ten 10 KB messages (≈100 KB per batch).
func fillPartition(t *testing.T, c *client.Client, stream, topic wire.Identifier, partition uint32, batches int) {
	t.Helper()
	for b := 0; b < batches; b++ {
		msgs := makeMessages("r", b*10, 10)
		for i := range msgs {
			msgs[i].Payload = append(msgs[i].Payload, make([]byte, 10_000)...)
		}
		sendOK(t, c, stream, topic, partitionID(partition), msgs)
	}
}

func partitionStats(t *testing.T, c *client.Client, stream, topic wire.Identifier, p int) wire.Partition {
	t.Helper()
	td, err := c.GetTopic(testCtx(t), stream, topic)
	must(t, err)
	return td.Partitions[p]
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRetentionPurgeDeleteSegmentsAndDeleteTopic(t *testing.T) {
	srv := startServer(t, "")
	outer := t // clients made after a restart must outlive the subtest
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	mib := uint64(1 << 20)
	_, err = c.CreateTopic(ctx, id(0), "expiring", 1, u64Option("segment_size", mib), u64Option("message_expiry", 1_000_000))
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "capped", 1, u64Option("segment_size", mib), u64Option("max_topic_size", mib))
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "manual", 1, u64Option("segment_size", mib))
	must(t, err)

	t.Run("message expiry", func(t *testing.T) {
		fillPartition(t, c, id(0), id(0), 0, 25) // ≈2.5 MB: two sealed segments
		if st := partitionStats(t, c, id(0), id(0), 0); st.SegmentsCount < 3 {
			t.Fatalf("expected at least three segments, got %+v", st)
		}
		waitFor(t, "expired segments to go", 10*time.Second, func() bool {
			return partitionStats(t, c, id(0), id(0), 0).SegmentsCount == 1
		})
		r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1, false)
		if r.MessagesCount != 1 || r.Messages[0].Offset == 0 || r.CurrentOffset != 249 {
			t.Fatalf("first message after expiry: %+v", r)
		}
	})
	t.Run("max topic size", func(t *testing.T) {
		fillPartition(t, c, id(0), id(1), 0, 25)
		waitFor(t, "the topic to shrink under max_topic_size", 10*time.Second, func() bool {
			st := partitionStats(t, c, id(0), id(1), 0)
			return st.SegmentsCount == 1 && st.SizeBytes <= mib+200_000
		})
		// Offsets keep counting after retention.
		if conf := sendOK(t, c, id(0), id(1), partitionID(0), makeMessages("after", 0, 1)); conf.BaseOffset != 250 {
			t.Fatalf("offset after retention %d, want 250", conf.BaseOffset)
		}
	})
	t.Run("delete segments", func(t *testing.T) {
		fillPartition(t, c, id(0), id(2), 0, 25)
		before := partitionStats(t, c, id(0), id(2), 0)
		must(t, c.DeleteSegments(ctx, id(0), id(2), 0, 1))
		after := partitionStats(t, c, id(0), id(2), 0)
		if after.SegmentsCount != before.SegmentsCount-1 || after.MessagesCount >= before.MessagesCount {
			t.Fatalf("delete one segment: before %+v after %+v", before, after)
		}
		r := pollAt(t, c, firstConsumer, id(0), id(2), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 1, false)
		if r.Messages[0].Offset != before.MessagesCount-after.MessagesCount {
			t.Fatalf("first offset %d after deleting %d messages", r.Messages[0].Offset, before.MessagesCount-after.MessagesCount)
		}
		// The watermark survives a restart (not applied twice, not lost).
		srv.restart(syscall.SIGKILL)
		c = rootClient(outer, srv.addr)
		if got := partitionStats(t, c, id(0), id(2), 0); got.MessagesCount != after.MessagesCount || got.CurrentOffset != 249 {
			t.Fatalf("after restart %+v, want %+v", got, after)
		}
	})
	t.Run("purge", func(t *testing.T) {
		must(t, c.StoreConsumerOffset(testCtx(t), firstConsumer, id(0), id(2), wire.SomePartition(0), 100))
		must(t, c.PurgeTopic(testCtx(t), id(0), id(2)))
		if st := partitionStats(t, c, id(0), id(2), 0); st.MessagesCount != 0 || st.SizeBytes != 0 {
			t.Fatalf("after purge %+v", st)
		}
		off, err := c.GetConsumerOffset(testCtx(t), firstConsumer, id(0), id(2), wire.SomePartition(0))
		must(t, err)
		if off != nil {
			t.Fatalf("purge kept the consumer offset %+v", off)
		}
		// Upstream purge semantics: the offset space restarts.
		if conf := sendOK(t, c, id(0), id(2), partitionID(0), makeMessages("p", 0, 2)); conf.BaseOffset != 0 {
			t.Fatalf("first offset after purge %d", conf.BaseOffset)
		}
		srv.restart(syscall.SIGTERM) // a replayed purge must not wipe what came after it
		c = rootClient(outer, srv.addr)
		if st := partitionStats(t, c, id(0), id(2), 0); st.MessagesCount != 2 {
			t.Fatalf("after purge and restart %+v", st)
		}
		must(t, c.PurgeStream(testCtx(t), id(0)))
		if st := partitionStats(t, c, id(0), id(2), 0); st.MessagesCount != 0 {
			t.Fatalf("after stream purge %+v", st)
		}
	})
	t.Run("delete partitions, topic and stream", func(t *testing.T) {
		topicDir := filepath.Join(srv.dataDir, "streams", "0", "topics", "2")
		must(t, c.CreatePartitions(testCtx(t), id(0), id(2), 2))
		sendOK(t, c, id(0), id(2), partitionID(2), makeMessages("d", 0, 1))
		if _, err := os.Stat(filepath.Join(topicDir, "partitions", "2")); err != nil {
			t.Fatalf("new partition has no directory: %v", err)
		}
		must(t, c.DeletePartitions(testCtx(t), id(0), id(2), 2))
		if _, err := os.Stat(filepath.Join(topicDir, "partitions", "2")); !os.IsNotExist(err) {
			t.Fatalf("deleted partition directory remains: %v", err)
		}
		// A re-created partition with the same id starts empty.
		must(t, c.CreatePartitions(testCtx(t), id(0), id(2), 1))
		if st := partitionStats(t, c, id(0), id(2), 1); st.MessagesCount != 0 {
			t.Fatalf("re-created partition inherited data: %+v", st)
		}
		must(t, c.DeleteTopic(testCtx(t), id(0), id(2)))
		if _, err := os.Stat(topicDir); !os.IsNotExist(err) {
			t.Fatalf("deleted topic directory remains: %v", err)
		}
		must(t, c.DeleteStream(testCtx(t), id(0)))
		if _, err := os.Stat(filepath.Join(srv.dataDir, "streams", "0")); !os.IsNotExist(err) {
			t.Fatalf("deleted stream directory remains: %v", err)
		}
	})
}
