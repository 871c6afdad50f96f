package node

import (
	"context"
	"encoding/binary"
	"github.com/lodestream/lodestream/consensus"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Destructive operations are ordered inside the partition's own log: purge
// (PurgeTopic / PurgeStream), DeleteSegments and retention never touch a
// partition's files when a metadata event or a local clock says so. The
// partition's primary proposes them into its group and every replica cuts
// at the same point of the log, so all keep identical files:
//
//   - a purge (metadata bumped the partition's purge generation) is the op
//     partitionOpPurge [generation u64][deleted_up_to u64]: applied once
//     per generation, it empties the log and restarts offsets at 0;
//   - a DeleteSegments watermark (metadata, resolved to an offset by the
//     metadata primary) and a retention cut (decided by the primary's
//     clock and sizes) are the op partitionOpCut [before_offset u64]
//     [purge generation u64]: each replica deletes the sealed segments
//     below that offset, when its files are of that purge epoch (a cut
//     decided on the log before a purge that is ordered after it must not
//     cut the purged log; 8-byte bodies of earlier builds carry no
//     generation and always apply).
//
// The partition marker records what the files reflect, so a replayed op
// (after a restart or a transfer) is a no-op. A single node takes the same
// path: its one-replica group commits at once.
const (
	partitionOpPurge = wire.OpPurgeTopic        // ours inside a partition group
	partitionOpCut   = wire.OpTruncatePartition // ours inside a partition group
)

// watermarkWaitMax bounds how long a PurgeTopic, PurgeStream or
// DeleteSegments reply waits for this node's partitions to apply the cut.
const watermarkWaitMax = 5 * time.Second

func encodePurgeOp(generation, deletedUpTo uint64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, generation)
	return binary.LittleEndian.AppendUint64(b, deletedUpTo)
}

func encodeCutOp(before, purgeGeneration uint64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, before), purgeGeneration)
}

// decodeCutOp: the offset to cut below and, when the body carries it, the
// purge epoch the cut was decided in.
func decodeCutOp(b []byte) (before, purgeGeneration uint64, hasGeneration, ok bool) {
	switch len(b) {
	case 8:
		return binary.LittleEndian.Uint64(b), 0, false, true
	case 16:
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), true, true
	}
	return 0, 0, false, false
}

// applyWatermarks (shard goroutine, from reconcile) records what metadata
// wants of the partition and lets the primary propose it.
func (p *partitionPlane) applyWatermarks(e *partitionEntry, part metadata.Partition) {
	if _, ok := e.shard.groups[e]; !ok || e.log == nil {
		return
	}
	e.wantPurge = max(e.wantPurge, part.PurgeGeneration)
	e.wantDeletedUpTo = max(e.wantDeletedUpTo, part.DeletedUpToOffset)
	e.shard.proposeWatermarks(e)
}

// proposeWatermarks (shard goroutine) proposes the purge and the cut
// metadata wants and the files do not reflect yet, once per view, when this
// replica is the group's primary.
func (s *partitionShard) proposeWatermarks(e *partitionEntry) {
	g := e.group
	if !g.IsPrimary() || e.log == nil {
		return
	}
	if e.watermarksView != g.View() {
		e.watermarksView, e.proposedPurge, e.proposedCut = g.View(), 0, 0
		e.watermarksFromOp = g.Op()
	}
	// A purge an earlier view proposed may still be in the journal, not
	// applied yet: proposing it again would put two purge ops of one
	// generation in the log (partition_purge_replay.go counts on one).
	settled := e.appliedOp >= e.watermarksFromOp
	// A proposal refused before it entered the pipeline (its storage
	// fenced, say) is proposed again on a later turn: before, it waited for
	// the next view, and a purge metadata asked for while the primary was
	// fenced was never carried out (whole-node simulator seed 39727).
	if settled && e.wantPurge > e.marker.PurgeGeneration && e.wantPurge > e.proposedPurge {
		gen := e.wantPurge
		e.proposedPurge = gen
		s.admit(&partitionProposal{entry: e, op: partitionOpPurge, body: encodePurgeOp(gen, e.wantDeletedUpTo),
			refused: func() {
				if e.proposedPurge == gen {
					e.proposedPurge = 0
				}
			}})
	}
	if e.wantPurge <= e.marker.PurgeGeneration && e.wantDeletedUpTo > e.marker.DeletedUpTo && e.wantDeletedUpTo > e.proposedCut {
		upTo := e.wantDeletedUpTo
		e.proposedCut = upTo
		s.admit(&partitionProposal{entry: e, op: partitionOpCut, body: encodeCutOp(upTo, e.marker.PurgeGeneration),
			refused: func() {
				if e.proposedCut == upTo {
					e.proposedCut = 0
				}
			}})
	}
}

// applyPurge carries out a committed purge on this replica.
func (s *partitionShard) applyPurge(e *partitionEntry, p *consensus.Prepare) partitionOutcome {
	body := p.Body
	if len(body) != 16 {
		return partitionOutcome{code: wire.ErrInvalidCommand}
	}
	gen, upTo := binary.LittleEndian.Uint64(body), binary.LittleEndian.Uint64(body[8:])
	if s.cfg.broken.backupsSkipPurge && !e.group.IsPrimary() {
		return partitionOutcome{code: wire.OK}
	}
	if gen <= e.marker.PurgeGeneration {
		if e.superblock != nil && p.Header.Op == e.marker.PurgeOp {
			return s.replayedPurge(e, p) // partition_purge_replay.go
		}
		return partitionOutcome{code: wire.OK} // applied before (a replay)
	}
	purgeOp := uint64(0)
	if e.superblock != nil {
		purgeOp = p.Header.Op // the ops below it were erased (partition_purge_replay.go)
	}
	if err := s.purgeFiles(e, gen, purgeOp, upTo); err != nil {
		s.log.Error("purge partition", "dir", e.dir, "generation", gen, "err", err)
		return e.storageFailure(wire.ErrCannotDeletePartitionDirectory, p, err)
	}
	if s.purged != nil {
		s.purged(e, gen, p.Header.Op)
	}
	return partitionOutcome{code: wire.OK}
}

// applyCut carries out a committed DeleteSegments watermark or retention
// cut on this replica.
func (s *partitionShard) applyCut(e *partitionEntry, p *consensus.Prepare) partitionOutcome {
	before, gen, hasGen, ok := decodeCutOp(p.Body)
	if !ok {
		return partitionOutcome{code: wire.ErrInvalidCommand}
	}
	if hasGen && gen != e.marker.PurgeGeneration {
		return partitionOutcome{code: wire.OK} // decided before a purge ordered ahead of it: nothing of that log is left
	}
	if before <= e.marker.DeletedUpTo {
		return partitionOutcome{code: wire.OK}
	}
	res, err := e.log.DeleteSegmentsBefore(before)
	if err != nil {
		s.log.Error("delete segments", "dir", e.dir, "before_offset", before, "err", err)
		return e.storageFailure(wire.ErrCannotDeletePartition, p, err)
	}
	if res.SegmentsDeleted > 0 {
		s.log.Info("deleted segments", "dir", e.dir, "before_offset", before, "segments", res.SegmentsDeleted,
			"messages", res.MessagesDeleted, "bytes", res.BytesDeleted)
	}
	m := e.marker
	m.DeletedUpTo = before
	if err := s.recordMarker(e, m); err != nil {
		return e.storageFailure(wire.ErrCannotDeletePartition, p, err)
	}
	return partitionOutcome{code: wire.OK}
}

// recordMarker makes the marker durable and publishes what was applied.
// A cluster replica that cannot write it stalls the op (the caller's
// storageFailure): a replay after a restart above the checkpoint would
// otherwise carry the purge or cut out again, over what was appended
// since. A single node (no replays) logs it and goes on.
func (s *partitionShard) recordMarker(e *partitionEntry, m partitionMarker) error {
	if err := writeMarker(e.shard.fsys, e.dir, m); err != nil {
		s.log.Error("record partition watermarks", "dir", e.dir, "err", err)
		if e.superblock != nil {
			return err
		}
	}
	e.marker = m
	e.publishWatermarks()
	return nil
}

// publishWatermarks (shard goroutine) publishes the marker for readers on
// other goroutines (awaitWatermarks).
func (e *partitionEntry) publishWatermarks() {
	e.appliedPurge.Store(e.marker.PurgeGeneration)
	e.appliedPurgeOp.Store(e.marker.PurgeOp)
	e.appliedCut.Store(e.marker.DeletedUpTo)
}

// proposeRetention (retention job) asks the partition's primary to cut
// the segments retention would delete; backups leave it to the primary.
func (e *partitionEntry) proposeRetention(nowMicros uint64, t metadata.Topic) {
	if !e.acceptsWrites() || e.log == nil {
		return
	}
	gen := e.appliedPurge.Load() // the epoch the cut is decided in (a purge meanwhile voids it)
	before, ok := e.log.RetentionCut(nowMicros, t.MessageExpiry, t.MaxTopicSize)
	if !ok || before <= e.appliedCut.Load() || e.purgeInFlight.Load() || e.appliedPurge.Load() != gen {
		return
	}
	e.shard.submit(&partitionProposal{entry: e, op: partitionOpCut, body: encodeCutOp(before, gen)})
}

// awaitWatermarks (a connection goroutine, after a committed PurgeTopic,
// PurgeStream or DeleteSegments) waits, bounded, until this node's
// partitions in scope apply what metadata now says, so the client that
// asked sees the result on its next read.
func (n *Node) awaitWatermarks(ctx context.Context, cmd metadata.Command) {
	var topics []metadata.Topic
	switch c := cmd.(type) {
	case metadata.PurgeStream:
		if s, ok := n.state.GetStream(c.Stream); ok {
			topics = s.Topics
		}
	case metadata.PurgeTopic:
		if t, code := n.state.GetTopic(c.Stream, c.Topic); code == metadata.CodeOK {
			topics = []metadata.Topic{t}
		}
	case metadata.TruncatePartition:
		if t, code := n.state.GetTopic(c.Stream, c.Topic); code == metadata.CodeOK {
			topics = []metadata.Topic{t}
		}
	default:
		return
	}
	type want struct {
		e          *partitionEntry
		purge, cut uint64
	}
	var waits []want
	for _, t := range topics {
		for _, part := range t.Partitions {
			if e := n.plane.entry(partitionKey{t.StreamID, t.ID, part.ID}); e != nil && e.log != nil {
				waits = append(waits, want{e, part.PurgeGeneration, part.DeletedUpToOffset})
			}
		}
	}
	deadline := time.NewTimer(watermarkWaitMax)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for _, w := range waits {
		for w.e.appliedPurge.Load() < w.purge || (w.e.appliedPurge.Load() == w.purge && w.e.appliedCut.Load() < w.cut) {
			select {
			case <-ctx.Done():
				return
			case <-deadline.C:
				n.log.Warn("a purge or segment deletion is committed but not yet applied on this node's partitions",
					"dir", w.e.dir, "purge_generation", w.purge, "deleted_up_to", w.cut)
				return
			case <-tick.C:
			}
		}
	}
}
