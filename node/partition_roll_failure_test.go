package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// rollFailingStore reports a segment roll's failed fsync after the next
// append, as partitions.Log does when the append filled its segment and
// the sealing fsync failed; its next Sync returns that failure.
type rollFailingStore struct {
	partitionStore
	failNextRoll atomic.Bool
	pending      atomic.Bool
}

func (s *rollFailingStore) Append(batch []byte) (partitions.BatchLocation, error) {
	loc, err := s.partitionStore.Append(batch)
	if err == nil && s.failNextRoll.Swap(false) {
		s.pending.Store(true)
	}
	return loc, err
}

func (s *rollFailingStore) FailedSyncPending() bool {
	return s.pending.Load() || s.partitionStore.FailedSyncPending()
}

func (s *rollFailingStore) Sync() error {
	if s.pending.Swap(false) {
		return &partitions.SyncError{Err: errors.New("injected: the sealing fsync of a roll failed"), RewriteRecorded: true}
	}
	return s.partitionStore.Sync()
}

// TestAFailedRollFencesAndReopensWithoutWaitingForASync: a send whose
// append rolled the segment, with the sealing fsync failing, stands (a
// `replicated` topic promised no sync), but the group is fenced and handed
// to the reopen at once: a log whose next Sync is far off (a cluster
// replica syncs at checkpoints) must not rest with a segment the roll
// never sealed and without the empty one its peers rolled to (metadata
// simulator seed 82965). Without the fix nothing happens until another
// write or a checkpoint.
func TestAFailedRollFencesAndReopensWithoutWaitingForASync(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	e := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if e.log == nil {
		t.Fatalf("open: %v", e.quarantine)
	}
	faulty := &rollFailingStore{partitionStore: e.log}
	reported := make(chan *fsyncFailed, 4)
	e.shard.do(func() {
		e.log = faulty
		e.shard.fsyncFailed = func(_ *partitionEntry, ff *fsyncFailed) { reported <- ff }
	})
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	send := func() partitionOutcome {
		return e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
	}
	faulty.failNextRoll.Store(true)
	if out := send(); out.code != wire.OK {
		t.Fatalf("send whose roll's fsync failed: %+v, want it to stand", out)
	}
	select {
	case ff := <-reported:
		if !ff.marked {
			t.Fatalf("the failure was reported without the rewrite recorded: %v", ff.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a roll's failed fsync was not handed to the reopen: the group waits for its next sync")
	}
	if out := send(); out.code != wire.ErrTransientNotAccepted {
		t.Fatalf("send while the failed roll is reopened: code %d, want %d (fenced, retryable)", out.code, wire.ErrTransientNotAccepted)
	}
}
