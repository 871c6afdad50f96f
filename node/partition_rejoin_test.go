package node

import (
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
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
