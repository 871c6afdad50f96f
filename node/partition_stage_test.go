package node

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// walAndSegmentBytes sums node i's prepare WAL files and segment .log
// files of the topic's partition.
func (mc *memCluster) walAndSegmentBytes(i int) (wal, segments int64) {
	mc.t.Helper()
	dir := mc.partitionDir(i)
	sum := func(d, suffix string) int64 {
		entries, err := mc.mems[i].ReadDir(d)
		if err != nil {
			mc.t.Fatalf("node %d: read %s: %v", i, d, err)
		}
		var n int64
		for _, de := range entries {
			if strings.HasSuffix(de.Name(), suffix) {
				fi, err := mc.mems[i].Stat(filepath.Join(d, de.Name()))
				if err != nil {
					mc.t.Fatal(err)
				}
				n += fi.Size()
			}
		}
		return n
	}
	return sum(filepath.Join(dir, partitionWALDir), ".pwal"), sum(dir, ".log")
}

// segmentFiles reads node i's segment .log files, by name.
func (mc *memCluster) segmentFiles(i int) map[string][]byte {
	mc.t.Helper()
	dir := mc.partitionDir(i)
	entries, err := mc.mems[i].ReadDir(dir)
	if err != nil {
		mc.t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, de := range entries {
		if strings.HasSuffix(de.Name(), ".log") {
			b, err := mc.mems[i].ReadFile(filepath.Join(dir, de.Name()))
			if err != nil {
				mc.t.Fatal(err)
			}
			out[de.Name()] = b
		}
	}
	return out
}

// TestClusterWritesEachBodyOnceThroughSegmentReferences (issue 9 point 2):
// a replica's prepare WAL records its message prepares as references to
// the batches staged in the segment, so it holds a small part of the
// bytes; a replica killed mid-stream resolves them at its restart, takes
// back what it applied past its checkpoint, catches up, and every
// replica's segment files end byte-identical.
func TestClusterWritesEachBodyOnceThroughSegmentReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a 3-node cluster and restarts one node")
	}
	const victim = 2
	mc := startMemCluster(t, 3, 9_100)
	mc.sendPadded("before", 120, 2000)
	for i := range 3 {
		mc.holdsEveryAcked(i)
	}
	for i := range 3 {
		wal, segs := mc.walAndSegmentBytes(i)
		if segs < 120*2000 || wal*4 > segs {
			t.Fatalf("node %d: prepare WAL %d bytes beside %d bytes of segments: bodies were written twice", i, wal, segs)
		}
		t.Logf("node %d: prepare WAL %d bytes, segments %d bytes", i, wal, segs)
	}

	mc.stop(victim, false) // a process crash: its page cache (the simulated disk) keeps every write
	mc.send("while-down", 30)
	mc.start(victim)
	mc.sendPadded("after", 60, 2000)
	for i := range 3 {
		mc.holdsEveryAcked(i)
	}
	want := mc.segmentFiles(0)
	for i := 1; i < 3; i++ {
		got := mc.segmentFiles(i)
		if len(got) != len(want) {
			t.Fatalf("node %d holds %d segment files, node 0 %d", i, len(got), len(want))
		}
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Fatalf("node %d: segment %s differs from node 0's (%d and %d bytes)", i, name, len(got[name]), len(b))
			}
		}
	}
}

// sendPadded is send with each payload padded to size bytes.
func (mc *memCluster) sendPadded(label string, count, size int) {
	mc.t.Helper()
	mc.sendWith(label, count, func(p string) string { return p + strings.Repeat(".", max(size-len(p), 0)) })
}
