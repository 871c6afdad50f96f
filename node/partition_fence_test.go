package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/wire"
)

// syncFailingStore makes Sync fail while failSync is set.
type syncFailingStore struct {
	partitionStore
	failSync atomic.Bool
}

func (s *syncFailingStore) Sync() error {
	if s.failSync.Load() {
		return errors.New("injected: fsync EIO")
	}
	return s.partitionStore.Sync()
}

// persistedWithFaultySync runs a single-node plane with one persisted
// partition whose Sync can be made to fail.
func persistedWithFaultySync(t *testing.T, wedged time.Duration) (*partitionPlane, *partitionEntry, *syncFailingStore, []byte) {
	t.Helper()
	p := singleNodeTestPlane(t, t.TempDir(), partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 8})
	p.shards[0].do(func() { p.shards[0].wedgedTimeout = wedged })
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20, Durability: metadata.DurabilityPersisted}}
	e := p.open(partitionKey{0, 0, 0}, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 1}})
	if e.log == nil {
		t.Fatalf("open: %v", e.quarantine)
	}
	faulty := &syncFailingStore{partitionStore: e.log}
	e.shard.do(func() { e.log = faulty })
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("a")}})
	if err != nil {
		t.Fatal(err)
	}
	return p, e, faulty, batch
}

// TestPartitionFenceOutlivingTheWedgedTimeoutStopsTheProcess: the plane
// reports a fence older than superblock_wedged_fatal_timeout with the
// exit status ExitStorageWedged.
func TestPartitionFenceOutlivingTheWedgedTimeoutStopsTheProcess(t *testing.T) {
	p, e, faulty, batch := persistedWithFaultySync(t, 200*time.Millisecond)
	faulty.failSync.Store(true)
	if out := e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch}); out.code != wire.ErrTransientNotCommitted {
		t.Fatalf("send whose fsync failed: %+v", out)
	}
	select {
	case err := <-p.fatal:
		var coded interface{ ExitCode() int }
		if !errors.As(err, &coded) || coded.ExitCode() != ExitStorageWedged {
			t.Fatalf("fatal error %v without exit status %d", err, ExitStorageWedged)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a fence older than the wedged timeout did not stop the plane")
	}
}

// TestPersistedSyncFailureIsAmbiguousAndFencesUntilRestart: a persisted
// send whose fsync fails is answered 57 (it may still become visible; a
// definitive error would make the client's retry store it twice), and the
// partition is then fenced: new writes get 58 at once, also after the
// retry interval and after fsync works again (a failed fsync is never
// retried on the same files), while reads keep being served.
func TestPersistedSyncFailureIsAmbiguousAndFencesUntilRestart(t *testing.T) {
	_, e, faulty, batch := persistedWithFaultySync(t, 0)
	send := func() partitionOutcome {
		return e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch})
	}
	if out := send(); out.code != wire.OK {
		t.Fatalf("send before the fault: %+v", out)
	}
	faulty.failSync.Store(true)
	// A send a client may replay (client id, request id with the retry bit).
	identified := func() partitionOutcome {
		return e.shard.propose(context.Background(), &partitionProposal{entry: e, op: wire.OpSendMessages, body: batch,
			client: consensus.Uint128{Lo: 77}, request: dedupRequestFlag | 5, sum: 99})
	}
	if out := identified(); out.code != wire.ErrTransientNotCommitted {
		t.Fatalf("send whose fsync failed: code %d, want %d (outcome unknown)", out.code, wire.ErrTransientNotCommitted)
	}
	// Its replay must not be answered from the retry table as if it were
	// durable (found by TestNodePowerLoss: an acknowledged message lost).
	if out := identified(); out.code != wire.ErrTransientNotCommitted {
		t.Fatalf("replay of the send whose fsync failed: code %d, want %d (still unknown)", out.code, wire.ErrTransientNotCommitted)
	}
	if out := send(); out.code != wire.ErrTransientNotAccepted {
		t.Fatalf("send to the fenced partition: code %d, want %d (retryable)", out.code, wire.ErrTransientNotAccepted)
	}
	faulty.failSync.Store(false)
	time.Sleep(storageRetryInterval + 100*time.Millisecond)
	if out := send(); out.code != wire.ErrTransientNotAccepted {
		t.Fatalf("send after fsync works again: code %d, want the fence to hold until a restart", out.code)
	}
	res, err := faulty.Poll(partitions.PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: 0}, Count: 10})
	if err != nil || res.MessagesCount != 2 {
		t.Fatalf("reads of the fenced partition: %d messages, %v; want both appended batches served", res.MessagesCount, err)
	}
}

func TestPartitionFenceRetriesUnlessSticky(t *testing.T) {
	now := time.Unix(100, 0)
	var f partitionFence
	if !f.mayCarryOut(now) {
		t.Fatal("an unfenced group must carry out")
	}
	f = partitionFence{since: now, retryAt: now.Add(storageRetryInterval)}
	if f.mayCarryOut(now) || !f.mayCarryOut(now.Add(storageRetryInterval)) {
		t.Fatal("a fenced group retries after the interval, not before")
	}
	f.sticky = true
	if f.mayCarryOut(now.Add(time.Hour)) {
		t.Fatal("a failed fsync is never retried")
	}
}

// loopbackBus connects partition planes in one process (tests): a message
// goes straight to the addressed plane's shard.
type loopbackBus struct {
	planes map[uint8]*partitionPlane
}

func (b *loopbackBus) Send(to uint8, m *consensus.Message) {
	if p := b.planes[to]; p != nil {
		if e := p.entryByGroup(m.Group); e != nil && e.log != nil {
			e.shard.deliver(e, *m)
		}
	}
}
func (b *loopbackBus) SendShared(to []uint8, m *consensus.Message) {
	for _, r := range to {
		b.Send(r, m)
	}
}
func (b *loopbackBus) SendForward(uint8, *bus.Forward) {}
func (b *loopbackBus) SendFetch(uint8, *bus.Fetch)     {}
func (b *loopbackBus) Connected(uint8) bool            { return true }
func (b *loopbackBus) Stats() bus.Stats                { return bus.Stats{} }
func (b *loopbackBus) Close() error                    { return nil }

// loopbackCluster runs three clustered partition planes in this process,
// joined by a loopbackBus, each serving one replicated partition (replica
// 0 its first primary). stop(i) stops replica i's shard loop (its drain
// closes the log and the WAL).
func loopbackCluster(t *testing.T, cfg partitionGroupConfig) (entries []*partitionEntry, stop func(i int)) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	lb := &loopbackBus{planes: map[uint8]*partitionPlane{}}
	topic := metadata.Topic{Options: metadata.TopicOptions{SegmentSize: 1 << 20}}
	k := partitionKey{1, 1, 0}
	entries = make([]*partitionEntry, 3)
	stops := make([]func(), 3)
	for i := uint8(0); i < 3; i++ {
		dir := t.TempDir()
		p := newPartitionPlane(log, dir, 1, cfg, topology{clustered: true, self: i, count: 3}, defaults.Cluster)
		sbLog, err := p.openSuperblockLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sbLog.Close() }) // runs after the shard's stop (registered below)
		p.peers.set(lb, i)
		lb.planes[i] = p
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.shards[0].run(ctx); close(done) }()
		stops[i] = sync.OnceFunc(func() { cancel(); <-done })
		t.Cleanup(stops[i])
		entries[i] = p.open(k, desiredPartition{topic: topic, part: metadata.Partition{CreatedRevision: 7}, live: true})
		if entries[i].log == nil || entries[i].group == nil {
			t.Fatalf("replica %d: %v", i, entries[i].quarantine)
		}
	}
	return entries, func(i int) { stops[i]() }
}

// appendFailingStore makes Append fail while failAppend is set, or when
// beforeAppend (if set) says so.
type appendFailingStore struct {
	partitionStore
	failAppend   atomic.Bool
	beforeAppend func() bool
}

func (s *appendFailingStore) Append(b []byte) (partitions.BatchLocation, error) {
	if s.failAppend.Load() || (s.beforeAppend != nil && s.beforeAppend()) {
		return partitions.BatchLocation{}, errors.New("injected: no space left on device")
	}
	return s.partitionStore.Append(b)
}

// TestClusterReplicaThatCannotAppendStallsThenCatchesUp: a backup whose
// disk refuses a committed batch must not count it as applied (its log
// would then lack it while its peers hold it, and every later batch would
// be refused as stamped for another place on that replica alone). It
// fences the group and carries the same Ready out again once the disk
// takes writes; its log then ends byte for byte where the primary's does.
func TestClusterReplicaThatCannotAppendStallsThenCatchesUp(t *testing.T) {
	// Journals hold every op of the test: the loopback bus carries no
	// fetch frames, so the replica must catch up by repair, not transfer.
	entries, _ := loopbackCluster(t, partitionGroupConfig{prepareQueueDepth: 4, journalSlots: 64})
	faulty := &appendFailingStore{partitionStore: entries[2].log}
	entries[2].shard.do(func() { entries[2].log = faulty })
	batch, err := wire.AppendBatch(nil, []wire.BatchMessageInput{{OriginTimestamp: 1, Payload: []byte("m")}})
	if err != nil {
		t.Fatal(err)
	}
	primary := entries[0]
	send := func(n int) {
		for i := 0; i < n; i++ {
			out := primary.shard.propose(context.Background(), &partitionProposal{entry: primary, op: wire.OpSendMessages, body: batch})
			if out.code != wire.OK {
				t.Fatalf("send: %+v", out)
			}
		}
	}
	send(5)
	faulty.failAppend.Store(true)
	send(10) // a quorum (replicas 0 and 1) still commits
	fenced := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !fenced; time.Sleep(20 * time.Millisecond) {
		entries[2].shard.do(func() { fenced = entries[2].fence.fenced() })
	}
	if !fenced {
		t.Fatal("the replica that cannot append did not fence its group")
	}
	if got := faulty.NextOffset(); got > 5 {
		t.Fatalf("the failing replica's log moved to %d while appends failed", got)
	}
	faulty.failAppend.Store(false)
	send(3)
	want := primary.log.NextOffset()
	for deadline := time.Now().Add(10 * time.Second); faulty.NextOffset() != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica's log ends at %d after the disk recovered, the primary's at %d", faulty.NextOffset(), want)
		}
	}
	if !sameRecords(t, primary.log, faulty, want) {
		t.Fatal("the recovered replica's records differ from the primary's")
	}
	entries[2].shard.do(func() { fenced = entries[2].fence.fenced() })
	if fenced {
		t.Fatal("the fence did not lift after the disk took writes again")
	}
}

// sameRecords reports whether two logs hold the same records below end.
func sameRecords(t *testing.T, a, b partitionStore, end uint64) bool {
	t.Helper()
	ra, _, err := a.ReadRecords(nil, 0, end, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := b.ReadRecords(nil, 0, end, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	return string(ra) == string(rb)
}
