package node

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// rollBlockingStore holds each Roll at its gate.
type rollBlockingStore struct {
	partitionStore
	storageGate
}

func (s *rollBlockingStore) Roll() error {
	s.hold()
	return s.partitionStore.Roll()
}

// TestAFullSegmentRollsOffTheShardLoop (issue 9 point 3): the send that
// fills a segment is answered, and the segment's roll (its sealing
// fdatasync, the next segment's creation) runs in the group's writer, off
// the shard loop: while it hangs, a send to another partition of the
// shard is answered; the next send to the full partition waits for the
// roll (the primary stamps nothing past a full segment), is then answered
// and lands in the new segment. Before, the append that filled the
// segment rolled it on the loop, and the writer's Roll never ran.
func TestAFullSegmentRollsOffTheShardLoop(t *testing.T) {
	const segmentBytes = 4096
	slow, fast := twoPartitionsOnOneShard(t, metadata.Topic{Options: metadata.TopicOptions{SegmentSize: segmentBytes}})
	blocking := &rollBlockingStore{partitionStore: slow.log, storageGate: newStorageGate()}
	slow.shard.do(func() { slow.log = blocking })
	released := false
	defer func() {
		if !released {
			close(blocking.release)
		}
	}()
	batchOf := func(n int) []byte {
		b, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: bytes.Repeat([]byte("x"), n)}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send := func(e *partitionEntry, batch []byte) <-chan partitionOutcome {
		ch := make(chan partitionOutcome, 1)
		go func() {
			ch <- e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
		}()
		return ch
	}
	answer := func(ch <-chan partitionOutcome, what string) partitionOutcome {
		t.Helper()
		select {
		case out := <-ch:
			if out.code != wire.OK {
				t.Fatalf("%s: %+v", what, out)
			}
			return out
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not answered", what)
		}
		return partitionOutcome{}
	}
	answer(send(slow, batchOf(segmentBytes)), "the send that fills the segment")
	select {
	case <-blocking.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the full segment's roll never left the loop (the append rolled it)")
	}
	next := send(slow, batchOf(10))
	answer(send(fast, batchOf(10)), "a send to another partition of the shard while the roll hangs")
	select {
	case out := <-next:
		t.Fatalf("a send past the full segment was answered (%+v) before its roll returned", out)
	case <-time.After(50 * time.Millisecond):
	}
	// (Read off the loop: shard.do would wait for the roll. The log locks.)
	if st := blocking.Stats(); st.SegmentsCount != 2 {
		t.Fatalf("stats during the roll count %d segments: want 2 (the one the roll starts)", st.SegmentsCount)
	}
	close(blocking.release)
	released = true
	out := answer(next, "the send after the roll")
	if out.baseOffset != 1 {
		t.Fatalf("the send after the roll got offset %d, want 1", out.baseOffset)
	}
	var st partitions.Stats
	var due bool
	var end uint64
	slow.shard.do(func() { st, due, end = blocking.Stats(), blocking.RollDue(), blocking.SegmentEndOffset(1) })
	if st.SegmentsCount != 2 || st.MessagesCount != 2 || due || end != 1 {
		t.Fatalf("after the roll: %d segments, %d messages, roll due %v, second segment starts at %d: want 2, 2, false, 1",
			st.SegmentsCount, st.MessagesCount, due, end)
	}
}

// TestClusterRollsSegmentsAtTheSameOpOnEveryReplica: with small segments
// the roll of each full segment runs in every replica's writer, after the
// Ready that applied the filling op; a replica killed mid-stream restarts
// and catches up; every replica ends with the same segment files,
// byte-identical.
func TestClusterRollsSegmentsAtTheSameOpOnEveryReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a 3-node cluster and restarts one node")
	}
	const victim = 1
	mc := startMemCluster(t, 3, 9_300, wire.OptionUint64(wire.OptSegmentSize, wire.SegmentSizeMin))
	mc.sendPadded("before", 60, 40_000)
	mc.stop(victim, false)
	mc.sendPadded("while-down", 30, 40_000)
	mc.start(victim)
	mc.sendPadded("after", 60, 40_000)
	for i := range 3 {
		mc.holdsEveryAcked(i)
	}
	want := mc.segmentFiles(0)
	if len(want) < 5 {
		t.Fatalf("node 0 holds %d segment files: want 1 MiB segments of the 6 MB sent", len(want))
	}
	for i := 1; i < 3; i++ {
		waitFor(t, fmt.Sprintf("node %d's segment files to match node 0's", i), 30*time.Second, func() bool {
			got := mc.segmentFiles(i)
			if len(got) != len(want) {
				return false
			}
			for name, b := range want {
				if !bytes.Equal(got[name], b) {
					return false
				}
			}
			return true
		})
	}
}

// laggingStore holds the first Stage after hold is set until release is
// closed, and counts the Rolls that found a roll due.
type laggingStore struct {
	partitionStore
	hold     atomic.Bool
	release  chan struct{}
	dueRolls atomic.Int32
}

func (s *laggingStore) Stage(batch []byte, tag uint64) (partitions.BatchLocation, error) {
	if s.hold.CompareAndSwap(true, false) {
		<-s.release
	}
	return s.partitionStore.Stage(batch, tag)
}

func (s *laggingStore) Roll() error {
	if s.partitionStore.RollDue() {
		s.dueRolls.Add(1)
	}
	return s.partitionStore.Roll()
}

// TestALaggingBackupRollsBetweenTheOpsOfOneReady: a backup a step behind
// its peers commits the op that filled its segment and the next ones in
// one Ready. Apply stops after the filling op, the roll runs in the
// group's writer, and apply resumes: the backup's segments end where the
// primary's do, byte for byte. Before, the next op's append rolled the
// segment on the shard loop (the writer's Roll then found nothing due).
func TestALaggingBackupRollsBetweenTheOpsOfOneReady(t *testing.T) {
	entries, _ := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 64})
	primary, backup := entries[0], entries[2]
	lagging := &laggingStore{partitionStore: backup.log, release: make(chan struct{})}
	backup.shard.do(func() { backup.log = lagging })
	released := false
	defer func() {
		if !released {
			close(lagging.release)
		}
	}()
	send := func(payload int) {
		t.Helper()
		batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: bytes.Repeat([]byte("p"), payload)}})
		if err != nil {
			t.Fatal(err)
		}
		out := primary.shard.propose(context.Background(), &partitionProposal{entry: primary, op: wire.OpSendMessages, body: batch})
		if out.code != wire.OK {
			t.Fatalf("send: %+v", out)
		}
	}
	const big = 300 << 10 // the fourth fills the 1 MiB segment
	for range 3 {
		send(big)
	}
	waitFor(t, "the backup to hold the first batches", 10*time.Second, func() bool { return lagging.NextOffset() == 3 })
	lagging.hold.Store(true)
	send(big) // fills the segment; a quorum without the backup commits it
	send(10)
	send(10)
	close(lagging.release)
	released = true
	want := primary.log.NextOffset()
	waitFor(t, "the backup to catch up", 10*time.Second, func() bool { return lagging.NextOffset() == want })
	if n := lagging.dueRolls.Load(); n != 1 {
		t.Fatalf("the backup's writer rolled %d full segments, want 1 (the loop rolled it)", n)
	}
	if got, exp := lagging.SegmentEndOffset(1), primary.log.SegmentEndOffset(1); got != exp || exp != 4 {
		t.Fatalf("the backup's second segment starts at %d, the primary's at %d (want 4)", got, exp)
	}
	if !sameRecords(t, primary.log, lagging, want) {
		t.Fatal("the backup's records differ from the primary's")
	}
}
