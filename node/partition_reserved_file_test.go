package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestViewChangeBeforeAnyCheckpointWritesNoReservationFile: the
// reservation as of a checkpoint (checkpoint.reserved) is read only for a
// checkpoint above op 0, so a group that never checkpointed writes none
// at its view changes. Each such write cost two fsyncs and a rename per
// group: after kill -9 of the node leading 10,000 fresh partitions, they
// were most of the 3 s before the first group had a new primary
// (docs/cluster.md, "Resting groups").
func TestViewChangeBeforeAnyCheckpointWritesNoReservationFile(t *testing.T) {
	entries, _ := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32})
	from := entries[0]
	handed := false
	from.shard.do(func() {
		from.shard.catchUp(from)
		handed = from.group.HandOver(1)
		from.shard.touch(from)
		from.shard.schedule(from)
	})
	if !handed {
		t.Fatal("replica 0 did not hand the group over")
	}
	to := entries[1]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var primary bool
		var view uint32
		to.shard.do(func() { primary, view = to.group.IsPrimary(), to.group.View() })
		if primary && view > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica 1 never became primary")
		}
	}
	for i, e := range entries {
		var cp uint64
		e.shard.do(func() { cp = e.checkpointOp })
		if cp != 0 {
			t.Fatalf("replica %d checkpointed (op %d): the test needs a group that never did", i, cp)
		}
		if _, err := os.Stat(filepath.Join(e.dir, checkpointReservedFile)); !os.IsNotExist(err) {
			t.Errorf("replica %d: %s after a view change at checkpoint op 0 (stat: %v)", i, checkpointReservedFile, err)
		}
	}
}
