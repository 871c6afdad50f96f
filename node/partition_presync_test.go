package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

// presyncGatedStore holds each SyncAhead at its gate and counts the Syncs.
type presyncGatedStore struct {
	partitionStore
	storageGate
	syncs, aheads atomic.Int32
}

func (s *presyncGatedStore) SyncAhead() (uint64, error) {
	s.aheads.Add(1)
	s.hold()
	return s.partitionStore.SyncAhead()
}

func (s *presyncGatedStore) Sync() error {
	s.syncs.Add(1)
	return s.partitionStore.Sync()
}

// TestAClusterCheckpointSyncsItsLogAheadWhileSendsGoOn (issue 8 point 10):
// when a cluster replica's checkpoint comes due, its log's fdatasync runs
// ahead of it, outside the group's write pipeline: while that sync hangs,
// sends to the partition keep committing and the checkpoint waits. Once
// the sync returns, the checkpoint is taken at the op it was captured at,
// and the write of its superblock does not sync the log again. Before,
// the sync ran inside the checkpoint's write and every later send of the
// partition waited for it (100-270 ms under load, BENCHMARKS.md).
func TestAClusterCheckpointSyncsItsLogAheadWhileSendsGoOn(t *testing.T) {
	primary, gated, release, propose := gatedPrimary(t, nil)
	send := func(label string) {
		t.Helper()
		propose(label, wire.OpSendMessages, nil)
	}
	// Half the journal's 16 slots applied: the checkpoint comes due.
	for i := 0; i < 8; i++ {
		send("before the checkpoint")
	}
	select {
	case <-gated.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint synced the primary's log ahead")
	}
	// (The group's first op, its offset reservation, synced the log in its
	// own write: it syncs the WAL, staged batches first.)
	gated.syncs.Store(0)
	// The sync hangs: the partition keeps taking sends (fewer than the
	// journal's free half, which the checkpoint has not freed). (A control
	// of the shard would wait for the sync: shard.do settles every write
	// out, so nothing here asks the loop.)
	for i := 0; i < 6; i++ {
		send("during the sync ahead")
	}
	release()
	var checkpointOp, reclaimed, logSynced, commitMin uint64
	waitFor(t, "the checkpoint after its sync ahead", 10*time.Second, func() bool {
		primary.shard.do(func() {
			checkpointOp, reclaimed = primary.checkpointOp, primary.walReclaimed
			logSynced, commitMin = primary.logSyncedCheckpoint, primary.group.CommitMin()
		})
		return checkpointOp > 0 && reclaimed >= checkpointOp
	})
	// Captured when the eighth send applied, handed over after the sync:
	// the op it was captured at, not the commit_min of the hand-over.
	if checkpointOp != 8 || commitMin < 14 {
		t.Fatalf("checkpoint at op %d with commit_min %d: want the op it was captured at (8), with the sends made during its sync committed (14)", checkpointOp, commitMin)
	}
	if logSynced != checkpointOp {
		t.Fatalf("checkpoint %d not recorded as synced ahead (%d)", checkpointOp, logSynced)
	}
	if n := gated.aheads.Load(); n < 1 {
		t.Fatal("no sync ahead ran")
	}
	if n := gated.syncs.Load(); n != 0 {
		t.Fatalf("the log was synced %d times besides the sync ahead: a checkpoint's write synced it again", n)
	}
	send("after the checkpoint")
}

// TestACheckpointCapturedBeforeAPurgeIsNotHandedOver: a checkpoint
// describes the files as of its op plus what was appended since, so one
// captured before a purge applied, whose log sync returns after it, is
// dropped; the group checkpoints again past the purge. (The whole-node
// simulator found the other outcome: a restart from a checkpoint captured
// before a purge cut the purged log at a frontier inside its new batches.)
func TestACheckpointCapturedBeforeAPurgeIsNotHandedOver(t *testing.T) {
	recorder := &checkpointRecorder{}
	primary, gated, release, propose := gatedPrimary(t, recorder)
	for i := 0; i < 8; i++ {
		propose("send", wire.OpSendMessages, nil)
	}
	select {
	case <-gated.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint synced the primary's log ahead")
	}
	propose("purge", partitionOpPurge, encodePurgeOp(1, 0)) // applied while the sync ahead hangs
	release()
	var checkpointOp, purgeOp uint64
	waitFor(t, "a checkpoint past the purge", 10*time.Second, func() bool {
		primary.shard.do(func() { checkpointOp, purgeOp = primary.checkpointOp, primary.marker.PurgeOp })
		return purgeOp > 0 && checkpointOp >= purgeOp
	})
	var ops []uint64
	primary.shard.do(func() { ops = append(ops, recorder.ops...) })
	for _, op := range ops {
		if op < purgeOp {
			t.Fatalf("checkpoints handed over at ops %v: op %d was captured before the purge at op %d", ops, op, purgeOp)
		}
	}
}

// checkpointRecorder records the ops of the checkpoints a group is given
// (shard goroutine).
type checkpointRecorder struct {
	partitionGroup
	ops []uint64
}

func (r *checkpointRecorder) Checkpoint(s consensus.Snapshot) {
	r.ops = append(r.ops, s.Op)
	r.partitionGroup.Checkpoint(s)
}

// gatedPrimary starts a 3-replica loopback cluster of one partition (16
// journal slots: a checkpoint every 8 ops) whose primary's log holds each
// sync ahead at its gate until release, its group wrapped by recorder when
// one is given; propose carries out one op on the primary (a send of a
// one-message batch when body is nil) and fails the test unless it is
// answered OK.
func gatedPrimary(t *testing.T, recorder *checkpointRecorder) (primary *partitionEntry, gated *presyncGatedStore,
	release func(), propose func(label string, op wire.Operation, body []byte)) {
	t.Helper()
	entries, _ := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 8, journalSlots: 16})
	primary = entries[0]
	gated = &presyncGatedStore{partitionStore: primary.log, storageGate: newStorageGate()}
	primary.shard.do(func() {
		primary.log = gated
		if recorder != nil {
			recorder.partitionGroup = primary.group
			primary.group = recorder
		}
	})
	release = sync.OnceFunc(func() { close(gated.release) })
	t.Cleanup(release) // before the cluster's stop (cleanups run last in, first out)
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	propose = func(label string, op wire.Operation, body []byte) {
		t.Helper()
		if body == nil {
			body = batch
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out := primary.shard.propose(ctx, &partitionProposal{entry: primary, op: op, body: body}); out.code != wire.OK {
			t.Fatalf("%s: op %d answered %d", label, op, out.code)
		}
	}
	return primary, gated, release, propose
}
