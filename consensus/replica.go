package consensus

import (
	"fmt"
	"math/bits"
)

// Replica is one replica of one consensus group: a deterministic state
// machine driven by Tick, Step and Propose, emitting work through Ready.
type Replica struct {
	cfg Config
	id  uint8
	n   uint8

	quorumReplication int
	quorumViewChange  int

	view    uint32
	logView uint32
	status  Status

	op           uint64 // head of this replica's log (the primary pre-advances it)
	headChecksum uint64 // checksum of op `op`: parent of the next prepare
	commitMin    uint64 // highest op handed out for apply
	commitMax    uint64 // highest op known committed
	checkpointOp uint64
	snapshot     *Snapshot
	journal      journal
	// unprovable marks ops whose entry was dropped without proof it was never
	// acknowledged (restart gaps, unverifiable stale entries): never nacked.
	unprovable map[uint64]struct{}
	// unverified: durable entries dropped from the journal as unverifiable,
	// served unvouched and re-admitted once verified (unverified.go).
	unverified map[uint64]Prepare
	// viewHeaders: log_view's log suffix as adopted (see viewheaders.go),
	// durable together with log_view.
	viewHeaders []PrepareHeader

	lastTimestamp uint64 // µs; prepares are stamped strictly above it
	nowMicros     uint64 // driver-supplied wall clock (SetNow), else ticks x 10 ms
	ticks         uint64

	durable VsrState // superblock contents the driver has acknowledged

	// Primary.
	pipeline        []pipelineEntry
	requestQueue    []Request
	prepareTimer    timer
	prepareAttempts uint32
	commitTimer     timer
	heartbeatsSent  uint64

	// Backup.
	heartbeatTimer    timer
	heartbeatView     uint32 // (view, counter) of the last accepted heartbeat
	heartbeatCounter  uint64
	observedNewerView uint32
	seenOp            uint64 // highest op seen in a live prepare (gap detection)

	vc       viewChangeState
	recovery recoveryState
	amnesia  amnesiaState
	repair   repairState
	reorder  reorderBuffer
	draining bool // drainReordered is running
	transfer transferState
	clients  *clientTable

	rng      prng
	pending  Ready
	inflight *Ready
	// appliedOp is the last op of Committed the driver acknowledged.
	appliedOp uint64
	// tableOp is the op the client table reflects: ops fold in at Advance,
	// when the driver has applied them, so the table always matches the
	// application state the driver would snapshot.
	tableOp uint64
	// recordedReplies holds RecordReply bodies until Advance folds their ops.
	recordedReplies []recordedReply
	// snapshotTimestamp and anchorChecksum describe the prepare at the
	// checkpoint op: the timestamp floor and hash-chain anchor once the
	// journal no longer holds it (persisted in the superblock).
	snapshotTimestamp uint64
	anchorChecksum    uint64
	// droppedMessages counts sends lost to the per-Ready outbox cap.
	droppedMessages uint64
	checkpointErr   error
}

type pipelineEntry struct {
	header PrepareHeader
	acks   uint32 // bit per replica
	tag    uint64
	hasTag bool
}

var _ Group = (*Replica)(nil)

// New creates a replica on empty storage: Normal in cfg.InitialView.
func New(cfg Config) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := newReplica(cfg)
	r.view = cfg.InitialView
	r.enterInitialNormal()
	return r, nil
}

func newReplica(cfg Config) *Replica {
	n := int(cfg.ReplicaCount)
	r := &Replica{
		cfg:               cfg,
		id:                cfg.ReplicaID,
		n:                 cfg.ReplicaCount,
		quorumReplication: ReplicationQuorum(n),
		quorumViewChange:  ViewChangeQuorum(n),
		journal:           newJournal(cfg.JournalSlots),
		unprovable:        make(map[uint64]struct{}),
		rng:               newPRNG(cfg.Seed ^ uint64(cfg.ReplicaID)<<56 ^ cfg.GroupID*0x9e3779b97f4a7c15),
	}
	if cfg.TestingReplicationQuorum != 0 {
		r.quorumReplication = int(cfg.TestingReplicationQuorum)
	}
	if cfg.ClientTableMax > 0 {
		r.clients = newClientTable(int(cfg.ClientTableMax))
	}
	return r
}

func (r *Replica) enterInitialNormal() {
	r.status = StatusNormal
	r.logView = r.view
	if r.isPrimaryIndex() {
		r.commitTimer.start(r.ticks, uint64(r.cfg.CommitBroadcastTicks))
	} else {
		r.heartbeatTimer.start(r.ticks, uint64(r.cfg.HeartbeatTimeoutTicks))
	}
}

// --- Accessors (Group) ---

func (r *Replica) ReplicaID() uint8  { return r.id }
func (r *Replica) View() uint32      { return r.view }
func (r *Replica) LogView() uint32   { return r.logView }
func (r *Replica) Status() Status    { return r.status }
func (r *Replica) Op() uint64        { return r.op }
func (r *Replica) CommitMin() uint64 { return r.commitMin }
func (r *Replica) CommitMax() uint64 { return r.commitMax }

// IsPrimary reports whether this replica leads its view and accepts writes.
func (r *Replica) IsPrimary() bool {
	return r.status == StatusNormal && r.isPrimaryIndex() && r.logView == r.view
}

// Transferring reports whether a state transfer is in progress.
func (r *Replica) Transferring() bool { return r.transfer.stage != transferIdle }

// DroppedMessages counts messages lost to the per-Ready outbox cap.
func (r *Replica) DroppedMessages() uint64 { return r.droppedMessages }

// SetNow gives the primary a wall clock (µs) for prepare timestamps; without
// it timestamps advance 10 ms per tick. Timestamps stay strictly increasing.
func (r *Replica) SetNow(micros uint64) { r.nowMicros = micros }

func (r *Replica) isPrimaryIndex() bool        { return primaryIndex(r.view, r.n) == r.id }
func (r *Replica) primaryOf(view uint32) uint8 { return primaryIndex(view, r.n) }
func (r *Replica) vsrState() VsrState {
	return VsrState{View: r.view, LogView: r.logView, CommitMax: r.commitMax, CheckpointOp: r.checkpointOp,
		AnchorTimestamp: r.snapshotTimestamp, AnchorChecksum: r.anchorChecksum, ViewHeaders: r.viewHeaders,
		Amnesiac: r.amnesia.on}
}

// --- Ready / Advance ---

// HasReady reports whether Ready would return work.
func (r *Replica) HasReady() bool {
	return r.inflight != nil || !r.pending.IsEmpty() || r.superblockDirty()
}

// superblockDirty: view, log_view, checkpoint_op or the view headers moved
// past what is durable. commit_max alone does not force a write (it is
// recoverable from the journal's commit stamps) but rides along with any
// write. View headers are compared by identity: setViewHeaders always
// allocates a new slice.
func (r *Replica) superblockDirty() bool {
	return r.view != r.durable.View || r.logView != r.durable.LogView || r.checkpointOp != r.durable.CheckpointOp ||
		!sameSlice(r.viewHeaders, r.durable.ViewHeaders) || r.amnesia.on != r.durable.Amnesiac
}

func sameSlice(a, b []PrepareHeader) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Ready returns the next batch; the same batch until Advance.
func (r *Replica) Ready() Ready {
	if r.inflight != nil {
		return *r.inflight
	}
	rd := r.pending
	r.pending = Ready{}
	if r.superblockDirty() {
		sb := r.vsrState()
		rd.Superblock = &sb
	}
	r.inflight = &rd
	return rd
}

// Advance acknowledges that the last Ready was carried out: its entries and
// superblock are durable, its messages sent, its commits applied.
func (r *Replica) Advance(Ready) {
	rd := r.inflight
	if rd == nil {
		return
	}
	r.inflight = nil
	if rd.Superblock != nil {
		r.durable = *rd.Superblock
	}
	for i := range rd.Entries {
		h := &rd.Entries[i].Header
		if s := r.journal.get(h.Op); s != nil && s.prepare.Header.Checksum == h.Checksum {
			s.durable = true
		}
	}
	if rd.Snapshot != nil {
		r.appliedOp = max(r.appliedOp, rd.Snapshot.Op)
		r.tableOp = max(r.tableOp, rd.Snapshot.Op) // the driver restored the table with the snapshot
	}
	if n := len(rd.Committed); n > 0 {
		r.appliedOp = rd.Committed[n-1].Header.Op
	}
	r.foldClientTable(rd.Committed)
	if r.IsPrimary() && len(rd.Entries) > 0 {
		r.selfAckDurable()
	}
}

// selfAckDurable counts the primary's own vote for its persisted prepares.
func (r *Replica) selfAckDurable() {
	for i := range r.pipeline {
		e := &r.pipeline[i]
		if s := r.journal.get(e.header.Op); s != nil && s.durable && s.prepare.Header.Checksum == e.header.Checksum {
			e.acks |= 1 << r.id
		}
	}
	r.commitPipeline()
}

// --- Output helpers ---

func (r *Replica) send(m Message) {
	if len(r.pending.Messages) >= messagesPerReadyMax {
		r.droppedMessages++
		return
	}
	m.Group = r.cfg.GroupID
	m.From = r.id
	r.pending.Messages = append(r.pending.Messages, m)
}

func (r *Replica) broadcast(m Message) {
	for i := uint8(0); i < r.n; i++ {
		if i != r.id {
			m.To = i
			r.send(m)
		}
	}
}

func (r *Replica) reply(rep Reply) { r.pending.Replies = append(r.pending.Replies, rep) }

// appendEntry stores p in the journal and queues it for persistence.
func (r *Replica) appendEntry(p Prepare) {
	r.journal.put(p, r.checkpointOp)
	delete(r.unprovable, p.Header.Op)
	delete(r.unverified, p.Header.Op) // its durable copy is overwritten
	r.pending.Entries = append(r.pending.Entries, p)
}

// truncateFrom removes ops >= from from the journal, durably.
func (r *Replica) truncateFrom(from uint64) {
	if from <= r.commitMin {
		panic(fmt.Sprintf("consensus: replica %d truncating committed op %d (commit_min %d)", r.id, from, r.commitMin))
	}
	r.journal.truncateFrom(from)
	r.forgetUnverifiedFrom(from)
	if r.pending.Truncate == 0 || from < r.pending.Truncate {
		r.pending.Truncate = from
	}
	kept := r.pending.Entries[:0]
	for _, e := range r.pending.Entries {
		if e.Header.Op < from {
			kept = append(kept, e)
		}
	}
	r.pending.Entries = kept
	// Messages queued before the truncation may reveal the removed ops
	// (a retransmitted Prepare, a PrepareOk, a repair answer): once this
	// Ready persists the truncation they would claim ops the replica no
	// longer holds. Messages are best effort; drop them. (A driver that
	// carries Readys out while the replica keeps being stepped, an
	// asynchronous persistence worker, queues such messages before a
	// later StartView truncates.)
	msgs := r.pending.Messages[:0]
	for _, m := range r.pending.Messages {
		if m.Prepare != nil && m.Prepare.Header.Op >= from &&
			(m.Kind == MsgPrepare || m.Kind == MsgPrepareOk || m.Kind == MsgRepairPrepare) {
			r.droppedMessages++
			continue
		}
		msgs = append(msgs, m)
	}
	clear(r.pending.Messages[len(msgs):])
	r.pending.Messages = msgs
}

// --- Tick ---

// Tick advances logical time by one 10 ms tick and fires due timers.
func (r *Replica) Tick() {
	r.ticks++
	switch r.status {
	case StatusNormal:
		if r.isPrimaryIndex() {
			r.tickPrimary()
		} else {
			r.tickBackup()
		}
	case StatusViewChange:
		r.tickViewChange()
	case StatusRecovering:
		r.tickRecovering()
	}
	r.tickRepair()
	r.tickTransfer()
	r.maybeClearAmnesia()
	r.maybeClearStorageLost()
	r.assertInvariants()
}

// Step handles one message from another replica. Messages for another
// group, from an unknown replica or from itself are ignored. A prepare's
// body is journaled as it is, not copied (Group.Step: the caller hands it
// over): a backup's 1 MB batch was copied once more here after the bus
// had read it into a fresh frame.
func (r *Replica) Step(m Message) {
	if m.Group != r.cfg.GroupID || m.From >= r.n || m.From == r.id {
		return
	}
	r.noteViewEvidence(m)
	switch m.Kind {
	case MsgPrepare:
		r.onPrepare(m)
	case MsgPrepareOk:
		r.onPrepareOk(m)
	case MsgCommit:
		r.onCommit(m)
	case MsgStartViewChange:
		r.onStartViewChange(m)
	case MsgDoViewChange:
		r.onDoViewChange(m)
	case MsgStartView:
		r.onStartView(m)
	case MsgRequestStartView:
		r.onRequestStartView(m)
	case MsgRequestPrepares:
		r.onRequestPrepares(m)
	case MsgRepairPrepare:
		r.onRepairPrepare(m)
	case MsgRepairDone, MsgRangeEvicted:
		r.onRepairReply(m)
	case MsgRequestStateTransfer:
		r.onRequestStateTransfer(m)
	case MsgStateTransferTarget:
		r.onStateTransferTarget(m)
	case MsgRequestStateChunk:
		r.onRequestStateChunk(m)
	case MsgStateChunk:
		r.onStateChunk(m)
	}
	r.maybeClearAmnesia()
	r.maybeClearStorageLost()
	r.assertInvariants()
}

// assertInvariants panics on an impossible internal state: the simulator
// is meant to find these.
func (r *Replica) assertInvariants() {
	if r.commitMin > r.commitMax {
		panic(fmt.Sprintf("consensus: replica %d commit_min %d > commit_max %d", r.id, r.commitMin, r.commitMax))
	}
	if r.logView > r.view {
		panic(fmt.Sprintf("consensus: replica %d log_view %d > view %d", r.id, r.logView, r.view))
	}
	if len(r.pipeline) > dvcSuffixHeadersMax {
		panic(fmt.Sprintf("consensus: replica %d pipeline length %d over bound", r.id, len(r.pipeline)))
	}
	if r.status == StatusNormal && r.commitMin > r.op && r.transfer.stage == transferIdle {
		panic(fmt.Sprintf("consensus: replica %d commit_min %d above head op %d", r.id, r.commitMin, r.op))
	}
}

func popcount(x uint32) int { return bits.OnesCount32(x) }
