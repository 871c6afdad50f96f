package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// State transfer of a partition replica (cluster mode). Consensus hands
// the replica a checkpoint it must install because the ops it lacks were
// evicted from every journal. The checkpoint (partition_checkpoint.go)
// names the frontier the log must reach; a transfer job pulls the missing
// records from peers, one verified chunk in flight at a time, and appends
// them to the log as stored there (byte-identical: the primary stamped
// them). It resumes from the log's end after any failure, and what it
// appended is committed data, so an interrupted transfer loses nothing.
// The Ready carrying the checkpoint stays un-advanced (the group neither
// applies nor acknowledges anything) until the log covers the frontier;
// then the consumer offsets are installed and the superblock names the
// new checkpoint. Memory is bounded by one chunk whatever the partition's
// size.

// Transfer bounds.
const (
	transferChunkBytes     = 1 << 20 // record bytes asked for per fetch
	transferFetchTimeout   = 5 * time.Second
	transferBackoffMin     = 100 * time.Millisecond
	transferBackoffMax     = 2 * time.Second
	transferFailureLogEach = 10 // one warning per this many failed fetches
)

// Fetch outcomes a recordSource reports (the replica bus's fetch statuses).
const (
	fetchOK uint8 = iota
	fetchNoSuchGroup
	fetchBelowRetained
	fetchUnavailable
	fetchOtherEpoch
)

// fetchedRecords is one chunk a peer answered.
type fetchedRecords struct {
	status  uint8
	first   uint64 // the peer's first stored offset
	next    uint64 // the peer's log end
	records []byte // whole records from the offset asked for
	// end: the offset after the records; past a hole the peer's log
	// skipped (partitions.Log.SkipTo) when the offset asked for is in one.
	end uint64
	// The peer's purge epoch: the generation its files reflect and the op
	// that carried it out (fetchOtherEpoch when not the one asked for).
	purgeGeneration, purgeOp uint64
}

// recordSource fetches a chunk of a partition group's stored records of
// purge epoch epoch from a peer: the replica bus in production.
type recordSource interface {
	fetchRecords(ctx context.Context, peer uint8, group, epoch, from, end uint64, bytesMax uint32) (fetchedRecords, error)
}

// purgedSinceError: a peer's log is of a later purge epoch than the one
// a transfer fetches; the records it wants are gone everywhere, and the
// group committed that purge (the peer carried it out).
type purgedSinceError struct {
	generation, op uint64
}

func (e *purgedSinceError) Error() string {
	return fmt.Sprintf("the peers purged the partition since (generation %d at op %d)", e.generation, e.op)
}

// partitionTransfer is one running state transfer of a partition replica.
type partitionTransfer struct {
	op     uint64
	target partitionCheckpoint
	cancel context.CancelFunc
	done   chan struct{} // closed when the job ended
	err    error         // why it ended without covering the frontier; set before done closes
}

func (t *partitionTransfer) stop() {
	t.cancel()
	<-t.done
}

// transferReady (shard goroutine, from persist) reports whether the
// transferred snapshot is installed: it starts the job for a new snapshot,
// answers errInstallPending while the job runs, and installs the consumer
// offsets once the log covers the frontier.
func (s *partitionShard) transferReady(e *partitionEntry, snap consensus.Snapshot) error {
	t := e.transfer
	if t == nil || t.op != snap.Op {
		if t != nil {
			t.stop()
		}
		// The transfer moves and removes segments: no reference may name
		// their bytes (partition_stage.go).
		if err := e.inlineAllRefs(); err != nil {
			return fmt.Errorf("state transfer to op %d: %w", snap.Op, err)
		}
		cp, err := decodePartitionCheckpoint(snap.Data)
		if err != nil {
			return fmt.Errorf("transferred snapshot at op %d: %w", snap.Op, err)
		}
		if err := s.adoptPurge(e, snap.Op, cp); err != nil {
			return fmt.Errorf("transferred snapshot at op %d: %w", snap.Op, err)
		}
		t = s.startTransfer(e, snap.Op, cp)
		e.transfer = t
	}
	select {
	case <-t.done:
	default:
		return errInstallPending
	}
	e.transfer = nil
	var purged *purgedSinceError
	if errors.As(t.err, &purged) {
		// The snapshot's records are gone everywhere: the files take the
		// purge the peers carried out since, and the ops between the
		// snapshot and it apply on the shadow of their epoch.
		if err := s.purgeTo(e, purged.generation, purged.op, "the peers purged the partition after the snapshot it transfers to"); err != nil {
			return fmt.Errorf("state transfer to op %d: %w", snap.Op, err)
		}
		if !e.erasedByPurge(snap.Op) {
			return fmt.Errorf("state transfer to op %d: the peers' purge at op %d does not follow it", snap.Op, purged.op)
		}
		t.err = nil
	}
	if errors.Is(t.err, errTransferPassEnded) {
		return errInstallPending // an inline shard's pass found no peer to serve: the next Ready tries again
	}
	if t.err != nil {
		return fmt.Errorf("state transfer to op %d stopped (it starts again): %w", snap.Op, t.err)
	}
	if first := e.log.Stats().FirstOffset; t.target.first > first && !e.erasedByPurge(snap.Op) {
		// The peers cut their logs (retention, DeleteSegments) in ops below
		// the snapshot, which this replica never applies: cut here too, at
		// the snapshot's first offset, so the replicas keep the same segments.
		if _, err := e.log.DeleteSegmentsBefore(t.target.first); err != nil {
			return fmt.Errorf("state transfer to op %d: cut below offset %d as the peers did: %w", snap.Op, t.target.first, err)
		}
		if t.target.first > e.marker.DeletedUpTo {
			m := e.marker
			m.DeletedUpTo = t.target.first
			if err := s.recordMarker(e, m); err != nil {
				return fmt.Errorf("state transfer to op %d: record the cut: %w", snap.Op, err)
			}
		}
	}
	if snap.Op >= e.offsetsAppliedOp && !e.erasedByPurge(snap.Op) {
		// (Not a snapshot of an epoch the files' purge erased.)
		if err := installConsumerOffsets(e.log, t.target.offsets); err != nil {
			return fmt.Errorf("state transfer to op %d: %w", snap.Op, err)
		}
	}
	if t.target.hasReserved && t.target.reserved != e.marker.OffsetsReserved {
		m := e.marker
		m.OffsetsReserved = t.target.reserved
		if err := s.recordMarker(e, m); err != nil {
			return fmt.Errorf("state transfer to op %d: record the offset reservation: %w", snap.Op, err)
		}
	}
	table := dedupTable{}
	if t.target.dedup != nil {
		var err error
		if table, _, err = decodeDedupTable(t.target.dedup); err != nil {
			return fmt.Errorf("state transfer to op %d: %w", snap.Op, err)
		}
	}
	e.dedup = table
	e.checkpointOp, e.checkpointFrontier, e.checkpointDedup = snap.Op, t.target.frontier, t.target.dedup
	e.appliedNext = t.target.frontier
	e.erasedPurgeGeneration = t.target.purge.generation // zero without it: the ops above it tell
	if t.target.hasReserved {
		e.checkpointReserved = t.target.reserved
	}
	// The retry table on disk is of an older checkpoint: it is rewritten
	// before the superblock names this one, or a restart would read it
	// back and no longer recognise retries its peers do (whole-node
	// simulator: the same request appended twice on some replicas).
	e.checkpointDedupDirty = true
	e.noteCheckpointOffsets(t.target.offsets)
	s.log.Info("partition state transfer installed", "dir", e.dir, "op", snap.Op, "frontier", t.target.frontier,
		"consumer_offsets", len(t.target.offsets))
	return nil
}

// startTransfer runs the job on its own goroutine, asking the primary of
// the group's current view first.
func (s *partitionShard) startTransfer(e *partitionEntry, op uint64, target partitionCheckpoint) *partitionTransfer {
	ctx, cancel := context.WithCancel(context.Background())
	t := &partitionTransfer{op: op, target: target, cancel: cancel, done: make(chan struct{})}
	if e.erasedByPurge(op) {
		// The files hold a later purge's epoch: the snapshot's records are
		// gone everywhere, and the ops above it apply on the shadow of
		// their epoch (partition_purge_replay.go).
		s.log.Info("partition state transfer to a checkpoint before the purge the files reflect: nothing to fetch", "dir", e.dir,
			"op", op, "purge_op", e.marker.PurgeOp)
		close(t.done)
		return t
	}
	peers := transferPeers(e.group.ReplicaID(), s.replicaCount, e.group.View())
	epoch := e.marker.PurgeGeneration // the snapshot's (adoptPurge)
	s.log.Info("partition state transfer started", "dir", e.dir, "op", op, "frontier", target.frontier,
		"from_offset", e.log.NextOffset(), "peers", peers)
	if s.inline {
		// A simulator's shard: one synchronous pass over the peers.
		t.err = fetchUntilFrontierPaced(ctx, s.records, e.log, e.groupID(), epoch, target.frontier, peers, s.log.With("dir", e.dir),
			func(_ context.Context, failures int, _ time.Duration) error {
				if failures >= len(peers) {
					return errTransferPassEnded
				}
				return nil
			})
		close(t.done)
		return t
	}
	go func() {
		defer close(t.done)
		t.err = fetchUntilFrontier(ctx, s.records, e.log, e.groupID(), epoch, target.frontier, peers, s.log.With("dir", e.dir))
	}()
	return t
}

// transferPeers lists the replicas to fetch from: the view's primary
// first (it holds everything committed), then the others by id.
func transferPeers(self, count uint8, view uint32) []uint8 {
	if count == 0 {
		return nil
	}
	primary := uint8(view % uint32(count))
	var peers []uint8
	if primary != self {
		peers = append(peers, primary)
	}
	for p := uint8(0); p < count; p++ {
		if p != self && p != primary {
			peers = append(peers, p)
		}
	}
	return peers
}

// errTransferNoPeer: nothing to fetch from (a one-replica group, or no bus).
var errTransferNoPeer = errors.New("no peer to fetch records from")

// fetchUntilFrontier appends records fetched from peers until the log
// reaches frontier. It walks the peers on failure with a bounded backoff
// and returns only when covered, cancelled, or the log itself fails.
func fetchUntilFrontier(ctx context.Context, src recordSource, l partitionStore, group, epoch, frontier uint64, peers []uint8, log transferLog) error {
	return fetchUntilFrontierPaced(ctx, src, l, group, epoch, frontier, peers, log, pauseBackoff)
}

// transferLog is where a transfer reports failed fetches.
type transferLog interface {
	Warn(string, ...any)
}

// pauseBackoff waits d (the backoff after a failed fetch) unless ctx ends.
func pauseBackoff(ctx context.Context, _ int, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errTransferPassEnded: an inline transfer tried every peer once without
// covering the frontier (the group's next Ready starts it again).
var errTransferPassEnded = errors.New("every peer tried once")

// fetchUntilFrontierPaced is fetchUntilFrontier with its pause after the
// n-th consecutive failure given: a non-nil error from pause ends it.
func fetchUntilFrontierPaced(ctx context.Context, src recordSource, l partitionStore, group, epoch, frontier uint64, peers []uint8,
	log transferLog, pause func(ctx context.Context, failures int, backoff time.Duration) error) error {
	if src == nil || len(peers) == 0 {
		return errTransferNoPeer
	}
	failures := 0
	backoff := transferBackoffMin
	fail := func(peer uint8, why string, err error) error {
		failures++
		if failures%transferFailureLogEach == 1 {
			log.Warn("partition state transfer: fetch failed, trying the next peer", "peer", peer, "why", why,
				"err", err, "failures", failures)
		}
		d := backoff
		backoff = min(2*backoff, transferBackoffMax)
		return pause(ctx, failures, d)
	}
	for attempt := 0; ; attempt++ {
		next := l.NextOffset()
		if next >= frontier {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		peer := peers[attempt%len(peers)]
		fctx, cancel := context.WithTimeout(ctx, transferFetchTimeout)
		chunk, err := src.fetchRecords(fctx, peer, group, epoch, next, frontier, transferChunkBytes)
		cancel()
		var why string
		switch {
		case err != nil:
			why = "no answer"
		case chunk.status == fetchOtherEpoch && chunk.purgeGeneration > epoch:
			return &purgedSinceError{generation: chunk.purgeGeneration, op: chunk.purgeOp}
		case chunk.status == fetchOtherEpoch:
			why = fmt.Sprintf("the peer's log is of an older purge epoch (%d)", chunk.purgeGeneration)
		case chunk.status == fetchBelowRetained && chunk.first > next:
			// The peers' retention moved past everything this replica
			// lacks: start the log at the peer's first offset. That may be
			// past the frontier too, when committed cuts above the target
			// checkpoint removed all it names (whole-node simulator seed
			// 19456): the ops above it then append nothing below the new
			// start, as a restarted replica's replays of ops below its first
			// offset (partitionShard.replayedSend), and their cut is a no-op
			// here, so the files end as the peers' do.
			if _, err := l.ResetTo(chunk.first); err != nil {
				return fmt.Errorf("restart the log at offset %d: %w", chunk.first, err)
			}
			continue
		case chunk.status != fetchOK:
			why = fmt.Sprintf("status %d", chunk.status)
		case len(chunk.records) == 0 && chunk.end > next:
			// The offsets asked for are a hole the peer's log skipped, with
			// nothing after it up to the frontier: skip it here too, up to
			// the frontier at most. The peer's hole may reach past it: two
			// skips with no record between are one hole in its files, and
			// the frontier may be the first one's end (whole-node simulator
			// seed 17064); the group's later skip op extends this one.
			to := min(chunk.end, frontier)
			if err := l.SkipTo(to); err != nil {
				return fmt.Errorf("%w: skip offsets %d..%d as the peer did: %v", errLocalLog, next, to-1, err)
			}
			continue
		case len(chunk.records) == 0:
			why = fmt.Sprintf("the peer's log ends at %d", chunk.next)
		default:
			appended, aerr := appendFetched(l, chunk.records, frontier)
			if aerr == nil || appended > 0 {
				failures, backoff = 0, transferBackoffMin
			}
			if aerr == nil {
				continue
			}
			if errors.Is(aerr, errLocalLog) {
				return aerr
			}
			why, err = "bad records", aerr
		}
		if ferr := fail(peer, why, err); ferr != nil {
			return ferr
		}
	}
}

// errLocalLog marks a failure of this replica's own log (not the peer's
// records): the transfer stops.
var errLocalLog = errors.New("local partition log")

// appendFetched verifies each fetched record (framing, every checksum,
// contiguity, within the frontier) and appends it; it returns how many it
// appended before any refusal.
func appendFetched(l partitionStore, records []byte, frontier uint64) (int, error) {
	n := 0
	for len(records) > 0 {
		h, err := wire.DecodeBatchHeader(records)
		if err != nil {
			return n, err
		}
		if h.BatchLength > uint64(len(records)) {
			return n, fmt.Errorf("record at offset %d: batch_length %d overruns the %d bytes left", h.BaseOffset, h.BatchLength, len(records))
		}
		rec := records[:h.BatchLength]
		if _, err := wire.VerifyBatchRecord(rec); err != nil {
			return n, fmt.Errorf("record at offset %d: %w", h.BaseOffset, err)
		}
		if next := l.NextOffset(); n == 0 && h.BaseOffset > next && h.BaseOffset < frontier {
			// The chunk starts after a hole the peer's log skipped (a read
			// from inside one starts past it): skip it here too.
			if err := l.SkipTo(h.BaseOffset); err != nil {
				return n, fmt.Errorf("%w: skip offsets %d..%d as the peer did: %v", errLocalLog, next, h.BaseOffset-1, err)
			}
		}
		if next := l.NextOffset(); h.BaseOffset != next || h.BaseOffset+uint64(h.MessageCount) > frontier {
			return n, fmt.Errorf("record at offset %d (%d messages) does not continue the log at %d within the frontier %d",
				h.BaseOffset, h.MessageCount, next, frontier)
		}
		if _, err := l.Append(rec); err != nil {
			return n, fmt.Errorf("%w: append fetched record at %d: %v", errLocalLog, h.BaseOffset, err)
		}
		n++
		records = records[h.BatchLength:]
	}
	return n, nil
}

// installConsumerOffsets makes the log's consumer offsets exactly the
// checkpoint's.
func installConsumerOffsets(l partitionStore, want []partitions.ConsumerOffsetEntry) error {
	keep := make(map[[2]uint32]bool, len(want))
	for _, o := range want {
		keep[[2]uint32{uint32(o.Kind), o.ID}] = true
		if cur, ok := l.ConsumerOffset(o.Kind, o.ID); ok && cur == o.Offset {
			continue
		}
		if err := l.StoreConsumerOffset(o.Kind, o.ID, o.Offset); err != nil {
			return fmt.Errorf("install consumer offset %d/%d: %w", o.Kind, o.ID, err)
		}
	}
	for _, o := range l.ConsumerOffsets() {
		if !keep[[2]uint32{uint32(o.Kind), o.ID}] {
			if err := l.DeleteConsumerOffset(o.Kind, o.ID); err != nil {
				return fmt.Errorf("remove consumer offset %d/%d: %w", o.Kind, o.ID, err)
			}
		}
	}
	return nil
}
