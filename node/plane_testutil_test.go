package node

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/lodestream/lodestream/config"
)

// singleNodeTestPlane is a one-shard, single-node partition plane under
// dataDir whose shard loop runs until the test ends.
func singleNodeTestPlane(t *testing.T, dataDir string, cfg partitionGroupConfig) *partitionPlane {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := newPartitionPlane(log, dataDir, 1, cfg, topology{count: 1}, config.ClusterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.shards[0].run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}
