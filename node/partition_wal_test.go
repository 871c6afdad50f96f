package node

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestPartitionWALBytesMaxBoundsRetainedAndInFlight: under a burst of
// large sends the primary keeps its retained prepare WAL plus the prepares
// in flight within [partition] wal_bytes_max (one prepare of slack), every
// send still commits (held, not refused), and pressure checkpoints keep
// every replica's WAL near the bound rather than at the journal's size.
func TestPartitionWALBytesMaxBoundsRetainedAndInFlight(t *testing.T) {
	const (
		limit   = 256 << 10
		payload = 40 << 10
		sends   = 60
	)
	entries, _ := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 16, journalSlots: 64, walBytesMax: limit})
	primary := entries[0]
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: make([]byte, payload)}})
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			primary.shard.do(func() { peak = max(peak, primary.walRetained()+primary.walQueuedBytes) })
		}
	}()
	var wg sync.WaitGroup
	codes := make(chan wire.ErrorCode, sends)
	for i := 0; i < sends; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := primary.shard.propose(context.Background(), &partitionProposal{entry: primary, op: wire.OpSendMessages, body: batch})
			codes <- out.code
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(codes)
	for c := range codes {
		if c != wire.OK {
			t.Fatalf("a send under WAL pressure was answered %d; want it held until it fits", c)
		}
	}
	if slack := uint64(limit + len(batch)); peak > slack {
		t.Fatalf("retained WAL + in flight peaked at %d bytes, above wal_bytes_max %d plus one prepare", peak, limit)
	}
	if peak == 0 {
		t.Fatal("no sample taken")
	}
	for i, e := range entries {
		var retained uint64
		var cp, cm, rec, op uint64
		// A backup may still be writing the superblock of its last
		// checkpoint (off its loop): give it a moment before judging.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			e.shard.do(func() {
				retained, cp, cm, rec, op = e.walRetained(), e.checkpointOp, e.group.CommitMin(), e.walReclaimed, e.group.Op()
			})
			if retained <= limit || time.Now().After(deadline) {
				break
			}
		}
		if retained > limit {
			des, _ := os.ReadDir(partitionWALPath(e.dir))
			for _, de := range des {
				fi, _ := de.Info()
				t.Logf("  %s %d", de.Name(), fi.Size())
			}
			t.Errorf("replica %d retains %d WAL bytes after the burst, bound %d (checkpoint %d commit_min %d reclaimed %d op %d)", i, retained, limit, cp, cm, rec, op)
		}
	}
	t.Logf("peak retained+in-flight on the primary: %d bytes (bound %d)", peak, limit)
}
