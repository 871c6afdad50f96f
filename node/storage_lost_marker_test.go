package node

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
