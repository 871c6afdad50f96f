package node

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Checkpoint data layout (ours): [state_len u32][metadata.State snapshot]
// [client table encoding]. The state snapshot carries its own checksum; the
// snapshot file adds a trailer over the whole.
func encodeCheckpoint(state, table []byte) []byte {
	out := make([]byte, 0, 4+len(state)+len(table))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(state)))
	out = append(out, state...)
	return append(out, table...)
}

func decodeCheckpoint(b []byte) (state, table []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("checkpoint of %d bytes has no state length", len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("checkpoint state length %d exceeds the %d bytes present", n, len(b)-4)
	}
	return b[4 : 4+n], b[4+n:], nil
}

// checkpointData implements applier.
func (n *Node) checkpointData(table []byte) []byte {
	return encodeCheckpoint(n.state.Snapshot(), table)
}

// installSnapshot implements applier: a state transfer's snapshot (already
// durable) replaces the metadata state, its client table goes to the
// group, and the partition plane follows the new state.
func (n *Node) installSnapshot(s consensus.Snapshot, g metadataGroup) error {
	stateBytes, tableBytes, err := decodeCheckpoint(s.Data)
	if err != nil {
		return err
	}
	restored, err := metadata.Restore(stateBytes)
	if err != nil {
		return err
	}
	if len(tableBytes) > 0 {
		if err := g.RestoreClientTable(tableBytes); err != nil {
			return fmt.Errorf("client table: %w", err)
		}
	}
	n.state.ReplaceFrom(restored)
	if n.plane != nil {
		n.plane.reconcile(n.state)
	}
	return nil
}

// patReply is the node-local part of a CreatePersonalAccessToken reply: the
// raw token, which is never replicated (only its hash is).
type patReply struct{ token string }

// applyCommitted implements applier: it applies one committed op to the
// metadata state and builds the reply body (result-framed) from committed
// data, so every replica that applies the op could answer identically.
func (n *Node) applyCommitted(p consensus.Prepare, local *proposal) []byte {
	h := p.Header
	// The op was proposed on the primary of the view it was prepared in,
	// which held the client's connection (metadata writes are accepted on
	// the primary only): memberships record that node and the session.
	ctx := metadata.ApplyContext{Op: h.Op, Timestamp: h.Timestamp, UserID: h.UserID,
		Node: uint8(h.View % uint32(n.topo.count)), Session: h.Session}
	switch h.Operation {
	case consensus.OperationRegister:
		// The node whose connection registered the session: named in the
		// Register's body (a forwarded login carries the follower's id),
		// else the primary that proposed it.
		node := ctx.Node
		if len(p.Body) == 1 && p.Body[0] < n.topo.count {
			node = p.Body[0]
		}
		n.state.BindSession(metadata.ClientID(h.Client), node, h.Op)
		return n.registerReplyBody(h.UserID, h.Op)
	case consensus.OperationLogout:
		n.state.UnbindSession(metadata.ClientID(h.Client))
		// A session's end releases its consumer-group memberships.
		if res := n.state.Apply(ctx, metadata.RemoveConsumerGroupMember{Client: metadata.ClientID(h.Client)}); !res.OK() {
			n.log.Warn("releasing group memberships on logout failed", "op", h.Op, "code", res.Code)
		}
		return nil
	}
	if n.metaBroken.skips(n, h.Operation) {
		return wire.AppendResultOK(nil)
	}
	res, err := n.state.ApplyEncoded(ctx, p.Body)
	if err != nil {
		n.log.Error("committed metadata op does not decode; committed as InvalidCommand", "op", h.Op, "err", err)
	}
	if res.OK() && n.plane != nil {
		// Scoped to what the command touched (issue 15 point 9).
		if cmd, derr := metadata.DecodeCommand(p.Body); derr == nil {
			n.plane.reconcileAfter(n.state, cmd, res)
		} else {
			n.plane.reconcile(n.state)
		}
	}
	var extra any
	if local != nil {
		extra = local.extra
	}
	return writeReplyBody(wire.Operation(h.Operation), res, extra)
}

// writeReplyBody builds the result-framed reply of a committed metadata
// command: a rejection code, or OK and the command's payload.
func writeReplyBody(op wire.Operation, res metadata.Result, extra any) []byte {
	if res.Code != metadata.CodeOK {
		return wire.AppendResultRejection(nil, wire.ErrorCode(res.Code))
	}
	out := wire.AppendResultOK(nil)
	switch op {
	case wire.OpCreateStream:
		if res.Stream != nil {
			out = appendStreamDetails(out, *res.Stream)
		}
	case wire.OpCreateTopic:
		if res.Topic != nil {
			out = appendTopicDetails(out, *res.Topic)
		}
	case wire.OpCreateUser:
		if res.User != nil {
			out = appendUserDetails(out, *res.User)
		}
	case wire.OpCreateConsumerGroup:
		if res.Group != nil {
			out = appendGroupDetails(out, *res.Group)
		}
	case wire.OpCreatePersonalAccessToken:
		// Only the proposing node knows the raw token; elsewhere the reply
		// carries an empty token (no replica but the primary answers).
		token := ""
		if pr, ok := extra.(patReply); ok {
			token = pr.token
		}
		out = append(out, byte(len(token)))
		out = append(out, token...)
	}
	return out
}

// recovered is what openMetaStorage read back from disk.
type recovered struct {
	superblock *consensus.VsrState
	snapshot   *consensus.Snapshot
	entries    []consensus.Prepare
	// storageLost: metadata.storage_lost says this replica's storage was
	// lost and its group has not rejoined since (storage_lost_marker.go).
	storageLost bool
	// superblockDamage: a damaged older superblock copy was booted past.
	superblockDamage string
	// walTornFile, walTornAt, walTornBytes: the torn (never acknowledged)
	// WAL tail cut: the segment, position and bytes.
	walTornFile             string
	walTornAt, walTornBytes int64
}

var errJournalWithoutSnapshot = errors.New("metadata journal holds entries but there is no snapshot (the boot checkpoint is missing); wipe the metadata directory to start fresh")

// recover rebuilds the metadata state and the group from disk. The
// snapshot gives the state as of its op; with one replica every journal
// entry after it is committed, and consensus.Restart hands those ops to the
// driver's first Ready, which applies them before anything is served.
func (n *Node) recover(rec recovered, opts Options) (*consensus.Replica, *metadata.State, error) {
	cfg := n.groupConfig(opts.ReplicaID)
	if rec.snapshot == nil {
		if len(rec.entries) > 0 {
			return nil, nil, errJournalWithoutSnapshot
		}
		if opts.RootUsername == "" || opts.RootPassword == "" {
			return nil, nil, errors.New("first boot needs root credentials (IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD or --with-default-root-credentials)")
		}
		hash, err := metadata.RootPasswordHash(n.cfg.Cluster.Name, opts.RootUsername, opts.RootPassword)
		if err != nil {
			return nil, nil, fmt.Errorf("root password: %w", err)
		}
		state := metadata.NewState()
		if err := state.SeedRoot(opts.RootUsername, hash); err != nil {
			return nil, nil, fmt.Errorf("seed root user: %w", err)
		}
		group, err := consensus.New(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("metadata group: %w", err)
		}
		return group, state, nil
	}
	stateBytes, tableBytes, err := decodeCheckpoint(rec.snapshot.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata snapshot at op %d: %w", rec.snapshot.Op, err)
	}
	state, err := metadata.Restore(stateBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata snapshot at op %d: %w", rec.snapshot.Op, err)
	}
	// The metadata WAL holds every entry this replica acknowledged: each is
	// synced before its PrepareOk leaves (the metadata group is always
	// persisted), a truncation and its re-append are one durable record
	// group (journal.WAL.TruncateAndAppend), and a failed sync stops the
	// process before anything else is acknowledged. So a header-only op of
	// log_view's log was never acknowledged here and may be nacked after a
	// restart too (metadata simulator seed 10516: a wiped primary held the
	// only bodies of two uncommitted ops, and the two restarted replicas
	// could not nack them, so no view change ever completed). Lost storage
	// promises nothing.
	group, err := consensus.Restart(cfg, consensus.Restored{
		Superblock: rec.superblock, Snapshot: rec.snapshot, Entries: rec.entries, StorageLost: rec.storageLost,
		JournalIntact: !rec.storageLost,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("restart metadata group: %w", err)
	}
	// The client table as of the snapshot; the journal ops after it fold in
	// when the driver applies and advances them.
	if len(tableBytes) > 0 {
		if err := group.RestoreClientTable(tableBytes); err != nil {
			return nil, nil, fmt.Errorf("metadata snapshot at op %d: %w", rec.snapshot.Op, err)
		}
	}
	n.log.Info("metadata recovered", "snapshot_op", rec.snapshot.Op, "journal_ops", group.Op()-rec.snapshot.Op)
	return group, state, nil
}

// writeBootCheckpoint makes the first boot's seeded state durable before
// anything is served: snapshot at op 0, then the superblock naming it.
func (n *Node) writeBootCheckpoint(store durableLog) error {
	s := consensus.Snapshot{Op: 0, Data: n.checkpointData(nil)}
	s.Checksum = snapshotChecksum(s.Data)
	if err := store.WriteSnapshot(s); err != nil {
		return fmt.Errorf("write boot metadata snapshot: %w", err)
	}
	if err := store.WriteSuperblock(consensus.VsrState{}); err != nil {
		return fmt.Errorf("write boot metadata superblock: %w", err)
	}
	return nil
}
