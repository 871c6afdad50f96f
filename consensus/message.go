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

// Message is one replica-to-replica message. Fields not used by a Kind are
// zero. The transport encodes it for the wire; the simulator passes it by
// value (handlers must not retain or mutate Headers/Prepare/Data of a
// received message without copying).
type Message struct {
	Kind  MessageKind
	Group uint64
	From  uint8
	To    uint8
	View  uint32

	// Prepare / RepairPrepare: the entry. PrepareOk: Prepare.Header
	// identifies the acknowledged op (body nil).
	Prepare *Prepare

	Op        uint64 // head op (DVC, StartView), from-op (RequestPrepares), op (RepairDone/RangeEvicted)
	ToOp      uint64 // RequestPrepares upper bound (inclusive)
	Commit    uint64 // commit number (Commit heartbeat, DVC, StartView, PrepareOk)
	LogView   uint32 // DVC
	Timestamp uint64 // Commit heartbeat monotonic counter

	// DoViewChange / StartView suffix: headers from Op downwards.
	Headers []PrepareHeader
	// DVC: Nack bit i = proves it never prepared op (Op - i); Present bit i =
	// can serve the body of op (Op - i).
	Nack    Uint128
	Present Uint128

	// Nonce correlates probes (incarnation), repair and transfer sessions.
	Nonce Uint128

	// State transfer.
	Offset    uint64
	Length    uint32
	Available bool
	Data      []byte
}
