package node

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
)

// TestStorageLostOutlivesARestart: a replica restarted with StorageLost
// keeps it at the next restart until it has rejoined (whole-node simulator:
// the second restart, with the damaged WAL set aside, voted with a log
// ending at its checkpoint and a view change dropped committed ops).
func TestStorageLostOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, dir, 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32},
		topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
	e := &partitionEntry{dir: dir, shard: p.shards[0]}
	if err := p.noteStorageLost(e, &consensus.Restored{StorageLost: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, storageLostMarkerFile)); err != nil {
		t.Fatalf("no marker after a StorageLost restart: %v", err)
	}
	again := consensus.Restored{}
	e2 := &partitionEntry{dir: dir, shard: p.shards[0]}
	if err := p.noteStorageLost(e2, &again); err != nil {
		t.Fatal(err)
	}
	if !again.StorageLost || !e2.storageLost {
		t.Fatal("the next restart, not rejoined yet, did not keep StorageLost")
	}
	// Rejoined: Normal in a view its durable superblock records as log_view.
	cfg := consensus.DefaultConfig(0, 1)
	g, err := consensus.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e2.group = g
	p.shards[0].rejoinedAfterLoss(e2)
	if _, err := os.Stat(filepath.Join(dir, storageLostMarkerFile)); !os.IsNotExist(err) || e2.storageLost {
		t.Fatalf("the marker outlived the rejoin: %v (storageLost %v)", err, e2.storageLost)
	}
}
