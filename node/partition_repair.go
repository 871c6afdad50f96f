package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lodestream/lodestream/partitions"
)

// repairDamaged (cluster mode; any goroutine): a poll, a record read or
// the scrubber found the batch ce names damaged in this replica's log.
// The replicas' segment files are byte-identical, so the batch is fetched
// from a peer and written back in place (partitions.Log.RepairBatch): the
// partition stays served and the replica keeps its vote (issue 8 point
// 4). Reopening the partition instead (reopenDamaged: the open sets the
// damage and everything after it aside, the group rejoins with nothing
// applied) costs the replica its vote until a primary answers, and two
// replicas reopened at once could stall the group (whole-node simulator
// finding 24). That stays the fallback when a peer's copy does not fit
// the damaged place. While no peer can give the batch (unreachable,
// behind, its retention moved on) the range stays refused and the next
// read or scrub round tries again. A single node has no peer: the
// damaged range stays refused.
func (p *partitionPlane) repairDamaged(e *partitionEntry, ce *partitions.CorruptionError) {
	if !p.clustered() || e.log == nil {
		return
	}
	if ce == nil {
		p.reopenDamaged(e)
		return
	}
	if !e.repairing.CompareAndSwap(false, true) {
		return // a repair of this partition is running; a later read finds what it leaves
	}
	sh := e.shard
	run := func() {
		defer e.repairing.Store(false)
		refused, err := p.repairFromPeers(sh.records, e, ce)
		switch {
		case err == nil:
		case refused:
			p.log.Warn("corrupt batch could not be repaired from a peer: reopening the partition to refill it",
				"dir", e.dir, "file", ce.File, "position", ce.Position, "err", err)
			p.reopenDamaged(e)
		case errors.Is(err, partitions.ErrSegmentGone) || errors.Is(err, partitions.ErrClosed):
			// Nothing left to repair here.
		default:
			// No peer could answer with it now (unreachable, behind, or its
			// retention moved on, which the replica's own ordered cut
			// follows): it stays refused; the next read or scrub round tries
			// again. Every poll that meets it tries: warned once a minute.
			now := time.Now().UnixNano()
			if last := e.repairWarnedAt.Load(); now-last >= int64(repairWarnEvery) && e.repairWarnedAt.CompareAndSwap(last, now) {
				p.log.Warn("corrupt batch not repaired yet: no peer gave its copy", "dir", e.dir, "file", ce.File,
					"position", ce.Position, "err", err)
			}
		}
	}
	if sh.inline {
		run() // a simulator's shard: its fetches answer at once
		return
	}
	go run()
}

// repairWarnEvery bounds the warnings of a partition whose damaged batch
// no peer could give yet.
const repairWarnEvery = time.Minute

// repairFromPeers fetches the damaged batch from each peer in turn until
// one copy repairs it. refused: the damaged place could not be matched
// (no batch boundary there, or a peer's copy does not fit it), which only
// a reopen sets right.
func (p *partitionPlane) repairFromPeers(src recordSource, e *partitionEntry, ce *partitions.CorruptionError) (refused bool, err error) {
	if src == nil {
		return false, errTransferNoPeer
	}
	offset, err := e.log.DamagedBatchOffset(ce.File, ce.Position)
	if errors.Is(err, partitions.ErrSegmentGone) || errors.Is(err, partitions.ErrClosed) {
		return false, err // the damage went with its segment, or the partition is being closed
	}
	if err != nil {
		return true, err
	}
	epoch := e.appliedPurge.Load() // the damaged records' purge epoch
	var errs []error
	for r := uint8(0); r < p.topo.count; r++ {
		if r == p.topo.self {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), transferFetchTimeout)
		// A run of records: damage may reach into the batches after it.
		chunk, err := src.fetchRecords(ctx, r, e.groupID(), epoch, offset, math.MaxUint64, transferChunkBytes)
		cancel()
		if err == nil && chunk.status == fetchUnavailable {
			// The peer's run met damage of its own further on: its copy of
			// this one batch may still be whole.
			ctx, cancel = context.WithTimeout(context.Background(), transferFetchTimeout)
			chunk, err = src.fetchRecords(ctx, r, e.groupID(), epoch, offset, offset+1, 1)
			cancel()
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("replica %d: %w", r, err))
		case chunk.status != fetchOK || len(chunk.records) == 0:
			errs = append(errs, fmt.Errorf("replica %d: fetch status %d, %d bytes", r, chunk.status, len(chunk.records)))
		default:
			if err := e.log.RepairBatch(ce.File, ce.Position, chunk.records); err != nil {
				return true, fmt.Errorf("replica %d's copy: %w", r, err)
			}
			p.log.Info("corrupt batch repaired from a peer", "dir", e.dir, "file", ce.File, "position", ce.Position,
				"offset", offset, "peer", r)
			return false, nil
		}
	}
	if len(errs) == 0 {
		return false, errTransferNoPeer
	}
	return false, errors.Join(errs...)
}
