package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func segmentPath(dataDir string, topic, partition uint32, start string) string {
	return filepath.Join(dataDir, "streams", "0", "topics", itoa(topic), "partitions", itoa(partition), start+".log")
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// TestRestartTruncatesTornTailAndQuarantinesCorruptPartition: a torn tail
// (garbage after the last batch) is cut on restart with every message kept;
// interior corruption sets only the damaged range apart (4011 for it, a log
// line naming the file) while the rest of that partition and the others
// serve (issue 15 point 7; it used to quarantine the whole partition, 3004).
func TestRestartTruncatesTornTailAndQuarantinesCorruptPartition(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 3, u64Option("segment_size", 1<<20))
	must(t, err)
	fillPartition(t, c, id(0), id(0), 0, 15) // two segments
	fillPartition(t, c, id(0), id(0), 1, 3)
	fillPartition(t, c, id(0), id(0), 2, 3)
	srv.stop(syscall.SIGTERM)

	// Partition 1: a torn tail.
	torn := segmentPath(srv.dataDir, 0, 1, "00000000000000000000")
	f, err := os.OpenFile(torn, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write([]byte("half a batch header that never finished"))
	must(t, err)
	must(t, f.Close())
	// Partition 0: one flipped byte inside the first, sealed segment.
	corrupt := segmentPath(srv.dataDir, 0, 0, "00000000000000000000")
	b, err := os.ReadFile(corrupt)
	must(t, err)
	b[5000] ^= 0xFF
	must(t, os.WriteFile(corrupt, b, 0o644))

	srv.start()
	c = rootClient(t, srv.addr)
	r := pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(1), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 30 || r.CurrentOffset != 29 {
		t.Fatalf("partition with a torn tail: %d messages, current %d", r.MessagesCount, r.CurrentOffset)
	}
	if conf := sendOK(t, c, id(0), id(0), partitionID(1), makeMessages("after", 0, 1)); conf.BaseOffset != 30 {
		t.Fatalf("next offset after the torn tail %d, want 30", conf.BaseOffset)
	}
	// Issue 15 point 7: the damaged batch (offsets 0..9) is refused, the rest
	// of the partition is served and takes writes.
	_, err = c.PollMessages(ctx, wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
		Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 1})
	expectCode(t, err, wire.ErrCannotReadMessage)
	r = pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollOffset, Value: 10}, 1000, false)
	if r.MessagesCount != 140 || r.Messages[0].Offset != 10 {
		t.Fatalf("partition with a damaged batch: %d messages served after it, want 140", r.MessagesCount)
	}
	if conf := sendOK(t, c, id(0), id(0), partitionID(0), makeMessages("q", 0, 1)); conf.BaseOffset != 150 {
		t.Fatalf("send to the partition with a damaged range: offset %d, want 150", conf.BaseOffset)
	}
	r = pollAt(t, c, firstConsumer, id(0), id(0), wire.SomePartition(2), wire.PollingStrategy{Kind: wire.PollFirst}, 1000, false)
	if r.MessagesCount != 30 {
		t.Fatalf("healthy neighbour: %d messages", r.MessagesCount)
	}
	logs := srv.logs.String()
	if !strings.Contains(logs, "the range is refused, the rest of the partition is served") ||
		!strings.Contains(logs, "00000000000000000000.log") {
		t.Fatalf("no damage log line naming the file:\n%s", logs)
	}
	if !strings.Contains(logs, "truncating torn tail") {
		t.Fatalf("no torn-tail log line:\n%s", logs)
	}
}
