package node

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
)

// TestPartitionWithoutSuperblockRejoinsRecoveringUnlessCreatedLive: in a
// cluster, an empty partition directory without a superblock is a brand
// new group only for a partition created while this node ran; one created
// before this boot (a wiped node, or one that lost the group's first
// superblock) must not vote with an empty log, so it starts Recovering.
func TestPartitionWithoutSuperblockRejoinsRecoveringUnlessCreatedLive(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	for _, tc := range []struct {
		name string
		live bool
		want consensus.Status
	}{
		{"created while this node ran", true, consensus.StatusNormal},
		{"created before this boot", false, consensus.StatusRecovering},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defaults, err := config.Defaults()
			if err != nil {
				t.Fatal(err)
			}
			p := newPartitionPlane(log, t.TempDir(), 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8},
				topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
			close(p.shards[0].stopped) // no loop: controls run inline
			e := p.open(partitionKey{1, 1, 0}, desiredPartition{topic: topic,
				part: metadata.Partition{CreatedRevision: 7}, live: tc.live})
			if e.group == nil {
				t.Fatalf("group did not start: %v", e.quarantine)
			}
			if got := e.group.Status(); got != tc.want {
				t.Fatalf("status %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReconcileMarksPartitionsCreatedAfterBootLive: the boot reconcile
// fixes the revision that separates the two cases above.
func TestReconcileMarksPartitionsCreatedAfterBootLive(t *testing.T) {
	p := &partitionPlane{liveFromRevision: 10}
	if p.desiredPartitionOf(metadata.Topic{}, metadata.Partition{CreatedRevision: 10}).live {
		t.Fatal("a partition of the boot revision counted as created live")
	}
	if !p.desiredPartitionOf(metadata.Topic{}, metadata.Partition{CreatedRevision: 11}).live {
		t.Fatal("a partition created after the boot reconcile did not count as live")
	}
}

// TestPartitionRejoiningWithoutSuperblockWritesOne: a group that restarts
// without a superblock (created before this boot, or data without one)
// writes one before it says anything, so its next restart replays the
// prepares its WAL acknowledged instead of resetting the WAL and voting
// with an empty log (metadata simulator finding M8).
func TestPartitionRejoiningWithoutSuperblockWritesOne(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	for _, withData := range []bool{false, true} {
		t.Run(fmt.Sprintf("data=%v", withData), func(t *testing.T) {
			defaults, err := config.Defaults()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8},
				topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
			close(p.shards[0].stopped) // no loop: controls run inline
			key := partitionKey{1, 1, 0}
			if withData { // a group that ran, then lost its superblock
				e := p.open(key, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}, live: true})
				if e.group == nil {
					t.Fatalf("group did not start: %v", e.quarantine)
				}
				appendTestBatch(t, e.log.(*partitions.Log), 3, 1000)
				_ = e.closeWAL()
				if err := e.log.Close(); err != nil {
					t.Fatal(err)
				}
				for _, slot := range []string{"superblock.a", "superblock.b"} {
					if err := os.Remove(filepath.Join(e.dir, slot)); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
				}
				p = newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8},
					topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
				close(p.shards[0].stopped)
			}
			e := p.open(key, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}})
			if e.group == nil {
				t.Fatalf("group did not start: %v", e.quarantine)
			}
			t.Cleanup(func() { _ = e.closeWAL(); _ = e.log.Close() })
			_, st, err := journal.OpenSuperblock(e.dir, p.identity)
			if err != nil {
				t.Fatal(err)
			}
			if st == nil {
				t.Fatal("the group runs without a durable superblock: its next restart would reset its WAL")
			}
		})
	}
}
