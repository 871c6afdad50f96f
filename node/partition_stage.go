package node

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// Segment references on a cluster replica (issue 9 point 2). The durable
// write of a Ready (off the loop, partition_writer.go) stages each message
// prepare that continues the partition log into the active segment, past
// its applied end (partitions.Log.Stage), and the prepare WAL records the
// place instead of the body (journal.PrepareLog.WriteRefs): a body is
// written once per replica, and its segment write leaves the loop. When
// the op commits, apply adopts the staged batch in place (partitions.Log
// Append: accounting and index only).
//
// Staged bytes must outlive every reference to them, so whatever removes
// them first writes the naming prepares inline (unstage, inlineAllRefs):
//   - an op passed without adopting its staged batch (apply refused it: a
//     retry's replay, a stamp for another place, beyond the reservation,
//     erased by a purge; every later staged batch then follows it);
//   - an append over a later op's staged batch (that op is refused: its
//     stamp follows another);
//   - a purge, a cut, a reservation's skip, a state transfer: everything
//     is written inline and the staged bytes cut;
//   - a view change's truncation writes its Ready inline, and the staged
//     batches of the ops it removes are cut after the WAL write is down;
//   - a restart resolves the references from the segments, writes the WAL
//     again inline, and takes back everything past the checkpoint
//     (partition_vsr.go): staged bytes of ops a view change may drop are
//     never taken for applied data.
// A persisted topic's staged bytes are synced before the WAL records that
// name them, so a durable reference always has a durable body.

// stagesSends: the group's durable writes stage its sends: a cluster
// replica's (it has a prepare WAL) and a single node's (no superblock, no
// WAL: singleNodeWrite).
func (e *partitionEntry) stagesSends() bool {
	return e.log != nil && (e.wal != nil || e.superblock == nil)
}

// singleNodeWrite (loop) is a single node's durable write of a Ready
// (issue 9 point 3): it stages the Ready's sends, and those left inline
// before, in the active segment off the loop, unsealed
// (partitions.Options.StageUnsealed: a batch apply then refuses is cut
// at the next open if the process stops first); apply adopts and seals
// them (partitions.Log.Append), and a persisted topic's barrier syncs them
// before the answers (partition_barrier.go). The offset reservation moves
// ahead in the stage too. nil when the Ready has no send to stage.
func (e *partitionEntry) singleNodeWrite(rd *consensus.Ready) *durableWrite {
	candidates := e.stageCandidates(rd.Truncate, rd.Entries)
	pending := e.pendingInlineSends(rd.Truncate, candidates != nil || e.commitsInlineSend(rd.Truncate, rd.Committed))
	if candidates == nil && pending == nil {
		return nil
	}
	log, entries := e.log, rd.Entries
	var refs []journal.BodyRef
	var pendingStaged []bool
	return &durableWrite{
		run: func() error {
			pendingStaged = stagePending(log, pending)
			refs = stageEntries(log, entries, candidates)
			return nil // a batch not staged is appended at apply
		},
		done: func() { e.noteInlineSends(0, pending, pendingStaged, entries, refs) },
	}
}

// stageCandidates (loop) are the entries of a Ready its write may stage:
// message sends, unless the Ready truncates (the prepares a truncation
// keeps are written inline: their old references stay readable until the
// new records are down).
func (e *partitionEntry) stageCandidates(from uint64, entries []consensus.Prepare) []int {
	if !e.stagesSends() || from != 0 {
		return nil
	}
	var out []int
	for i := range entries {
		// An op applied already (written again by a view change's log) is
		// never adopted: its staged bytes would only linger.
		if wire.Operation(entries[i].Header.Operation) == wire.OpSendMessages && len(entries[i].Body) > 0 &&
			entries[i].Header.Op > e.appliedOp {
			out = append(out, i)
		}
	}
	return out
}

// stageEntries (the write) stages the candidates in op order and returns
// the references to record (nil when none was staged). Each is checked on
// its own (partitions.Log.Stage): after one that does not continue the
// log, a later one may (stamped again after a refusal).
func stageEntries(log partitionStore, entries []consensus.Prepare, candidates []int) []journal.BodyRef {
	var refs []journal.BodyRef
	for _, i := range candidates {
		loc, err := log.Stage(entries[i].Body, entries[i].Header.Op)
		if err != nil {
			continue // written inline; a later one may still continue the log
		}
		if refs == nil {
			refs = make([]journal.BodyRef, len(entries))
		}
		refs[i] = journal.BodyRef{Segment: loc.SegmentStartOffset, Position: loc.Position, Length: loc.Length}
	}
	return refs
}

// logResolver reads the body a reference names from the partition log.
func logResolver(log partitionStore) journal.BodyResolver {
	return func(_ uint64, ref journal.BodyRef) ([]byte, error) {
		return log.ReadBatch(partitions.BatchLocation{SegmentStartOffset: ref.Segment, Position: ref.Position, Length: ref.Length})
	}
}

// unstage (loop, no write in flight) writes inline the prepares that name
// staged bytes, then cuts those bytes.
func (e *partitionEntry) unstage() error {
	if e.log == nil {
		return nil
	}
	_, at, ok := e.log.FirstStaged()
	if !ok {
		return nil
	}
	return e.inlineRefsThenCut(func(_ uint64, r journal.BodyRef) bool {
		return r.Segment == at.SegmentStartOffset && r.Position >= at.Position
	})
}

// inlineAllRefs (loop, no write in flight) writes every referenced
// prepare inline and cuts any staged bytes: before an op that moves or
// removes segments.
func (e *partitionEntry) inlineAllRefs() error {
	if e.log == nil {
		return nil
	}
	return e.inlineRefsThenCut(func(uint64, journal.BodyRef) bool { return true })
}

func (e *partitionEntry) inlineRefsThenCut(match func(uint64, journal.BodyRef) bool) error {
	if e.wal != nil && e.wal.HasRefs(match) {
		if _, err := e.wal.InlineRefs(match, logResolver(e.log)); err != nil {
			return fmt.Errorf("write referenced prepares inline: %w", err)
		}
		// A persisted topic's references were synced: so are their copies,
		// before the bytes go. Otherwise the page cache holds both (a lost
		// page cache makes the replica amnesiac, boot_record.go).
		if e.persisted {
			if err := e.wal.Sync(); err != nil {
				return failedSync(e.shard.fsys, e.dir, fmt.Errorf("sync the prepare WAL's inline copies: %w", err))
			}
		}
		e.walBytes = uint64(e.wal.Bytes() + e.wal.RefBytes())
	}
	if _, _, ok := e.log.FirstStaged(); !ok {
		return nil
	}
	if err := e.log.CutStaged(); err != nil {
		return fmt.Errorf("cut the staged batches: %w", err)
	}
	return nil
}

// stagedPassed (loop, before op applies) reports a staged batch of an op
// below it: that op was carried out without adopting it.
func (e *partitionEntry) stagedPassed(op uint64) bool {
	if e.log == nil {
		return false
	}
	tag, _, ok := e.log.FirstStaged()
	return ok && tag < op
}

// stagedAt (loop, after op applied) reports that op's batch still staged:
// apply refused it, or carried it out without its batch (a retry's replay).
func (e *partitionEntry) stagedAt(op uint64) bool {
	if e.log == nil {
		return false
	}
	tag, _, ok := e.log.FirstStaged()
	return ok && tag == op
}

// applyStaged (loop) applies one committed op around the staged batches:
// those it passes or refuses are unstaged; an op that moves or removes
// segments has every reference written inline first.
func (s *partitionShard) applyStaged(e *partitionEntry, p *consensus.Prepare) (partitionOutcome, bool) {
	if e.log == nil {
		return s.apply(e, p)
	}
	s.rollFirst(e, wire.Operation(p.Header.Operation))
	var err error
	switch wire.Operation(p.Header.Operation) {
	case partitionOpPurge, partitionOpCut:
		err = e.inlineAllRefs()
	default:
		// (A reservation's skip and an append over a later op's staged
		// batch unstage where they happen: applyReserve, appendCommitted.)
		if e.stagedPassed(p.Header.Op) {
			err = e.unstage()
		}
	}
	if err != nil {
		s.log.Error("partition staged batches: writing their prepares inline", "dir", e.dir, "op", p.Header.Op, "err", err)
		return e.storageFailure(wire.ErrCannotAppendMessage, p, err), false
	}
	out, wrote := s.apply(e, p)
	if out.stall == nil {
		e.dropApplied(p.Header.Op)
	}
	if out.stall == nil && (e.stagedAt(p.Header.Op) || e.stagedPassed(p.Header.Op)) {
		if err := e.unstage(); err != nil {
			s.log.Error("partition staged batches: writing their prepares inline", "dir", e.dir, "op", p.Header.Op, "err", err)
			// Applied; the staged bytes stay until a later op or a restart.
		}
	}
	return out, wrote
}

// pendingInlineSends (loop) are the inline sends the write may stage
// ahead of its Ready's own: those not applied yet nor truncated by it.
func (e *partitionEntry) pendingInlineSends(from uint64, staging bool) []consensus.Prepare {
	if !staging {
		return nil
	}
	var out []consensus.Prepare
	for i := range e.inlineSends {
		if op := e.inlineSends[i].Header.Op; op > e.appliedOp && (from == 0 || op < from) {
			out = append(out, e.inlineSends[i])
		}
	}
	return out
}

// commitsInlineSend (loop): the Ready (truncating nothing) commits a send
// left inline (e.inlineSends): its write stages the pending inline sends,
// so apply adopts them instead of appending them on the loop (after a
// truncation, a restart, a refused stage).
func (e *partitionEntry) commitsInlineSend(from uint64, committed []consensus.Prepare) bool {
	if from != 0 || len(e.inlineSends) == 0 || len(committed) == 0 {
		return false
	}
	last := committed[len(committed)-1].Header.Op
	for i := range e.inlineSends {
		if op := e.inlineSends[i].Header.Op; op > e.appliedOp && op <= last {
			return true
		}
	}
	return false
}

// stagePendingWrite (loop) is the write of a Ready that needs no storage
// but commits sends left inline: it stages them (nil when there is none).
func (e *partitionEntry) stagePendingWrite(rd *consensus.Ready) *durableWrite {
	if !e.stagesSends() || !e.commitsInlineSend(rd.Truncate, rd.Committed) {
		return nil
	}
	return e.pendingStagingWrite(nil)
}

// pendingStagingWrite (loop) is a write that stages the pending inline
// sends, after first (nil: none) if it says the log may take them.
func (e *partitionEntry) pendingStagingWrite(first func() bool) *durableWrite {
	log, pending := e.log, e.pendingInlineSends(0, e.stagesSends())
	var staged []bool
	return &durableWrite{
		run: func() error {
			if first == nil || first() {
				staged = stagePending(log, pending)
			}
			return nil
		},
		done: func() { e.noteInlineSends(0, pending, staged, nil, nil) },
	}
}

// stagePending (the write) stages the pending inline sends (their WAL
// records stay as they are: the staged batch only saves the append at
// apply). After a prepare written inline, the next one can be staged only
// once its batch is in the log: staging it here heals the chain in one
// write instead of waiting for the pipeline to drain, which under a steady
// stream it never does.
func stagePending(log partitionStore, pending []consensus.Prepare) []bool {
	if len(pending) == 0 {
		return nil
	}
	staged := make([]bool, len(pending))
	for i := range pending {
		_, err := log.Stage(pending[i].Body, pending[i].Header.Op)
		staged[i] = err == nil
	}
	return staged
}

// noteInlineSends (loop, a write's done) records the sends left inline:
// the pending ones not staged, those a truncation kept, and the Ready's
// own written with their bodies.
func (e *partitionEntry) noteInlineSends(from uint64, pending []consensus.Prepare, pendingStaged []bool,
	entries []consensus.Prepare, refs []journal.BodyRef) {
	if !e.stagesSends() {
		return
	}
	var kept []consensus.Prepare
	if pending != nil {
		for i := range pending {
			if i >= len(pendingStaged) || !pendingStaged[i] {
				kept = append(kept, pending[i])
			}
		}
	} else {
		for i := range e.inlineSends {
			if op := e.inlineSends[i].Header.Op; op > e.appliedOp && (from == 0 || op < from) {
				kept = append(kept, e.inlineSends[i])
			}
		}
	}
	for i := range entries {
		if wire.Operation(entries[i].Header.Operation) != wire.OpSendMessages || len(entries[i].Body) == 0 {
			continue
		}
		if i < len(refs) && refs[i].Length > 0 {
			continue
		}
		kept = append(kept, entries[i])
	}
	e.inlineSends = kept
}

// sendsAbove are the message prepares of entries above op.
func sendsAbove(entries []consensus.Prepare, op uint64) []consensus.Prepare {
	var out []consensus.Prepare
	for i := range entries {
		if entries[i].Header.Op > op && wire.Operation(entries[i].Header.Operation) == wire.OpSendMessages && len(entries[i].Body) > 0 {
			out = append(out, entries[i])
		}
	}
	return out
}

// dropApplied (loop) forgets the inline sends up to op, applied now.
func (e *partitionEntry) dropApplied(op uint64) {
	n := 0
	for n < len(e.inlineSends) && e.inlineSends[n].Header.Op <= op {
		n++
	}
	if n > 0 {
		e.inlineSends = append(e.inlineSends[:0:0], e.inlineSends[n:]...)
	}
}
