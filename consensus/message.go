package consensus

// MessageKind enumerates replica-to-replica messages. Values follow the
// upstream command numbering where one exists, so logs read alike.
type MessageKind uint8

const (
	MsgPrepare              MessageKind = 6
	MsgPrepareOk            MessageKind = 7
	MsgCommit               MessageKind = 9 // commit heartbeat
	MsgStartViewChange      MessageKind = 10
	MsgDoViewChange         MessageKind = 11
	MsgStartView            MessageKind = 12
	MsgRequestStartView     MessageKind = 17
	MsgRequestPrepares      MessageKind = 18
	MsgRepairPrepare        MessageKind = 19
	MsgRepairDone           MessageKind = 20
	MsgRangeEvicted         MessageKind = 21
	MsgRequestStateTransfer MessageKind = 22
	MsgStateTransferTarget  MessageKind = 23
	MsgRequestStateChunk    MessageKind = 24
	MsgStateChunk           MessageKind = 25
)

// Message is one replica-to-replica message. Each field is named by what
// it holds and is carried by the kinds listed beside it; fields a Kind does
// not carry are zero (docs/consensus.md, "Message fields per kind"). The
// transport encodes it for the wire; the simulator passes it by value
// (handlers must not retain or mutate Suffix/Prepare/ChunkData of a
// received message without copying).
type Message struct {
	Kind  MessageKind
	Group uint64
	From  uint8
	To    uint8
	View  uint32 // the sender's current view

	// Prepare holds, per kind:
	//   - Prepare / RepairPrepare: the journal entry (header and body);
	//   - PrepareOk: the acknowledged prepare's header (consensus reads its
	//     Op and Checksum; body nil);
	//   - StateTransferTarget (Available): the chain anchor, the header of
	//     the snapshot op {Op: SnapshotOp, Checksum, Timestamp:
	//     AnchorTimestamp}.
	Prepare *Prepare

	CommitMax        uint64 // PrepareOk: the sender's commit_max
	CommitMin        uint64 // Commit heartbeat: the primary's commit_min
	HeartbeatCounter uint64 // Commit heartbeat: monotonic counter, restarts each view

	HeadOp   uint64 // DoViewChange, StartView: the sender's head op; Suffix starts here
	CommitOp uint64 // DoViewChange: min(commit_max, HeadOp); StartView: the new primary's commit
	LogView  uint32 // DoViewChange
	// DoViewChange / StartView suffix: headers from HeadOp downwards.
	Suffix []PrepareHeader
	// DoViewChange: Nack bit i = proves it never prepared op (HeadOp - i);
	// Present bit i = can serve the body of op (HeadOp - i).
	Nack    Uint128
	Present Uint128

	// Incarnation correlates a probe with its answer: RequestStartView, and
	// StartView echoing it (zero on a broadcast StartView).
	Incarnation Uint128
	// Amnesiac: RequestStartView and StartViewChange: the sender restarted
	// amnesiac and has not recovered (amnesia.go); DoViewChange: the
	// sender is amnesiac and voting only because too few intact replicas
	// may exist (its DVC counts only beside enough others like it).
	Amnesiac bool
	// ViewUnknown: RequestStartView from a wiped replica (no durable view,
	// view_evidence.go); ProbeAnswer: a Normal backup's answer to such a
	// probe, carrying its view (never answered in turn).
	ViewUnknown, ProbeAnswer bool
	// RepairProgress: StartViewChange from the primary-elect of a decided
	// merge: how many ops it has repaired into its journal in this view.
	// A backup that sees it grow keeps the view change alive (its status
	// timer starts over) instead of escalating past a primary-elect that
	// is still filling its log (finding 22).
	RepairProgress uint64
	// StorageLost: DoViewChange of a rack election from a replica whose
	// storage was lost (amnesia.go: a rack merge counts at most f of them).
	StorageLost bool
	// (CommitMax is also carried by DoViewChange: the sender's commit_max,
	// not clamped to its head, so a merge never decides below it.)
	// Nonce correlates a repair or state-transfer session: RequestPrepares,
	// RepairPrepare, RepairDone, RangeEvicted, RequestStateTransfer,
	// StateTransferTarget, RequestStateChunk, StateChunk.
	Nonce Uint128

	FromOp          uint64 // RequestPrepares: first op asked for
	ToOp            uint64 // RequestPrepares: last op asked for (inclusive)
	LastServedOp    uint64 // RepairDone: the last op the peer served
	FirstRetainedOp uint64 // RangeEvicted: the oldest op the peer still holds

	// State transfer.
	SnapshotOp        uint64 // StateTransferTarget, RequestStateChunk, StateChunk: the snapshot's op
	SnapshotSizeBytes uint64 // StateTransferTarget: size of the snapshot data
	SnapshotChecksum  uint64 // StateTransferTarget: XXH3 of the snapshot data
	AnchorTimestamp   uint64 // StateTransferTarget: prepare timestamp of the snapshot op
	ChunkOffset       uint64 // RequestStateChunk, StateChunk: byte offset into the snapshot data
	ChunkLengthBytes  uint32 // RequestStateChunk: bytes asked for (StateChunk: len(ChunkData))
	Available         bool   // StateTransferTarget, StateChunk
	ChunkData         []byte // StateChunk
}
