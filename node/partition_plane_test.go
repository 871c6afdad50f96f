package node

import (
	"context"
	"github.com/lodestream/lodestream/config"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

func TestPartitionMarkerRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []struct {
		marker partitionMarker
		bytes  int
	}{
		{partitionMarker{Revision: 7, PurgeGeneration: 2, DeletedUpTo: 1000, OffsetsReserved: 64, PurgeOp: 99}, markerPurgeOpFileBytes},
		{partitionMarker{Revision: 7, PurgeGeneration: 2, DeletedUpTo: 1000, PurgeOp: 99}, markerPurgeOpFileBytes},
		{partitionMarker{Revision: 7, PurgeGeneration: 2, DeletedUpTo: 1000, OffsetsReserved: 64}, markerReservedFileBytes},
	} {
		if err := writeMarker(vfs.OS, dir, m.marker); err != nil {
			t.Fatal(err)
		}
		got, ok := readMarker(vfs.OS, dir)
		if b, _ := os.ReadFile(filepath.Join(dir, markerFileName)); !ok || got != m.marker || len(b) != m.bytes {
			t.Fatalf("marker %+v %v in %d bytes, want %+v in %d", got, ok, len(b), m.marker, m.bytes)
		}
	}
	want := partitionMarker{Revision: 7, PurgeGeneration: 2, DeletedUpTo: 1000} // the file of earlier builds
	if err := writeMarker(vfs.OS, dir, want); err != nil {
		t.Fatal(err)
	}
	got, ok := readMarker(vfs.OS, dir)
	if !ok || got != want {
		t.Fatalf("marker %+v %v, want %+v", got, ok, want)
	}
	b, _ := os.ReadFile(filepath.Join(dir, markerFileName))
	b[3] ^= 1
	if err := os.WriteFile(filepath.Join(dir, markerFileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readMarker(vfs.OS, dir); ok {
		t.Fatal("a corrupt marker was accepted")
	}
}

func TestOffsetOpCodec(t *testing.T) {
	kind, id, off, ok := decodeOffsetOp(encodeOffsetOp(wire.ConsumerKindGroup, 9, 123, true), true)
	if !ok || kind != wire.ConsumerKindGroup || id != 9 || off != 123 {
		t.Fatalf("store op decoded to %v %d %d %v", kind, id, off, ok)
	}
	if _, _, _, ok := decodeOffsetOp(encodeOffsetOp(wire.ConsumerKindSingle, 1, 0, false), true); ok {
		t.Fatal("a delete body decoded as a store")
	}
}

func TestPartitionGroupIDPacking(t *testing.T) {
	k := partitionKey{stream: 3, topic: 5, partition: 7}
	if got, want := k.groupID(), uint64(3)<<32|5<<20|7; got != want {
		t.Fatalf("group id %x, want %x", got, want)
	}
}

// TestShardAppliesInOrderAndReopenKeepsOffsets: sends commit in order with
// contiguous base offsets; a stale marker (another revision) wipes the
// directory; the same revision reopens the log as it was.
func TestShardAppliesInOrderAndReopenKeepsOffsets(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	root := t.TempDir()
	run := func(rev uint64, sends int) (next uint64) {
		p := newPartitionPlane(log, root, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8}, topology{count: 1}, config.ClusterConfig{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.shards[0].run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20, Durability: metadata.DurabilityPersisted}}
		e := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: rev}})
		if e.log == nil {
			t.Fatalf("open: %v", e.quarantine)
		}
		batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}, {OriginTimestamp: 2, Payload: []byte("b")}})
		if err != nil {
			t.Fatal(err)
		}
		start := e.log.NextOffset()
		for i := 0; i < sends; i++ {
			out := e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
			if out.code != wire.OK || out.baseOffset != start+uint64(2*i) {
				t.Fatalf("send %d: %+v, want base %d", i, out, start+uint64(2*i))
			}
		}
		return e.log.NextOffset()
	}
	if next := run(1, 50); next != 100 {
		t.Fatalf("next offset %d after 50 sends", next)
	}
	if next := run(1, 1); next != 102 {
		t.Fatalf("reopened log continues at %d, want 102", next-2)
	}
	if next := run(2, 1); next != 2 {
		t.Fatalf("a new revision kept old data: next %d", next)
	}
}

// TestMissingMarkerWithSegmentsQuarantines: segment files whose marker is
// gone are never wiped on a guess.
func TestMissingMarkerWithSegmentsQuarantines(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	root := t.TempDir()
	p := newPartitionPlane(log, root, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8}, topology{count: 1}, config.ClusterConfig{})
	close(p.shards[0].stopped) // no loop: controls run inline
	k := partitionKey{0, 0, 0}
	dir := p.partitionDir(k)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(seg, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := p.open(k, desiredPartition{topic: metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}},
		part: metadata.Partition{CreatedRevision: 1}})
	if e.log != nil || e.quarantine == nil {
		t.Fatalf("partition served without a marker: %v", e.quarantine)
	}
	if _, err := os.Stat(seg); err != nil {
		t.Fatalf("segment file was removed: %v", err)
	}
}

// TestBurstBeyondTheGroupWindowIsHeldNotRefused: far more concurrent sends
// than the group's pipeline and queue all commit, each offset once.
func TestBurstBeyondTheGroupWindowIsHeldNotRefused(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 2, journalSlots: 4})
	e := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}},
		part: metadata.Partition{CreatedRevision: 1}})
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	const senders = 200
	offsets := make(chan partitionOutcome, senders)
	for i := 0; i < senders; i++ {
		go func() {
			offsets <- e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
		}()
	}
	seen := make(map[uint64]bool)
	for i := 0; i < senders; i++ {
		out := <-offsets
		if out.code != wire.OK || seen[out.baseOffset] {
			t.Fatalf("send %d: %+v (duplicate %v)", i, out, seen[out.baseOffset])
		}
		seen[out.baseOffset] = true
	}
	if next := e.log.NextOffset(); next != senders {
		t.Fatalf("next offset %d, want %d", next, senders)
	}
}
