package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// evKind tags trace events; the trace hash folds (kind, fields) in order.
type evKind uint8

const (
	evSend evKind = iota + 1
	evDeliver
	evCommit
	evReply
	evPropose
	evCrash
	evRestart
	evRestore
	evSnapshot
	evCheckpoint
	evClientAck
	evHeal
	evTruncate
	evJournal
	evPowerLoss
	evStorageLoss
	evStorageRejoin
)

var evNames = map[evKind]string{
	evSend: "send", evDeliver: "deliver", evCommit: "commit", evReply: "reply", evPropose: "propose",
	evCrash: "crash", evRestart: "restart", evRestore: "restore", evSnapshot: "snapshot",
	evCheckpoint: "checkpoint", evClientAck: "client-ack", evHeal: "heal", evTruncate: "truncate",
	evJournal: "journal", evPowerLoss: "power-loss", evStorageLoss: "storage-loss", evStorageRejoin: "rejoined",
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// trace folds one event into the run's trace hash and, when verbose,
// prints it. Same seed, same code => same sequence => same hash.
func (w *world) trace(kind evKind, node, group int, a, b uint64) {
	var buf [32]byte
	binary.LittleEndian.PutUint64(buf[0:], w.now)
	buf[8], buf[9], buf[10] = byte(kind), byte(node), byte(group)
	binary.LittleEndian.PutUint64(buf[16:], a)
	binary.LittleEndian.PutUint64(buf[24:], b)
	h := w.traceHash
	for _, c := range buf {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	w.traceHash = h
	w.events++
	if w.verbose != nil {
		fmt.Fprintf(w.verbose, "%7d %-10s node=%d group=%d a=%d b=%#x\n", w.now, evNames[kind], node, group, a, b)
	}
}

func (w *world) traceMessage(kind evKind, m *consensus.Message) {
	op := messageOp(m)
	if m.Prepare != nil {
		op = m.Prepare.Header.Op
	}
	gi := 0
	if m.Group != w.groups[0].id {
		gi = 1
	}
	verbose := w.verbose
	w.verbose = nil // print the decoded line below instead of raw fields
	w.trace(kind, int(m.From), int(m.To), uint64(m.Kind)<<56|uint64(gi)<<48|uint64(m.View&0xffffff)<<24|(op&0xffffff), messageCommit(m))
	w.verbose = verbose
	if verbose != nil {
		fmt.Fprintf(verbose, "%7d %-10s %s %s %d->%d view=%d op=%d commit=%d log_view=%d\n", w.now, evNames[kind],
			w.groups[gi].name, messageKindName(m.Kind), m.From, m.To, m.View, op, messageCommit(m), m.LogView)
	}
}

// messageOp is the op a message is about, for the trace: the head op
// (DoViewChange, StartView), the first op asked for (RequestPrepares), the
// last op served (RepairDone), the first op retained (RangeEvicted) or the
// snapshot op (state transfer); 0 for the other kinds. A message carrying a
// prepare is traced by the prepare's op instead.
func messageOp(m *consensus.Message) uint64 {
	switch m.Kind {
	case consensus.MsgDoViewChange, consensus.MsgStartView:
		return m.HeadOp
	case consensus.MsgRequestPrepares:
		return m.FromOp
	case consensus.MsgRepairDone:
		return m.LastServedOp
	case consensus.MsgRangeEvicted:
		return m.FirstRetainedOp
	case consensus.MsgStateTransferTarget, consensus.MsgRequestStateChunk, consensus.MsgStateChunk:
		return m.SnapshotOp
	}
	return 0
}

// messageCommit is the second traced number of a message: the sender's
// commit_max (PrepareOk), commit_min (Commit heartbeat), the commit op
// (DoViewChange, StartView) or the snapshot checksum
// (StateTransferTarget); 0 for the other kinds.
func messageCommit(m *consensus.Message) uint64 {
	switch m.Kind {
	case consensus.MsgPrepareOk:
		return m.CommitMax
	case consensus.MsgCommit:
		return m.CommitMin
	case consensus.MsgDoViewChange, consensus.MsgStartView:
		return m.CommitOp
	case consensus.MsgStateTransferTarget:
		return m.SnapshotChecksum
	}
	return 0
}

var messageKindNames = map[consensus.MessageKind]string{
	consensus.MsgPrepare: "Prepare", consensus.MsgPrepareOk: "PrepareOk", consensus.MsgCommit: "Commit",
	consensus.MsgStartViewChange: "StartViewChange", consensus.MsgDoViewChange: "DoViewChange",
	consensus.MsgStartView: "StartView", consensus.MsgRequestStartView: "RequestStartView",
	consensus.MsgRequestPrepares: "RequestPrepares", consensus.MsgRepairPrepare: "RepairPrepare",
	consensus.MsgRepairDone: "RepairDone", consensus.MsgRangeEvicted: "RangeEvicted",
	consensus.MsgRequestStateTransfer: "RequestStateTransfer", consensus.MsgStateTransferTarget: "StateTransferTarget",
	consensus.MsgRequestStateChunk: "RequestStateChunk", consensus.MsgStateChunk: "StateChunk",
}

func messageKindName(k consensus.MessageKind) string {
	if n, ok := messageKindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind%d", k)
}

// logf prints a free-form line in verbose mode only.
func (w *world) logf(format string, args ...any) {
	if w.verbose != nil {
		fmt.Fprintf(w.verbose, "%7d %s\n", w.now, fmt.Sprintf(format, args...))
	}
}
