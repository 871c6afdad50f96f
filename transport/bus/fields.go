package bus

import "github.com/lodestream/lodestream/consensus"

// fields is the codec's view of a consensus.Message: only the fields
// Kind carries, with the Prepare pointer unpacked into what it holds for
// the kind (the entry, the acknowledged prepare's identity, the snapshot's
// chain anchor).
//
// fromMessage and toMessage below are the only code that knows which
// Message fields each kind carries; fields a kind does not carry are left
// zero, so Encode never puts them on the wire (and Decode, which
// re-encodes, refuses a frame that has them). The frame layouts
// (docs/bus.md) use the names here.
type fields struct {
	Kind  consensus.MessageKind
	Group uint64
	From  uint8
	View  uint32 // sender's current view

	// Prepare / RepairPrepare: the journal entry (its header's View is the
	// view it was prepared in).
	Entry *consensus.Prepare
	// PrepareOk: the acknowledged prepare's identity.
	AckedOp, AckedChecksum, AckedParent, AckedTimestamp, AckedRequest uint64
	AckedOperation                                                    consensus.Operation

	CommitMax        uint64 // PrepareOk: the sender's commit_max
	CommitMin        uint64 // Commit heartbeat: the primary's commit_min
	HeartbeatCounter uint64 // Commit heartbeat: restarts each view

	HeadOp   uint64 // DoViewChange, StartView
	CommitOp uint64 // DoViewChange: min(commit_max, head); StartView: commit
	LogView  uint32 // DoViewChange
	Suffix   []consensus.PrepareHeader
	Nack     consensus.Uint128
	Present  consensus.Uint128

	Incarnation consensus.Uint128 // StartView (echo, zero when broadcast), RequestStartView
	Amnesiac    bool              // RequestStartView, StartViewChange, DoViewChange
	// RepairProgress: StartViewChange from a primary-elect still repairing.
	RepairProgress uint64
	ViewUnknown    bool              // RequestStartView: from a wiped replica
	ProbeAnswer    bool              // RequestStartView: a backup's answer to such a probe
	StorageLost    bool              // DoViewChange: the sender's storage was lost
	Nonce          consensus.Uint128 // repair and state-transfer sessions (RepairPrepare too)

	FromOp, ToOp    uint64 // RequestPrepares, inclusive
	LastServedOp    uint64 // RepairDone
	FirstRetainedOp uint64 // RangeEvicted

	Available         bool   // StateTransferTarget, StateChunk
	SnapshotOp        uint64 // StateTransferTarget, RequestStateChunk, StateChunk
	SnapshotSizeBytes uint64 // StateTransferTarget
	SnapshotChecksum  uint64 // StateTransferTarget: XXH3 of the snapshot data
	AnchorTimestamp   uint64 // StateTransferTarget: prepare timestamp of the snapshot op
	AnchorChecksum    uint64 // StateTransferTarget: identity checksum of the snapshot op
	ChunkOffset       uint64 // RequestStateChunk, StateChunk
	ChunkLengthBytes  uint32 // RequestStateChunk (StateChunk: len(ChunkData))
	ChunkData         []byte // StateChunk
}

// fromMessage picks the fields m.Kind carries. Fields a kind does not carry
// are left zero (and so are not sent).
func fromMessage(m *consensus.Message) fields {
	f := fields{Kind: m.Kind, Group: m.Group, From: m.From, View: m.View}
	switch m.Kind {
	case consensus.MsgPrepare:
		f.Entry = m.Prepare
	case consensus.MsgRepairPrepare:
		f.Entry, f.Nonce = m.Prepare, m.Nonce
	case consensus.MsgPrepareOk:
		if m.Prepare != nil {
			h := &m.Prepare.Header
			f.AckedOp, f.AckedChecksum, f.AckedParent = h.Op, h.Checksum, h.Parent
			f.AckedTimestamp, f.AckedRequest, f.AckedOperation = h.Timestamp, h.Request, h.Operation
		}
		f.CommitMax = m.CommitMax
	case consensus.MsgCommit:
		f.CommitMin, f.HeartbeatCounter = m.CommitMin, m.HeartbeatCounter
	case consensus.MsgStartViewChange:
		f.Amnesiac, f.RepairProgress = m.Amnesiac, m.RepairProgress
	case consensus.MsgDoViewChange:
		f.HeadOp, f.CommitOp, f.LogView = m.HeadOp, m.CommitOp, m.LogView
		f.Suffix, f.Nack, f.Present, f.Amnesiac, f.StorageLost = m.Suffix, m.Nack, m.Present, m.Amnesiac, m.StorageLost
		f.CommitMax = m.CommitMax
	case consensus.MsgStartView:
		f.HeadOp, f.CommitOp, f.Suffix, f.Incarnation = m.HeadOp, m.CommitOp, m.Suffix, m.Incarnation
	case consensus.MsgRequestStartView:
		f.Incarnation, f.Amnesiac, f.ViewUnknown, f.ProbeAnswer = m.Incarnation, m.Amnesiac, m.ViewUnknown, m.ProbeAnswer
	case consensus.MsgRequestPrepares:
		f.Nonce, f.FromOp, f.ToOp = m.Nonce, m.FromOp, m.ToOp
	case consensus.MsgRepairDone:
		f.Nonce, f.LastServedOp = m.Nonce, m.LastServedOp
	case consensus.MsgRangeEvicted:
		f.Nonce, f.FirstRetainedOp = m.Nonce, m.FirstRetainedOp
	case consensus.MsgRequestStateTransfer:
		f.Nonce = m.Nonce
	case consensus.MsgStateTransferTarget:
		f.Nonce, f.Available, f.SnapshotOp = m.Nonce, m.Available, m.SnapshotOp
		if m.Available {
			f.SnapshotSizeBytes, f.SnapshotChecksum, f.AnchorTimestamp = m.SnapshotSizeBytes, m.SnapshotChecksum, m.AnchorTimestamp
			if m.Prepare != nil {
				f.AnchorChecksum = m.Prepare.Header.Checksum
			}
		}
	case consensus.MsgRequestStateChunk:
		f.Nonce, f.SnapshotOp, f.ChunkOffset, f.ChunkLengthBytes = m.Nonce, m.SnapshotOp, m.ChunkOffset, m.ChunkLengthBytes
	case consensus.MsgStateChunk:
		f.Nonce, f.SnapshotOp, f.ChunkOffset, f.Available = m.Nonce, m.SnapshotOp, m.ChunkOffset, m.Available
		if m.Available {
			f.ChunkData = m.ChunkData
		}
	}
	return f
}

// toMessage is the inverse of fromMessage for the fields f.Kind carries.
func (f *fields) toMessage() consensus.Message {
	m := consensus.Message{Kind: f.Kind, Group: f.Group, From: f.From, View: f.View}
	switch f.Kind {
	case consensus.MsgPrepare:
		m.Prepare = f.Entry
	case consensus.MsgRepairPrepare:
		m.Prepare, m.Nonce = f.Entry, f.Nonce
	case consensus.MsgPrepareOk:
		m.Prepare = &consensus.Prepare{Header: consensus.PrepareHeader{
			Op: f.AckedOp, Checksum: f.AckedChecksum, Parent: f.AckedParent,
			Timestamp: f.AckedTimestamp, Request: f.AckedRequest, Operation: f.AckedOperation,
		}}
		m.CommitMax = f.CommitMax
	case consensus.MsgCommit:
		m.CommitMin, m.HeartbeatCounter = f.CommitMin, f.HeartbeatCounter
	case consensus.MsgStartViewChange:
		m.Amnesiac, m.RepairProgress = f.Amnesiac, f.RepairProgress
	case consensus.MsgDoViewChange:
		m.HeadOp, m.CommitOp, m.LogView = f.HeadOp, f.CommitOp, f.LogView
		m.Suffix, m.Nack, m.Present, m.Amnesiac, m.StorageLost = f.Suffix, f.Nack, f.Present, f.Amnesiac, f.StorageLost
		m.CommitMax = f.CommitMax
	case consensus.MsgStartView:
		m.HeadOp, m.CommitOp, m.Suffix, m.Incarnation = f.HeadOp, f.CommitOp, f.Suffix, f.Incarnation
	case consensus.MsgRequestStartView:
		m.Incarnation, m.Amnesiac, m.ViewUnknown, m.ProbeAnswer = f.Incarnation, f.Amnesiac, f.ViewUnknown, f.ProbeAnswer
	case consensus.MsgRequestPrepares:
		m.Nonce, m.FromOp, m.ToOp = f.Nonce, f.FromOp, f.ToOp
	case consensus.MsgRepairDone:
		m.Nonce, m.LastServedOp = f.Nonce, f.LastServedOp
	case consensus.MsgRangeEvicted:
		m.Nonce, m.FirstRetainedOp = f.Nonce, f.FirstRetainedOp
	case consensus.MsgRequestStateTransfer:
		m.Nonce = f.Nonce
	case consensus.MsgStateTransferTarget:
		m.Nonce, m.Available, m.SnapshotOp = f.Nonce, f.Available, f.SnapshotOp
		if f.Available {
			m.SnapshotSizeBytes, m.SnapshotChecksum, m.AnchorTimestamp = f.SnapshotSizeBytes, f.SnapshotChecksum, f.AnchorTimestamp
			m.Prepare = &consensus.Prepare{Header: consensus.PrepareHeader{
				Op: f.SnapshotOp, Checksum: f.AnchorChecksum, Timestamp: f.AnchorTimestamp,
			}}
		}
	case consensus.MsgRequestStateChunk:
		m.Nonce, m.SnapshotOp, m.ChunkOffset, m.ChunkLengthBytes = f.Nonce, f.SnapshotOp, f.ChunkOffset, f.ChunkLengthBytes
	case consensus.MsgStateChunk:
		m.Nonce, m.SnapshotOp, m.ChunkOffset, m.Available = f.Nonce, f.SnapshotOp, f.ChunkOffset, f.Available
		if len(f.ChunkData) > 0 {
			m.ChunkData = f.ChunkData
		}
	}
	return m
}
