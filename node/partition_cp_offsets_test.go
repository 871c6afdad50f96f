package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

func TestCheckpointOffsetsFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 3, Offset: 30}, {Kind: wire.ConsumerKindGroup, ID: 1, Offset: 7}}
	if _, ok, err := readCheckpointOffsets(vfs.OS, dir, 16); ok || err != nil {
		t.Fatalf("no file: ok=%v err=%v", ok, err)
	}
	if err := writeCheckpointOffsets(vfs.OS, dir, 16, want, 0); err != nil {
		t.Fatal(err)
	}
	for _, cp := range []uint64{16, 48} { // written at 16: valid for later checkpoints too
		got, ok, err := readCheckpointOffsets(vfs.OS, dir, cp)
		if err != nil || !ok || !slices.Equal(got, want) {
			t.Fatalf("checkpoint %d: %v ok=%v err=%v", cp, got, ok, err)
		}
	}
	if _, ok, err := readCheckpointOffsets(vfs.OS, dir, 15); ok || err != nil {
		t.Fatalf("a file of a later checkpoint than the superblock's must be ignored: ok=%v err=%v", ok, err)
	}
	path := filepath.Join(dir, checkpointOffsetsFile)
	b, _ := os.ReadFile(path)
	b[13] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := readCheckpointOffsets(vfs.OS, dir, 16); ok || err == nil {
		t.Fatal("a damaged file must be refused")
	}
}

// TestRestartedReplicaStartsFromTheCheckpointOffsets: a replica that
// stored consumer offsets above its checkpoint and restarted must report
// the checkpoint's offset until the replay moves it forward, never the
// newer value first and an older one after (docs/nemesis.md finding 3).
func TestRestartedReplicaStartsFromTheCheckpointOffsets(t *testing.T) {
	entries, stop := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32})
	primary := entries[0]
	store := func(v uint64) {
		body := encodeOffsetOp(wire.ConsumerKindSingle, 9, v, true)
		out := primary.shard.propose(context.Background(), &partitionProposal{entry: primary, op: wire.OpStoreConsumerOffset, body: body})
		if out.code != wire.OK {
			t.Fatalf("store %d: %+v", v, out)
		}
	}
	last := uint64(40)
	for v := uint64(1); v <= last; v++ { // ops 1..40: at least one checkpoint
		store(v)
	}
	// The backup checkpoints once its commit is 16 past the last checkpoint;
	// under load its commit may jump, so the checkpoint lands anywhere from
	// op 16 on. The test needs one strictly below the newest offset: if it
	// landed on the newest, store one more.
	backup := entries[2]
	var cp uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var off uint64
		backup.shard.do(func() { off, _ = backup.log.ConsumerOffset(wire.ConsumerKindSingle, 9); cp = backup.checkpointOp })
		if off == last && cp >= 16 {
			if cp < last {
				break
			}
			last++
			store(last)
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup at offset %d, checkpoint %d; want offset %d and a checkpoint from op 16 on", off, cp, last)
		}
	}
	// Stop the backup's plane (its shard closes the log and the WAL) and
	// open the partition again in a new plane on the same directory,
	// without running its loop: what it reports before any replay.
	dir := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(backup.dir))))))
	stop(2)
	defaults, _ := config.Defaults()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32},
		topology{clustered: true, self: 2, count: 3}, defaults.Cluster)
	sbLog, err := p.openSuperblockLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sbLog.Close()
	close(p.shards[0].stopped) // no loop: controls run inline
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	e := p.open(backup.key, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}})
	if e.log == nil {
		t.Fatalf("reopen: %v", e.quarantine)
	}
	defer e.log.Close()
	defer e.closeWAL()
	got, _ := e.log.ConsumerOffset(wire.ConsumerKindSingle, 9)
	if got != cp {
		t.Fatalf("restarted replica reports offset %d before its replay; want the checkpoint's %d (the replay of ops above it then moves it forward, never back)", got, cp)
	}
}

// TestCheckpointOffsetsSurviveAPowerLoss: the file is synced whatever the
// topic's consumer_offset_durability; a replica that lost power restarts
// from its checkpoint and needs the offsets as of it (whole-node
// simulator finding: an unsynced file left a replica behind its peers).
func TestCheckpointOffsetsSurviveAPowerLoss(t *testing.T) {
	mem := vfs.NewMem(1)
	mem.SetCrashModel(vfs.CrashModel{}) // every unsynced write is lost
	dir := "/p"
	if err := vfs.MkdirAllDurable(mem, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 2, Offset: 117}}
	if err := writeCheckpointOffsets(mem, dir, 32, want, 0); err != nil {
		t.Fatal(err)
	}
	mem.Crash()
	got, ok, err := readCheckpointOffsets(mem, dir, 32)
	if err != nil || !ok || !slices.Equal(got, want) {
		t.Fatalf("after a power loss: %v ok=%v err=%v; want %v", got, ok, err, want)
	}
}

// TestCheckpointFilesKeepTheConfirmedGeneration: a checkpoint file written
// for a checkpoint whose superblock never became durable (a failed fsync)
// does not replace the one the superblock names: a restart reads that one
// (whole-node simulator: the retry table was lost, and a request applied
// twice on some replicas).
func TestCheckpointFilesKeepTheConfirmedGeneration(t *testing.T) {
	dir := t.TempDir()
	at16 := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 1, Offset: 16}}
	at32 := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 1, Offset: 32}}
	at48 := []partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindSingle, ID: 1, Offset: 48}}
	if err := writeCheckpointOffsets(vfs.OS, dir, 16, at16, 0); err != nil {
		t.Fatal(err)
	}
	// The superblock names 16; the one for 32 fails, and so does a retry at 48.
	for _, w := range []struct {
		op   uint64
		offs []partitions.ConsumerOffsetEntry
	}{{32, at32}, {48, at48}} {
		if err := writeCheckpointOffsets(vfs.OS, dir, w.op, w.offs, 16); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := readCheckpointOffsets(vfs.OS, dir, 16)
	if err != nil || !ok || !slices.Equal(got, at16) {
		t.Fatalf("restart at checkpoint 16: %v ok=%v err=%v; want %v", got, ok, err, at16)
	}
	if got, ok, err := readCheckpointOffsets(vfs.OS, dir, 48); err != nil || !ok || !slices.Equal(got, at48) {
		t.Fatalf("restart at checkpoint 48: %v ok=%v err=%v; want %v", got, ok, err, at48)
	}
	// Once 48 is confirmed, the next write keeps it as the previous generation.
	if err := writeCheckpointOffsets(vfs.OS, dir, 64, at16, 48); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := readCheckpointOffsets(vfs.OS, dir, 48); err != nil || !ok || !slices.Equal(got, at48) {
		t.Fatalf("after confirming 48: %v ok=%v err=%v; want %v", got, ok, err, at48)
	}
	// The retry table goes the same way.
	var tb dedupTable
	tb.record(dedupKey{user: 3, client: consensus.Uint128{Lo: 4}}, 5, 6, 7, 8)
	if err := writeDedupFile(vfs.OS, dir, 16, tb.encode(nil), 0); err != nil {
		t.Fatal(err)
	}
	if err := writeDedupFile(vfs.OS, dir, 32, (&dedupTable{}).encode(nil), 16); err != nil {
		t.Fatal(err)
	}
	if table, err := readDedupFile(vfs.OS, dir, 16); err != nil || len(table.clients) != 1 {
		t.Fatalf("retry table at checkpoint 16: %v %v", table.clients, err)
	}
}

// TestCheckpointReservedRoundTrip: the reservation as of a checkpoint,
// two generations like the other checkpoint files.
func TestCheckpointReservedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := readCheckpointReserved(vfs.OS, dir, 16); ok || err != nil {
		t.Fatalf("no file: ok=%v err=%v", ok, err)
	}
	if err := writeCheckpointReserved(vfs.OS, dir, 16, 640, 0); err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpointReserved(vfs.OS, dir, 32, 1280, 16); err != nil { // its superblock never made it
		t.Fatal(err)
	}
	if got, ok, err := readCheckpointReserved(vfs.OS, dir, 16); err != nil || !ok || got != 640 {
		t.Fatalf("at checkpoint 16: %d ok=%v err=%v; want 640", got, ok, err)
	}
	if got, ok, err := readCheckpointReserved(vfs.OS, dir, 40); err != nil || !ok || got != 1280 {
		t.Fatalf("at checkpoint 40: %d ok=%v err=%v; want 1280", got, ok, err)
	}
}

// TestFirstCheckpointWritesItsOffsetsEvenWhenNone: a group's first
// checkpoint writes checkpoint.offsets even when it holds no offsets (say
// right after a purge): without the file, a restart from that checkpoint
// kept the offsets last applied above it, and the replay walked them back
// (metadata simulator seed 11542: a consumer group's offset went 5, 1, 5).
func TestFirstCheckpointWritesItsOffsetsEvenWhenNone(t *testing.T) {
	e := &partitionEntry{superblock: &journal.Superblock{}}
	e.noteCheckpointOffsets(nil)
	if !e.checkpointOffsetsDirty {
		t.Fatal("the first checkpoint with no offsets does not write checkpoint.offsets")
	}
	e.checkpointOffsetsDirty, e.writtenOffsets, e.offsetsFileWritten = false, nil, true
	e.noteCheckpointOffsets(nil)
	if e.checkpointOffsetsDirty {
		t.Fatal("unchanged offsets written again")
	}
	e.noteCheckpointOffsets([]partitions.ConsumerOffsetEntry{{Kind: wire.ConsumerKindGroup, ID: 4, Offset: 5}})
	if !e.checkpointOffsetsDirty {
		t.Fatal("changed offsets not written")
	}
}
