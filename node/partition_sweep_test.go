package node

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodestream/lodestream/metadata"
)

// TestSweepKeepsPartitionsNewerThanTheState (metadata simulator seed
// 18092): a restarted node's metadata can stand below what it applied
// before its crash (its new view's commit has not reached the op that
// created a topic yet). The sweep must not take the topic's directory for
// one metadata deleted: a partition whose recorded creation revision is
// above the state's stays; one at or below it that metadata no longer
// holds goes. Nor may a partition whose files are of a later incarnation
// than the state names be cleared when it opens, or deleted when that
// stale entry is removed.
func TestSweepKeepsPartitionsNewerThanTheState(t *testing.T) {
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	newer := p.open(partitionKey{1, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 9}})
	older := p.open(partitionKey{2, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 4}})
	if newer.log == nil || older.log == nil {
		t.Fatalf("open: %v, %v", newer.quarantine, older.quarantine)
	}
	for _, e := range []*partitionEntry{newer, older} {
		e.shard.do(func() { _ = e.log.Close() })
	}
	p.entries = map[partitionKey]*partitionEntry{}

	p.sweep(nil, 6) // a state at revision 6 that holds neither
	if _, err := os.Stat(filepath.Join(p.root, "1")); err != nil {
		t.Fatalf("the stream of a partition created at revision 9 was removed by a state at revision 6: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.root, "2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stream of a partition created at revision 4, unknown to a state at revision 6, is still there: %v", err)
	}

	// The state names an earlier incarnation of the same partition.
	stale := p.open(partitionKey{1, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 3}})
	if !errors.Is(stale.quarantine, errFilesAhead) {
		t.Fatalf("opening revision 3 over revision 9's files: %v, want errFilesAhead", stale.quarantine)
	}
	if m, ok := readMarker(p.fsys, stale.dir); !ok || m.Revision != 9 {
		t.Fatalf("the later incarnation's marker: %+v (%v), want revision 9 kept", m, ok)
	}
	p.remove(stale)
	if m, ok := readMarker(p.fsys, stale.dir); !ok || m.Revision != 9 {
		t.Fatalf("removing the stale entry took the later incarnation's files: %+v (%v)", m, ok)
	}
	if again := p.open(partitionKey{1, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 9}}); again.log == nil {
		t.Fatalf("the later incarnation does not open once the state names it: %v", again.quarantine)
	}
}
