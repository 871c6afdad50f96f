package node

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// TestReplayAcrossAPurgeLeavesItsEpochAlone (whole-node simulator, once
// purges were simulated): a cluster replica applies the ops above its
// checkpoint again after a restart, and a purge came after that
// checkpoint. The ops before the purge answer as they first did and leave
// the purged log alone; the purge applied again clears the consumer
// offsets the checkpoint brought back; the ops after it find their own
// records. Before, the first replayed send compared itself with another
// epoch's record at its offset and was refused, and the log diverged from
// its peers'.
func TestReplayAcrossAPurgeLeavesItsEpochAlone(t *testing.T) {
	s, e, g := reserveTestShard(t)
	sb, _, err := journal.OpenSuperblock(t.TempDir(), journal.Identity{ReplicaCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.superblock = sb // a cluster replica
	consumer := uint32(1)
	storeOffset := func(v uint64) {
		s.admit(&partitionProposal{entry: e, op: wire.OpStoreConsumerOffset, body: encodeOffsetOp(wire.ConsumerKindSingle, consumer, v, true)})
	}
	sendBatch(t, s, e, 3)
	commitAll(t, s, e, g, 0)
	checkpointOp, checkpointNext, checkpointReserved := e.appliedOp, e.appliedNext, e.marker.OffsetsReserved

	sendBatch(t, s, e, 4)
	storeOffset(5)
	commitAll(t, s, e, g, 0)
	s.admit(&partitionProposal{entry: e, op: partitionOpPurge, body: encodePurgeOp(1, 0)})
	commitAll(t, s, e, g, 0)
	if e.marker.PurgeGeneration != 1 || e.marker.PurgeOp != e.appliedOp || e.log.NextOffset() != 0 {
		t.Fatalf("purge carried out: marker %+v, next offset %d", e.marker, e.log.NextOffset())
	}
	sendBatch(t, s, e, 2)
	storeOffset(1)
	commitAll(t, s, e, g, 0)
	before, err := readWholeLog(e.log)
	if err != nil || len(before) == 0 {
		t.Fatalf("the purge's epoch: %d bytes, %v", len(before), err)
	}
	end := e.appliedOp

	// The restart: the checkpoint's state, its consumer offsets back.
	e.appliedOp, e.appliedNext, e.marker.OffsetsReserved = checkpointOp, checkpointNext, checkpointReserved
	e.dedup = dedupTable{}
	if err := installConsumerOffsets(e.log, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.log.StoreConsumerOffset(wire.ConsumerKindSingle, consumer, 2); err != nil {
		t.Fatal(err)
	}
	for op := checkpointOp + 1; op <= end; op++ {
		r := g.proposed[op-1]
		p := consensus.Prepare{Header: consensus.PrepareHeader{Op: op, Operation: r.Operation}, Body: r.Body}
		if out, wrote := s.apply(e, &p); out.code != wire.OK || wrote {
			t.Fatalf("op %d (%d) applied again: code %d, wrote %v; want OK and nothing written", op, r.Operation, out.code, wrote)
		}
		e.appliedOp = op
	}
	after, err := readWholeLog(e.log)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the log changed when its ops were applied again (%d bytes, then %d): %v", len(before), len(after), err)
	}
	if e.appliedNext != e.log.NextOffset() {
		t.Fatalf("applied up to %d, the log ends at %d", e.appliedNext, e.log.NextOffset())
	}
	if v, ok := e.log.ConsumerOffset(wire.ConsumerKindSingle, consumer); !ok || v != 1 {
		t.Fatalf("consumer offset %d (%v) after the replay, want 1 (stored after the purge)", v, ok)
	}
}

// TestTransferAcrossAPurge: a snapshot reflecting a purge this replica's
// files do not is installed on a purged log (its records are the purge's
// epoch, offsets from 0 again); one older than the purge the files reflect
// fetches nothing (its records are gone everywhere). Before, the replica
// appended the new epoch's records after the old epoch's, or fetched the
// new epoch's records up to an old epoch's frontier.
func TestTransferAcrossAPurge(t *testing.T) {
	s, e, g := reserveTestShard(t)
	sb, _, err := journal.OpenSuperblock(t.TempDir(), journal.Identity{ReplicaCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.superblock = sb
	sendBatch(t, s, e, 5)
	commitAll(t, s, e, g, 0)
	if err := e.log.StoreConsumerOffset(wire.ConsumerKindSingle, 1, 4); err != nil {
		t.Fatal(err)
	}
	older := partitionCheckpoint{frontier: 5, hasPurge: true}
	if err := s.adoptPurge(e, 9, older); err != nil || e.log.NextOffset() != 5 || e.marker.PurgeGeneration != 0 {
		t.Fatalf("a snapshot of the same purge epoch: %v, next offset %d, marker %+v", err, e.log.NextOffset(), e.marker)
	}
	purged := partitionCheckpoint{frontier: 3, hasPurge: true, purge: purgeState{generation: 2, op: 40}}
	if err := s.adoptPurge(e, 50, purged); err != nil {
		t.Fatal(err)
	}
	if e.log.NextOffset() != 0 || e.log.Stats().MessagesCount != 0 || len(e.log.ConsumerOffsets()) != 0 {
		t.Fatalf("after adopting the snapshot's purge: next offset %d, %d messages, offsets %v", e.log.NextOffset(),
			e.log.Stats().MessagesCount, e.log.ConsumerOffsets())
	}
	if m, ok := readMarker(s.fsys, e.dir); !ok || m.PurgeGeneration != 2 || m.PurgeOp != 40 {
		t.Fatalf("partition.meta %+v (%v), want purge generation 2 at op 40", m, ok)
	}
	// A transfer to a checkpoint below that purge op: nothing to fetch.
	tr := s.startTransfer(e, 30, partitionCheckpoint{frontier: 1000})
	select {
	case <-tr.done:
		if tr.err != nil {
			t.Fatalf("a transfer below the purge: %v", tr.err)
		}
	default:
		t.Fatal("a transfer to a checkpoint below the purge the files reflect went fetching")
	}
}

// epochSource answers every fetch as a peer whose log is of purge epoch
// generation (carried out at op): records when asked for that epoch.
type epochSource struct {
	generation, op uint64
	asked          []uint64
}

func (s *epochSource) fetchRecords(_ context.Context, _ uint8, _, epoch, from, _ uint64, _ uint32) (fetchedRecords, error) {
	s.asked = append(s.asked, epoch)
	if epoch != s.generation {
		return fetchedRecords{status: fetchOtherEpoch, purgeGeneration: s.generation, purgeOp: s.op}, nil
	}
	return fetchedRecords{status: fetchOK, next: from, end: from, purgeGeneration: s.generation, purgeOp: s.op}, nil
}

// TestTransferStopsAtALaterPurgeEpoch: a transfer fetching the records of
// one purge epoch from peers that purged since is told so (not served the
// new epoch's records at the same offsets), and ends with the peers'
// purge; a peer still in an older epoch is passed over.
func TestTransferStopsAtALaterPurgeEpoch(t *testing.T) {
	lagging := transferTestLog(t, 0)
	src := &epochSource{generation: 5, op: 321}
	err := fetchUntilFrontierPaced(context.Background(), src, lagging, 7, 4, 30, []uint8{1}, quietTransferLog,
		func(context.Context, int, time.Duration) error { return errTransferPassEnded })
	var purged *purgedSinceError
	if !errors.As(err, &purged) || purged.generation != 5 || purged.op != 321 || lagging.NextOffset() != 0 {
		t.Fatalf("a transfer of epoch 4 from a peer of epoch 5: %v, next offset %d", err, lagging.NextOffset())
	}
	older := &epochSource{generation: 3, op: 100}
	err = fetchUntilFrontierPaced(context.Background(), older, lagging, 7, 4, 30, []uint8{1}, quietTransferLog,
		func(context.Context, int, time.Duration) error { return errTransferPassEnded })
	if !errors.Is(err, errTransferPassEnded) || lagging.NextOffset() != 0 {
		t.Fatalf("a transfer of epoch 4 from a peer of epoch 3: %v, next offset %d", err, lagging.NextOffset())
	}
}

// TestCutOfAnEarlierEpochLeavesThePurgedLogAlone (whole-node simulator
// seed 36011): a retention cut decided on the log before a purge but
// ordered after it deleted the purged log's first segment on one replica.
// A cut carries the purge generation it was decided in; another epoch's
// is a no-op, as is any cut the files' purge erased.
func TestCutOfAnEarlierEpochLeavesThePurgedLogAlone(t *testing.T) {
	if before, gen, has, ok := decodeCutOp(encodeCutOp(881, 3)); !ok || !has || before != 881 || gen != 3 {
		t.Fatalf("cut op round trip: %d %d %v %v", before, gen, has, ok)
	}
	if before, _, has, ok := decodeCutOp(encodeCutOp(881, 0)[:8]); !ok || has || before != 881 {
		t.Fatalf("an 8-byte cut op of an earlier build: %d %v %v", before, has, ok)
	}
	if _, _, _, ok := decodeCutOp(make([]byte, 12)); ok {
		t.Fatal("a 12-byte cut op decoded")
	}
	s, e, g := reserveTestShard(t)
	small, err := partitions.Open(t.TempDir(), partitions.Options{SegmentSizeBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = small.Close() })
	e.log = small
	s.admit(&partitionProposal{entry: e, op: partitionOpPurge, body: encodePurgeOp(1, 0)})
	commitAll(t, s, e, g, 0)
	for range 12 { // about 700 bytes each: sealed segments
		appendTestBatch(t, small, 1, 1)
	}
	e.appliedNext = small.NextOffset()
	segments := small.Stats().SegmentsCount
	if segments < 2 {
		t.Fatalf("%d segments, the test needs a sealed one", segments)
	}
	stale := consensus.Prepare{Header: consensus.PrepareHeader{Op: e.appliedOp + 1, Operation: consensus.Operation(partitionOpCut)},
		Body: encodeCutOp(1000, 0)}
	if out, _ := s.apply(e, &stale); out.code != wire.OK || small.Stats().SegmentsCount != segments {
		t.Fatalf("a cut of the epoch before the purge: code %d, %d segments of %d left", out.code, small.Stats().SegmentsCount, segments)
	}
	current := consensus.Prepare{Header: consensus.PrepareHeader{Op: e.appliedOp + 2, Operation: consensus.Operation(partitionOpCut)},
		Body: encodeCutOp(1000, 1)}
	if out, _ := s.apply(e, &current); out.code != wire.OK || small.Stats().SegmentsCount >= segments {
		t.Fatalf("a cut of the purge's epoch: code %d, %d segments of %d left", out.code, small.Stats().SegmentsCount, segments)
	}
}
