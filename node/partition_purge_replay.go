package node

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/wire"
)

// Ops a purge erased, applied again (whole-node simulator, once purges
// were simulated). A cluster replica applies the ops above its checkpoint
// again after a restart, and a transfer may install a checkpoint older
// than what its files reflect. When a purge was carried out after that
// checkpoint, the files hold the purge's epoch (offsets from 0 again): the
// ops before the purge op must not touch them (a reservation's skip, a
// cut, a send compared with what is stored at its offset in another
// epoch), yet they must answer as their first apply did, because the
// retry table is rebuilt from those answers on every replica alike.
//
// So the partition marker records the op that carried out its purge
// generation (PurgeOp), and below it apply follows the first apply's
// decisions on a shadow of the state (where the log ended, the offset
// reservation) without touching the files; the purge op itself, applied
// again, restarts that shadow at the epoch's start (offset 0) and clears
// the consumer offsets the checkpoint brought back. Every replica
// carries out a purge at the same op, so all agree; PurgeOp is a cluster
// replica's only (a single node's group starts at op 0 on every boot).
//
// A purge op is synced before its PrepareOk (barrierNeeded), so a rack
// election within the group's budget never drops one a replica carried
// out; and a replica checkpoints as soon as it carried one out
// (purgedSinceCheckpoint), so the snapshot it serves to a transfer
// describes the purged log.

// erasedByPurge: op comes before the purge this cluster replica's files
// already reflect.
func (e *partitionEntry) erasedByPurge(op uint64) bool {
	return e.superblock != nil && op < e.marker.PurgeOp
}

// purgedSinceCheckpoint: this cluster replica carried out a purge its
// last checkpoint does not reflect, and applied everything committed (a
// checkpoint is taken at commit_min, with where the applied ops end).
func (e *partitionEntry) purgedSinceCheckpoint() bool {
	return e.superblock != nil && e.marker.PurgeOp > e.checkpointOp && e.appliedOp == e.group.CommitMin()
}

// applyErased answers an op a later purge erased (erasedByPurge) as its
// first apply did, and keeps the shadow of where the log ended and what
// was reserved; the files stay as they are.
func (s *partitionShard) applyErased(e *partitionEntry, p *consensus.Prepare) partitionOutcome {
	switch wire.Operation(p.Header.Operation) {
	case partitionOpReserve:
		skipTo, upTo, ok := decodeReserveOp(p.Body)
		if !ok {
			return partitionOutcome{code: wire.ErrInvalidCommand}
		}
		e.appliedNext = max(e.appliedNext, skipTo)
		e.reserveView = p.Header.View + 1
		e.marker.OffsetsReserved = upTo // in memory: the file holds the purge epoch's
	case partitionOpPurge:
		if len(p.Body) != 16 {
			return partitionOutcome{code: wire.ErrInvalidCommand}
		}
		if binary.LittleEndian.Uint64(p.Body) > e.erasedPurgeGeneration {
			e.erasedPurgeGeneration = binary.LittleEndian.Uint64(p.Body)
			e.appliedNext, e.marker.OffsetsReserved = 0, 0
		}
	case partitionOpCut, wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset:
		// What they changed the purge cleared.
	default:
		return partitionOutcome{code: wire.ErrInvalidCommand}
	}
	return partitionOutcome{code: wire.OK}
}

// appendErased decides a send a later purge erased as appendCommitted
// decided it, on the shadow state.
func (s *partitionShard) appendErased(e *partitionEntry, h wire.BatchHeader) partitionOutcome {
	if h.BaseOffset != e.appliedNext || h.PartitionID != uint64(e.key.partition) || s.beyondReservation(e, h) {
		return partitionOutcome{code: wire.ErrTransientNotAccepted}
	}
	e.appliedNext += uint64(h.MessageCount)
	return partitionOutcome{code: wire.OK, baseOffset: h.BaseOffset}
}

// replayedPurge applies again the purge the files reflect (its op is the
// marker's PurgeOp): the shadow restarts at the epoch's start, and the
// consumer offsets, which the checkpoint brought back, are cleared unless
// they already reflect later ops.
func (s *partitionShard) replayedPurge(e *partitionEntry, p *consensus.Prepare) partitionOutcome {
	e.appliedNext, e.marker.OffsetsReserved = 0, 0
	if p.Header.Op <= e.offsetsAppliedOp {
		return partitionOutcome{code: wire.OK}
	}
	if err := installConsumerOffsets(e.log, nil); err != nil {
		s.log.Error("purge applied again: clear the consumer offsets", "dir", e.dir, "err", err)
		return e.storageFailure(wire.ErrCannotDeletePartitionDirectory, p, err)
	}
	return partitionOutcome{code: wire.OK}
}

// adoptPurge (a transfer starting) purges this replica first when the
// snapshot reflects a purge its files do not: the records to fetch are of
// that purge's epoch, its offsets from 0 again.
func (s *partitionShard) adoptPurge(e *partitionEntry, op uint64, cp partitionCheckpoint) error {
	if e.superblock == nil || !cp.hasPurge || cp.purge.generation <= e.marker.PurgeGeneration {
		return nil
	}
	return s.purgeTo(e, cp.purge.generation, cp.purge.op, fmt.Sprintf("the snapshot at op %d reflects it", op))
}

// purgeTo empties this replica's log and consumer offsets as the purge
// of generation carried out at op did on its peers, and records it: the
// files are of that purge's epoch from here on.
func (s *partitionShard) purgeTo(e *partitionEntry, generation, op uint64, why string) error {
	if err := s.purgeFiles(e, generation, op, 0); err != nil {
		return fmt.Errorf("purge as the peers did: %w", err)
	}
	// The consumer offsets are the purge op's (none): a snapshot of an
	// earlier epoch does not bring its own back.
	e.offsetsAppliedOp = max(e.offsetsAppliedOp, op)
	s.log.Info("partition purged as its peers did", "dir", e.dir, "generation", generation, "purge_op", op, "why", why)
	return nil
}

// purgeFiles empties the log and its consumer offsets and records the
// purge of generation (carried out at op; 0: a single node's) with the
// DeleteSegments watermark deletedUpTo; the offset space restarts, and so
// does the reservation (partition_reserve.go). Reads and fetches are
// refused until both are done: a purge that failed half way (retried
// under the fence) left a log neither epoch describes.
func (s *partitionShard) purgeFiles(e *partitionEntry, generation, op, deletedUpTo uint64) error {
	if err := e.inlineAllRefs(); err != nil { // the purge removes every segment (partition_stage.go)
		return fmt.Errorf("purge generation %d: %w", generation, err)
	}
	e.purgeInFlight.Store(true)
	if _, err := e.log.Purge(); err != nil {
		return fmt.Errorf("purge generation %d: %w", generation, err)
	}
	e.appliedNext, e.lastTimestamp = 0, 0
	m := e.marker
	m.PurgeGeneration, m.PurgeOp, m.DeletedUpTo, m.OffsetsReserved = generation, op, deletedUpTo, 0
	if err := s.recordMarker(e, m); err != nil {
		return fmt.Errorf("record the purge of generation %d: %w", generation, err)
	}
	e.purgeInFlight.Store(false)
	return nil
}
