package node

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/vfs"
)

// TestClusterWipedNodeThatCrashedWhileSettlingRejoinsLost: a node whose
// disk was replaced boots while its peers are down, so it cannot tell a
// new cluster from lost storage; it writes its boot checkpoint and is
// stopped. Booted again beside its peers it must still ask them, find the
// cluster's history and rejoin as a lost replica, not restart as an
// intact one from the boot checkpoint (an empty log that nacks and
// elects). Once it holds a view's log its marker goes.
func TestClusterWipedNodeThatCrashedWhileSettlingRejoinsLost(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a 3-node cluster, then every node again")
	}
	const wiped = 2
	mc := startMemCluster(t, 3, 7_400)
	mc.send("before", 20)
	mc.holdsEveryAcked(wiped)
	for i := range mc.n {
		mc.stop(i, true)
	}
	if err := mc.mems[wiped].RemoveAll(mc.dirs[wiped]); err != nil {
		t.Fatal(err)
	}
	if err := mc.mems[wiped].MkdirAll(mc.dirs[wiped], 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(mc.dirs[wiped], metadataLostMarkerFile)
	mc.start(wiped) // alone: no peer answers
	if got := readSettleMarker(t, mc.mems[wiped], marker); got != "unsettled" {
		t.Fatalf("a node booted on empty storage, its peers down: marker %q, want unsettled", got)
	}
	mc.stop(wiped, false)
	if strings.Contains(mc.logs[wiped].String(), "storage was lost") {
		t.Fatal("the node decided with no peer up")
	}

	var wg sync.WaitGroup
	for i := range mc.n { // a node waits for a quorum before it serves: boot them together
		wg.Add(1)
		go func() {
			defer wg.Done()
			mc.start(i)
		}()
	}
	wg.Wait()
	waitFor(t, "the wiped node to find the cluster's history", 30*time.Second, func() bool {
		return strings.Contains(mc.logs[wiped].String(), "the cluster has history: this replica's storage was lost")
	})
	mc.c.Close()
	mc.c = clusterClient(mc.ctx, t, mc.addrs)
	mc.send("after", 20)
	mc.holdsEveryAcked(wiped)
	waitFor(t, "the wiped node's marker to go once it rejoined", 30*time.Second, func() bool {
		return readSettleMarker(t, mc.mems[wiped], marker) == ""
	})
}

// readSettleMarker is the marker's content, "" when there is none.
func readSettleMarker(t *testing.T, fsys *vfs.Mem, path string) string {
	t.Helper()
	b, err := fsys.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func TestMetadataSettleMarkerRoundTrip(t *testing.T) {
	fsys := vfs.NewMem(1)
	dir := "/data"
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []metadataSettle{metadataUnsettled, metadataLost, metadataSettled} {
		if err := writeMetadataSettle(fsys, dir, s); err != nil {
			t.Fatal(err)
		}
		got, warning, err := readMetadataSettle(fsys, dir)
		if err != nil || warning != "" || got != s {
			t.Fatalf("wrote %v, read %v (%q, %v)", s, got, warning, err)
		}
	}
	if err := vfs.WriteFile(fsys, filepath.Join(dir, metadataLostMarkerFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, warning, err := readMetadataSettle(fsys, dir); err != nil || got != metadataLost || !strings.Contains(warning, "garbage") {
		t.Fatalf("damaged marker: %v, %q, %v; want lost with a warning naming the content", got, warning, err)
	}
}

// TestPartitionsLostMarkerOutlivesTheMetadataRejoin: deciding "lost" also
// records it for the partitions, and the metadata group's rejoin does not
// remove that record; the partition-reopen job does, once every partition
// metadata holds is open (metadata simulator seed 11509: a wiped node
// whose metadata rejoined before its partitions reopened restarted them
// as intact replicas with empty logs).
func TestPartitionsLostMarkerOutlivesTheMetadataRejoin(t *testing.T) {
	fsys := vfs.NewMem(1)
	dir := "/data"
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeMetadataSettle(fsys, dir, metadataLost); err != nil {
		t.Fatal(err)
	}
	if err := writeMetadataSettle(fsys, dir, metadataSettled); err != nil { // the metadata group rejoined
		t.Fatal(err)
	}
	if lost, err := partitionsLostMarked(fsys, dir); err != nil || !lost {
		t.Fatalf("after the metadata rejoined: partitions marked lost %v (%v), want true", lost, err)
	}

	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	p := newPartitionPlane(slog.New(slog.NewTextHandler(io.Discard, nil)), dir, 1,
		partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8}, topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
	p.useFS(fsys)
	p.partitionsLost.Store(true)
	state := metadata.NewState()
	hash, err := metadata.RootPasswordHash("test", "iggy", "iggy")
	if err != nil {
		t.Fatal(err)
	}
	if err := state.SeedRoot("iggy", hash); err != nil {
		t.Fatal(err)
	}
	for op, cmd := range []metadata.Command{
		metadata.CreateStream{Name: "s"},
		metadata.CreateTopic{Stream: metadata.ByName("s"), Name: "t", PartitionsCount: 1, MessageExpiry: metadata.Never,
			MaxTopicSize: metadata.Never, Compression: metadata.CompressionNone,
			Options: metadata.TopicOptions{SegmentSize: metadata.SegmentSizeMin, MessagesRequiredToSave: metadata.DefaultMessagesRequiredToSave,
				Durability: metadata.DurabilityReplicated, ConsumerOffsetDurability: metadata.DurabilityReplicated}},
	} {
		if res := state.Apply(metadata.ApplyContext{Op: uint64(op + 1), UserID: metadata.RootUserID}, cmd); res.Code != 0 {
			t.Fatalf("%T: code %d", cmd, res.Code)
		}
	}
	p.state = state
	p.clearPartitionsLost()
	if lost, _ := partitionsLostMarked(fsys, dir); !lost {
		t.Fatal("the marker went while a partition metadata holds was not open")
	}
	p.state = metadata.NewState() // nothing to open
	p.clearPartitionsLost()
	if lost, _ := partitionsLostMarked(fsys, dir); lost {
		t.Fatal("the marker stayed once every partition was open")
	}
}
