package node

import (
	"context"
	"github.com/lodestream/lodestream/config"
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
)

// TestReplicaMessagesRouteByGroup: a bus message goes to the loop that owns
// its group id: the metadata loop, or the shard of the partition the id
// names; anything else is counted and dropped.
func TestReplicaMessagesRouteByGroup(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, t.TempDir(), 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 16}, topology{count: 1}, config.ClusterConfig{})
	sh := p.shards[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sh.run(ctx); close(done) }()
	stopShard := func() { cancel(); <-done }
	k := partitionKey{stream: 3, topic: 7, partition: 11}
	topic := metadata.Topic{Options: metadata.DefaultTopicOptions(metadata.DurabilityReplicated, metadata.DurabilityReplicated)}
	e := p.open(k, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if e.log == nil {
		t.Fatalf("open: %v", e.quarantine)
	}
	if got := p.entryByGroup(e.groupID()); got != e || e.groupID() != k.groupID()|1<<52 {
		t.Fatalf("entryByGroup(%x) = %v", e.groupID(), got)
	}
	// Another incarnation of the same partition (revision 2) is not this one.
	if p.entryByGroup(partitionGroupID(k, 2)) != nil || p.entryByGroup(k.groupID()) != nil {
		t.Fatal("a message of another incarnation resolved to the entry")
	}
	if p.entryByGroup(metadataGroupID) != nil || p.entryByGroup(partitionKey{3, 7, 12}.groupID()) != nil {
		t.Fatal("the metadata id or an unknown partition resolved to an entry")
	}
	n := &Node{plane: p, driver: &driver{inbox: make(chan consensus.Message, 1)}}
	n.routeReplicaMessage(consensus.Message{Kind: consensus.MsgCommit, Group: metadataGroupID})
	if len(n.driver.inbox) != 1 {
		t.Fatal("a metadata message did not reach the metadata loop")
	}
	stopShard() // the loop would step it at once; check the queue instead
	n.routeReplicaMessage(consensus.Message{Kind: consensus.MsgCommit, Group: e.groupID()})
	if len(e.shard.inbox) != 1 {
		t.Fatal("a partition message did not reach its shard")
	}
	n.routeReplicaMessage(consensus.Message{Kind: consensus.MsgCommit, Group: partitionKey{9, 9, 9}.groupID()})
	if n.unroutedReplicaMessages.Load() != 1 {
		t.Fatal("a message for an unknown group was not counted")
	}
	// The shard steps it into the group (a one-replica group ignores a
	// peer's message) without touching anything else.
	e.shard.step(<-e.shard.inbox)
}
