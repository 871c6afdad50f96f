package node

import (
	"errors"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
)

// TestASetAsideThatFailsOnAFullDiskIsRetried (metadata simulator seed
// 125156): a cluster replica's open found damage in its active segment
// and went to set it aside, and the disk was full. The open's error must
// name the storage failure, not the damage: the partition-reopen job
// retries storage failures and never damage (partition_open_retry.go), so
// joined with the quarantine it stayed refused until a restart. Once
// space returns, the retried open sets the damage aside and serves the
// verified prefix.
func TestASetAsideThatFailsOnAFullDiskIsRetried(t *testing.T) {
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := vfs.NewMem(3)
	p := newPartitionPlane(log, "/data", 1, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 32},
		topology{clustered: true, self: 1, count: 3}, defaults.Cluster)
	p.fsys = m
	p.openRetries = map[partitionKey]reopenBackoff{}
	k := partitionKey{1, 1, 0}
	e := &partitionEntry{key: k, dir: p.partitionDir(k), shard: p.shards[0]}
	if err := m.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	l, err := partitions.Open(e.dir, p.logOptions(topic))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		appendTestBatch(t, l, 3, uint64(1000+i))
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	segment := l.SegmentLogPath(0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := m.Stat(segment)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.FlipByte(segment, st.Size()/2); err != nil { // the middle batch: interior damage
		t.Fatal(err)
	}

	m.SetCapacity(m.Used()) // full: the verified prefix cannot be copied
	_, err = p.openLog(e, topic)
	if err == nil || errors.Is(err, partitions.ErrQuarantined) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open on a full disk: %v, want ENOSPC and not the quarantine", err)
	}
	e.quarantine = err
	p.entries[k] = e
	var retried []partitionKey
	p.reopenInline = func(e *partitionEntry) { retried = append(retried, e.key) }
	t0 := time.Unix(1_700_000_000, 0)
	p.retryFailedOpens(t0)
	p.retryFailedOpens(t0.Add(reopenRetryMin))
	if len(retried) != 1 {
		t.Fatalf("the partition-reopen job retried %v, want the partition once", retried)
	}

	m.SetCapacity(0) // space returns
	again, err := p.openLog(e, topic)
	if err != nil {
		t.Fatalf("the retried open: %v", err)
	}
	defer again.Close()
	if next := again.NextOffset(); next == 0 || next >= 9 {
		t.Fatalf("after the set-aside the log resumes at offset %d, want the verified prefix (1..8)", next)
	}
}
