// Package consensus implements Viewstamped Replication (VSR) for one
// consensus group as a pure, deterministic state machine.
//
// Nothing in this package starts goroutines, reads a clock, touches the
// network or the disk. The driver (the node, or the simulator) feeds it:
//
//	r.Tick()            once per 10 ms tick
//	r.Step(msg)         a message received from another replica
//	r.Propose(req)      a client request admitted on this node
//
// and then drains its output:
//
//	rd := r.Ready()     what to persist, send, apply and answer
//	... persist rd.Truncate / rd.Entries / rd.Superblock, fsync ...
//	... only then send rd.Messages, apply rd.Committed, deliver rd.Replies ...
//	r.Advance(rd)       acknowledge that rd was carried out
//
// Persist-before-send: a Ready's Messages may reveal its Entries and its
// Superblock (a new view, a PrepareOk); the driver must make those durable
// first. Ready() returns the same batch until Advance is called.
//
// This file is the stable contract shared by the state machine, its
// simulator (consensus/sim) and the node. Extend it; do not break it.
package consensus

import "fmt"

// Uint128 is a little-endian 128-bit value (client ids, checksums, nonces).
type Uint128 struct{ Lo, Hi uint64 }

// IsZero reports whether u is zero.
func (u Uint128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

// Status is the replica's VSR status.
type Status uint8

const (
	StatusNormal Status = iota
	StatusViewChange
	StatusRecovering
)

func (s Status) String() string {
	switch s {
	case StatusNormal:
		return "normal"
	case StatusViewChange:
		return "view_change"
	case StatusRecovering:
		return "recovering"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Config configures one replica of one group. Every duration is in ticks
// (one tick = 10 ms); the config package converts milliseconds to ticks.
type Config struct {
	ReplicaID    uint8
	ReplicaCount uint8  // 1..32
	GroupID      uint64 // carried in every message; metadata = 1<<63
	Cluster      Uint128

	PrepareRetransmitTicks    uint32 // default 25
	CommitBroadcastTicks      uint32 // default 50
	HeartbeatTimeoutTicks     uint32 // default 500
	ViewChangeRetransmitTicks uint32 // default 50
	ViewChangeStatusTicks     uint32 // default 500
	RequestStartViewTicks     uint32 // default 100
	ViewProbeAttemptsMax      uint32 // default 5
	RepairRetryTicks          uint32 // default 100
	RepairGapDebounceTicks    uint32 // default 100, floored at 50
	RepairChunkMax            uint32 // default 128

	PrepareQueueDepth uint32 // default 32, 1..127; request queue = 2x
	JournalSlots      uint32 // max retained prepares (in memory); default 1024

	// ClientTableMax > 0 enables the client table (metadata plane):
	// sessions, request dedup, reply ring. 0 = partition plane
	// (at-least-once, no dedup).
	ClientTableMax uint32

	// InitialView is the view a replica on empty storage starts in (Normal,
	// log_view = view). Every replica of the group must be given the same
	// value: it picks the first primary (view mod replica count). The
	// partition plane derives it from committed metadata so a new
	// partition starts led by the node that created it. Default 0.
	InitialView uint32

	// Seed seeds the jitter PRNG (retransmit backoff).
	Seed uint64
	// Incarnation is a random non-zero nonce minted per boot; replies to
	// probes carrying another incarnation are ignored.
	Incarnation Uint128

	// TestingReplicationQuorum, when non-zero, overrides the replication
	// quorum. It exists only so tests can prove the simulator's checkers
	// catch an unsafe variant (e.g. commit on a minority). Never set it in
	// production; config validation has no way to reach it.
	TestingReplicationQuorum uint8
}

// Restored is what a restarting replica read back from its own storage.
// The driver has already verified checksums and cut a torn tail.
type Restored struct {
	Superblock *VsrState // nil: none was ever written
	Snapshot   *Snapshot // latest application checkpoint, nil if none
	Entries    []Prepare // journal after the snapshot, in op order
	// StorageLost: this replica's storage was lost (a wiped or replaced
	// disk) while the group has history elsewhere. It may have
	// acknowledged prepares it no longer holds, so it never votes on its
	// own: it stays Recovering, probing, until a primary's StartView
	// (no election fallback after unanswered probes).
	StorageLost bool
	// Amnesia: this replica may have acknowledged prepares it no longer
	// holds because unsynced writes were lost (a power loss under
	// `durability = replicated`), while what it synced survived (a prefix
	// of its journal and its superblock). It does not vote, and never
	// nacks, until it holds a Normal primary's log again, unless so many
	// replicas are amnesiac that no quorum of intact ones exists (amnesia.go).
	// Superblock.Amnesiac has the same effect; n = 1 ignores both.
	Amnesia bool
	// JournalIntact: the driver promises that, short of Amnesia, the
	// journal holds every entry this replica acknowledged that no durable
	// truncation removed (it writes a truncation and its re-append in one
	// atomic step, and reports lost unsynced writes as Amnesia). Then an
	// op of log_view's log it holds only as a view header, or a gap
	// between restored entries, was never acknowledged and is nacked, as
	// within one incarnation; otherwise both are unprovable after a
	// restart (simulator finding 7). The node must not set it before it
	// reports Amnesia.
	JournalIntact bool
}

// Group is the contract a replica of one consensus group satisfies; the
// node and the simulator drive it through this interface. Constructors:
//
//	New(cfg Config) (*Replica, error)                     // fresh replica, empty storage
//	Restart(cfg Config, st Restored) (*Replica, error)     // after a crash or restart
type Group interface {
	Tick()
	// Step takes m from another replica. The group may keep m's byte
	// slices (a prepare's body) without copying them: the caller hands
	// them over and must neither modify nor reuse them afterwards (a bus
	// decodes each frame into memory of its own).
	Step(m Message)
	// Propose admits a client request. It copies the body unless
	// req.BodyOwned: the caller may then reuse its buffer as soon as
	// Propose returns.
	Propose(req Request)
	// Checkpoint hands consensus an application snapshot taken after
	// applying op s.Op; journal entries at or below it may be released and
	// it is what state transfer serves.
	Checkpoint(s Snapshot)
	Ready() Ready
	Advance(rd Ready)
	// Outdated reports whether a message of a Ready handed out earlier
	// must be dropped instead of sent: the group moved to a newer view,
	// or no longer holds the prepare the message names (outdated.go).
	Outdated(m *Message) bool
	HasReady() bool
	// HandOver makes a Normal primary step down in favour of replica to
	// through an orderly view change; false when it is not the primary.
	HandOver(to uint8) bool
	// SuspectPrimary makes a Normal backup act as on a heartbeat timeout.
	SuspectPrimary() bool
	// ProbePrimary has a Normal backup ask its primary for the view.
	ProbePrimary() bool
	// RestHeartbeat has a Normal primary whose ticks its driver stopped
	// broadcast one commit heartbeat, as its commit timer would.
	RestHeartbeat() bool

	ReplicaID() uint8
	View() uint32
	LogView() uint32
	Status() Status
	IsPrimary() bool // primary of its view, Normal, not ceded
	Op() uint64
	CommitMin() uint64
	CommitMax() uint64
	// StorageLost: restarted with Restored.StorageLost and not yet holding
	// the whole log of a view it joined (it withholds nacks until then).
	StorageLost() bool
}

// Operation numbers mirror the wire protocol's header operation byte.
// 1 Register and 3 Logout drive the client table; 0 is reserved.
type Operation uint8

const (
	OperationReserved Operation = 0
	OperationRegister Operation = 1
	OperationLogout   Operation = 3
)

// Request is a client request admitted on this node for this group.
type Request struct {
	Client    Uint128
	Session   uint64 // 0 for Register
	Request   uint64 // 0 for Register
	Checksum  uint64 // XXH3 of Body or 0 (unchecked), used by dedup
	Operation Operation
	UserID    uint32
	Body      []byte
	// BodyOwned: the caller hands Body over, and consensus keeps it as
	// the prepare's body without copying; the caller must neither modify
	// nor reuse it afterwards. Otherwise Propose copies it.
	BodyOwned bool
	// Tag is opaque to consensus and returned in the matching Reply, so
	// the driver can find the waiting connection.
	Tag uint64
}

// PrepareHeader is the durable identity of one op.
type PrepareHeader struct {
	View      uint32
	Op        uint64
	Commit    uint64 // primary's commit_max when it prepared
	Timestamp uint64 // µs, strictly increasing, stamped by the primary
	Parent    uint64 // Checksum of op-1 (hash chain)
	Checksum  uint64 // identity: XXH3 over the header without View/Checksum, and the body
	Client    Uint128
	Session   uint64
	Request   uint64
	ReqSum    uint64
	Operation Operation
	UserID    uint32
}

// Prepare is one journal entry: a header and its body.
type Prepare struct {
	Header PrepareHeader
	Body   []byte
}

// VsrState is the superblock payload: what must survive a restart.
type VsrState struct {
	View         uint32
	LogView      uint32
	CommitMax    uint64
	CheckpointOp uint64 // op of the latest application checkpoint (snapshot)
	// AnchorTimestamp is the prepare timestamp of op CheckpointOp: after a
	// restart it floors new prepare timestamps even when the journal no
	// longer holds that op (0 = unknown).
	AnchorTimestamp uint64
	// AnchorChecksum is the identity checksum of prepare CheckpointOp (not
	// the snapshot's data checksum): the hash-chain anchor when the journal
	// no longer holds that op.
	AnchorChecksum uint64
	// ViewHeaders are the headers of log_view's log as the replica adopted
	// it (the StartView suffix, from its head op downwards, at most 128;
	// Checksum 0 = blank). They are durable together with LogView, so a
	// replica that restarts before its journal covers the view's head still
	// reports that head and its headers in a DoViewChange (present bit clear
	// where it lacks the body) instead of a shorter log that a merge would
	// take as canonical. Nil in a superblock written before they existed.
	// The slice is never mutated after it is handed out.
	ViewHeaders []PrepareHeader
	// Amnesiac: the replica restarted with Restored.Amnesia and has not yet
	// held a Normal primary's whole log since; durable so an ordinary crash
	// before that does not make it forget (amnesia.go).
	Amnesiac bool
}

// ReplyKind says how a proposal ended.
type ReplyKind uint8

const (
	// ReplyCommitted: the op committed; Op/Timestamp identify it. For a
	// dedup hit on the metadata plane Cached holds the earlier reply body.
	ReplyCommitted ReplyKind = iota
	// ReplyNotAccepted (58): never entered any pipeline; safe to retry anywhere.
	ReplyNotAccepted
	// ReplyNotCommitted (57): outcome unknown; retry same session + request.
	ReplyNotCommitted
	// ReplyAlreadyApplied (59): below the watermark and aged out of the ring.
	ReplyAlreadyApplied
	// ReplyEvictNoSession / ReplyEvictSessionTooLow: terminal for the session.
	ReplyEvictNoSession
	ReplyEvictSessionTooLow
	// ReplyDropped: silently dropped per the protocol (session from the
	// future, same id with a different checksum). The driver answers nothing
	// on the metadata plane, or treats it as NotAccepted where silence is
	// not allowed by our "never silence" rule.
	ReplyDropped
)

// Reply reports the outcome of a Propose to the driver.
type Reply struct {
	Tag       uint64
	Kind      ReplyKind
	Op        uint64 // committed op (for Register: the new session fence)
	Timestamp uint64
	Cached    []byte // replayed reply body (metadata dedup), else nil
}

// Ready is one batch of work for the driver.
type Ready struct {
	// Truncate, if non-zero, removes journal entries with op >= Truncate
	// (a divergent uncommitted suffix) before Entries are appended.
	Truncate uint64
	// Entries to append to the journal, in op order; durable before Messages go out.
	Entries []Prepare
	// Superblock, if non-nil, must be durably written before Messages go out.
	Superblock *VsrState
	// Messages to send, after the above are durable. Best effort: the
	// protocol retransmits what is lost. A driver that steps the group
	// between Ready and the send drops those the group now calls Outdated.
	Messages []Message
	// Committed ops to apply to the state machine, in op order, exactly once.
	Committed []Prepare
	// Replies for proposals made on this replica.
	Replies []Reply
	// NeedSnapshot asks the driver to install a state transfer snapshot
	// (Snapshot holds it) before applying Committed.
	Snapshot *Snapshot
}

// IsEmpty reports whether rd carries no work.
func (rd *Ready) IsEmpty() bool {
	return rd.Truncate == 0 && len(rd.Entries) == 0 && rd.Superblock == nil &&
		len(rd.Messages) == 0 && len(rd.Committed) == 0 && len(rd.Replies) == 0 && rd.Snapshot == nil
}

// Snapshot is an application checkpoint at Op, opaque to consensus. The
// driver hands one in with Checkpoint(); consensus serves it to lagging
// replicas (state transfer) and hands a received one out in Ready.Snapshot.
type Snapshot struct {
	Op       uint64
	Checksum uint64 // XXH3 of Data
	Data     []byte
}
