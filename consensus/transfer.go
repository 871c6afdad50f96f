package consensus

// State transfer (spec §3.10, simplified): pull, lockstep, one chunk in
// flight. A replica whose needed history is below the primary's retained
// floor asks the primary for its latest checkpoint, fetches it in chunks,
// verifies the assembled checksum, hands it out in Ready.Snapshot, then
// repairs the journal tail above it.

type transferStage uint8

const (
	transferIdle transferStage = iota
	transferAwaitingTarget
	transferFetching
)

// stateTransferBytesMax bounds a snapshot this replica will assemble.
const stateTransferBytesMax = 1 << 30

type transferState struct {
	stage    transferStage
	nonce    Uint128
	peer     uint8
	op       uint64
	size     uint64
	checksum uint64
	buf      []byte
	// anchor of the offered snapshot: its op's prepare checksum and timestamp
	anchorChecksum  uint64
	anchorTimestamp uint64
	timer           timer
	stalls          uint32
}

// startTransfer pulls a checkpoint from peer: the primary for a Normal
// backup, a canonical sender for a primary-elect missing released history.
func (r *Replica) startTransfer(peer uint8) {
	if r.transfer.stage != transferIdle || peer == r.id {
		return
	}
	r.transfer = transferState{stage: transferAwaitingTarget, nonce: r.rng.nonce(), peer: peer}
	r.sendTransferRequest()
}

func (r *Replica) sendTransferRequest() {
	t := &r.transfer
	t.timer.start(r.ticks, uint64(r.cfg.RepairRetryTicks))
	switch t.stage {
	case transferAwaitingTarget:
		r.send(Message{Kind: MsgRequestStateTransfer, To: t.peer, View: r.view, Nonce: t.nonce})
	case transferFetching:
		length := min(uint64(stateChunkBytesMax), t.size-uint64(len(t.buf)))
		r.send(Message{Kind: MsgRequestStateChunk, To: t.peer, View: r.view, Nonce: t.nonce, SnapshotOp: t.op,
			ChunkOffset: uint64(len(t.buf)), ChunkLengthBytes: uint32(length)})
	}
}

func (r *Replica) abortTransfer() {
	if r.transfer.stage == transferIdle {
		return
	}
	r.transfer = transferState{}
}

func (r *Replica) tickTransfer() {
	t := &r.transfer
	if t.stage == transferIdle || !t.timer.fired(r.ticks) {
		return
	}
	t.stalls++
	if t.stalls >= transferStallRetries {
		r.abortTransfer() // journal repair re-picks and may come back here
		r.noteGap()
		return
	}
	r.sendTransferRequest()
}

// onRequestStateTransfer: a caught-up primary with a checkpoint offers it;
// so does a replica in a view change (to a primary-elect missing history).
// A checkpoint only ever holds committed ops, so either is safe to serve.
func (r *Replica) onRequestStateTransfer(m Message) {
	available := r.snapshot != nil && !r.Transferring() &&
		((r.IsPrimary() && r.commitMin == r.commitMax) || r.status == StatusViewChange)
	reply := Message{Kind: MsgStateTransferTarget, To: m.From, View: r.view, Nonce: m.Nonce, Available: available}
	if available {
		reply.SnapshotOp = r.snapshot.Op
		reply.SnapshotSizeBytes = uint64(len(r.snapshot.Data))
		reply.SnapshotChecksum = r.snapshot.Checksum
		reply.AnchorTimestamp = r.snapshotTimestamp // floor for the receiver's prepare timestamps
		reply.Prepare = &Prepare{Header: PrepareHeader{Op: r.snapshot.Op, Checksum: r.anchorChecksum,
			Timestamp: r.snapshotTimestamp}} // the chain anchor (header only)
	}
	r.send(reply)
}

func (r *Replica) onStateTransferTarget(m Message) {
	t := &r.transfer
	if t.stage != transferAwaitingTarget || m.Nonce != t.nonce || m.From != t.peer {
		return
	}
	if !m.Available || m.SnapshotOp <= r.commitMin || m.SnapshotSizeBytes > stateTransferBytesMax {
		r.abortTransfer() // nothing useful offered: journal repair carries on
		r.noteGap()
		return
	}
	t.stage = transferFetching
	t.op, t.size, t.checksum = m.SnapshotOp, m.SnapshotSizeBytes, m.SnapshotChecksum
	t.anchorTimestamp = m.AnchorTimestamp
	if m.Prepare != nil && m.Prepare.Header.Op == m.SnapshotOp {
		t.anchorChecksum = m.Prepare.Header.Checksum
	}
	t.buf = make([]byte, 0, t.size)
	t.stalls = 0
	if t.size == 0 {
		r.installTransferred()
		return
	}
	r.sendTransferRequest()
}

func (r *Replica) onRequestStateChunk(m Message) {
	reply := Message{Kind: MsgStateChunk, To: m.From, View: r.view, Nonce: m.Nonce, SnapshotOp: m.SnapshotOp, ChunkOffset: m.ChunkOffset}
	s := r.snapshot
	if s == nil || s.Op != m.SnapshotOp || m.ChunkOffset > uint64(len(s.Data)) {
		r.send(reply) // Available=false: the offer is gone
		return
	}
	end := min(uint64(len(s.Data)), m.ChunkOffset+uint64(min(m.ChunkLengthBytes, stateChunkBytesMax)))
	reply.Available = true
	reply.ChunkData = s.Data[m.ChunkOffset:end]
	r.send(reply)
}

func (r *Replica) onStateChunk(m Message) {
	t := &r.transfer
	if t.stage != transferFetching || m.Nonce != t.nonce || m.From != t.peer || m.SnapshotOp != t.op {
		return
	}
	if !m.Available {
		t.stage = transferAwaitingTarget // the peer moved to a newer checkpoint
		t.buf = nil
		r.sendTransferRequest()
		return
	}
	if m.ChunkOffset != uint64(len(t.buf)) || uint64(len(t.buf)+len(m.ChunkData)) > t.size || len(m.ChunkData) == 0 {
		return // duplicate or out of order: the retry timer re-asks
	}
	t.buf = append(t.buf, m.ChunkData...)
	t.stalls = 0
	if uint64(len(t.buf)) < t.size {
		r.sendTransferRequest()
		return
	}
	if SnapshotChecksum(t.buf) != t.checksum {
		t.stage = transferAwaitingTarget // corrupt assembly: start over
		t.buf = nil
		r.sendTransferRequest()
		return
	}
	r.installTransferred()
}

// installTransferred adopts the assembled snapshot: commit_min jumps to its
// op, history at or below it is released, and the tail is repaired.
func (r *Replica) installTransferred() {
	t := &r.transfer
	snap := Snapshot{Op: t.op, Checksum: t.checksum, Data: t.buf}
	r.lastTimestamp = max(r.lastTimestamp, t.anchorTimestamp)
	r.snapshotTimestamp = t.anchorTimestamp
	r.anchorChecksum = t.anchorChecksum
	r.transfer = transferState{}
	r.snapshot = &snap
	r.pending.Snapshot = &snap
	kept := r.pending.Committed[:0]
	for _, c := range r.pending.Committed {
		if c.Header.Op > snap.Op {
			kept = append(kept, c)
		}
	}
	r.pending.Committed = kept
	r.checkpointOp = max(r.checkpointOp, snap.Op)
	r.journal.releaseBelow(snap.Op)
	r.dropUnchainedAbove(snap.Op)

	r.commitMin = max(r.commitMin, snap.Op)
	r.commitMax = max(r.commitMax, snap.Op)
	r.op = max(r.op, snap.Op)
	r.seenOp = max(r.seenOp, snap.Op)
	if r.op == snap.Op && !r.journal.has(snap.Op) {
		r.headChecksum = r.anchorChecksum
	}
	r.commitJournal()
	r.requestRepairNow()
	if r.status == StatusViewChange {
		r.maybeStartView()
	}
}

// dropUnchainedAbove: after a snapshot install the entries this replica
// kept above it must continue the snapshot's chain. The anchor is
// committed, so an entry at op+1 whose parent is not the anchor (or an
// entry at op that is not the anchor itself) is a stale relic and must
// never be committed on top of it (finding 9: check every path that puts a
// prepare below the commit point). It leaves the in-memory journal,
// unprovable, and repair fetches the canonical entry.
func (r *Replica) dropUnchainedAbove(op uint64) {
	if r.anchorChecksum == 0 {
		return
	}
	if h, ok := r.journal.header(op); ok && h.Checksum != r.anchorChecksum {
		r.dropUnverified(op)
	}
	if h, ok := r.journal.header(op + 1); ok && h.Parent != r.anchorChecksum {
		r.dropUnverified(op + 1)
	}
}
