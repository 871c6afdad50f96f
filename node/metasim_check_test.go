package node

import (
	"bytes"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
)

// metaSimApplier is the node's own applier (Node.applyCommitted,
// installSnapshot, checkpointData) with the simulator's checks on every
// apply: ops apply in order without a gap, every replica applies the same
// op under one number with the same reply, and no request is applied at
// two ops.
type metaSimApplier struct {
	w    *metaSimWorld
	n    *metaSimNode
	node *Node
}

func (a *metaSimApplier) applyCommitted(p consensus.Prepare, local *proposal) []byte {
	body := a.node.applyCommitted(p, local)
	a.w.applied(a.n, p, body)
	return body
}

func (a *metaSimApplier) installSnapshot(s consensus.Snapshot, g metadataGroup) error {
	if err := a.node.installSnapshot(s, g); err != nil {
		return err
	}
	a.w.stats.Installs++
	a.w.trace.add("install", uint64(a.n.id), s.Op)
	a.n.lastApplied = max(a.n.lastApplied, s.Op)
	return nil
}

func (a *metaSimApplier) checkpointData(table []byte) []byte {
	a.w.stats.Checkpoints++
	return a.node.checkpointData(table)
}

// applied checks one apply on node n against every earlier one.
func (w *metaSimWorld) applied(n *metaSimNode, p consensus.Prepare, reply []byte) {
	h := p.Header
	w.stats.Applies++
	w.trace.add("apply", uint64(n.id), h.Op, h.Checksum)
	if h.Op != n.lastApplied+1 {
		w.fail(fmt.Errorf("node %d applied op %d after op %d", n.id, h.Op, n.lastApplied))
	}
	n.lastApplied = h.Op
	first, seen := w.committed[h.Op]
	if !seen {
		w.committed[h.Op] = metaSimCommitted{
			prepare: consensus.Prepare{Header: h, Body: bytes.Clone(p.Body)}, reply: bytes.Clone(reply), by: n.id}
		if h.Request > 0 { // a Register's is 0: its op names the session
			key := [3]uint64{h.Client.Lo, h.Client.Hi, h.Request}
			if op, twice := w.appliedAt[key]; twice && op != h.Op {
				w.fail(fmt.Errorf("request %d of client %x applied twice: ops %d and %d", h.Request, h.Client.Lo, op, h.Op))
			}
			w.appliedAt[key] = h.Op
		}
		return
	}
	if first.prepare.Header.Checksum != h.Checksum {
		w.fail(fmt.Errorf("replicas applied different ops %d: node %d applied %v of client %x request %d, node %d applied %v of client %x request %d",
			h.Op, first.by, first.prepare.Header.Operation, first.prepare.Header.Client.Lo, first.prepare.Header.Request,
			n.id, h.Operation, h.Client.Lo, h.Request))
		return
	}
	if !bytes.Equal(first.reply, reply) {
		w.fail(fmt.Errorf("op %d (%v) answered %x on node %d but %x on node %d", h.Op, h.Operation, first.reply, first.by, reply, n.id))
	}
}

// acknowledged checks a committed outcome a client received: the op it
// names holds the client's request, and the reply is the one the op's
// apply gave (a deduplicated retry replays it, byte for byte).
func (w *metaSimWorld) acknowledged(c *metaSimClient, req uint64, op uint64, reply []byte) {
	rec, ok := w.committed[op]
	switch {
	case !ok:
		w.fail(fmt.Errorf("client %x request %d acknowledged at op %d, which no replica applied", c.id.Lo, req, op))
	case rec.prepare.Header.Client != c.id || rec.prepare.Header.Request != req:
		w.fail(fmt.Errorf("client %x request %d acknowledged at op %d, which holds client %x request %d",
			c.id.Lo, req, op, rec.prepare.Header.Client.Lo, rec.prepare.Header.Request))
	case req > 0 && !bytes.Equal(rec.reply, reply):
		w.fail(fmt.Errorf("client %x request %d acknowledged at op %d with reply %x, but the op's apply answered %x",
			c.id.Lo, req, op, reply, rec.reply))
	}
}

// checkConverged (after the heal, every node up and caught up) checks that
// the replicas hold one state, and that it is the state the committed ops
// give when applied in order to a fresh cluster's state: no committed op
// lost, none applied differently.
func (w *metaSimWorld) checkConverged() {
	first := w.nodes[0]
	state := first.node.state.Snapshot()
	table := first.driver.group.ClientTableSnapshot()
	for _, n := range w.nodes[1:] {
		if s := n.node.state.Snapshot(); !bytes.Equal(s, state) {
			w.fail(fmt.Errorf("after the heal node %d's metadata state (%d bytes) differs from node %d's (%d bytes)",
				n.id, len(s), first.id, len(state)))
		}
		if t := n.driver.group.ClientTableSnapshot(); !bytes.Equal(t, table) {
			w.fail(fmt.Errorf("after the heal node %d's client table (%d bytes) differs from node %d's (%d bytes)",
				n.id, len(t), first.id, len(table)))
		}
	}
	w.checkPartitions()
	w.checkMessages()
	reference, err := w.replayCommitted(first.driver.group.CommitMax())
	if err != nil {
		w.fail(err)
		return
	}
	if !bytes.Equal(reference, state) {
		w.fail(fmt.Errorf("after the heal the replicas' metadata state (%d bytes) is not the one the %d committed ops give (%d bytes)",
			len(state), first.driver.group.CommitMax(), len(reference)))
	}
}

// replayCommitted applies ops 1..commit, as first applied, to a fresh
// cluster's state and returns its snapshot.
func (w *metaSimWorld) replayCommitted(commit uint64) ([]byte, error) {
	hash, err := metaSimRootHash()
	if err != nil {
		return nil, err
	}
	ref := &Node{cfg: w.cfg, log: w.log, topo: topology{clustered: true, self: 0, count: uint8(w.sc.nodes)}, state: metadata.NewState()}
	if err := ref.state.SeedRoot("iggy", hash); err != nil {
		return nil, err
	}
	for op := uint64(1); op <= commit; op++ {
		rec, ok := w.committed[op]
		if !ok {
			return nil, fmt.Errorf("op %d is committed (commit %d) but no replica ever applied it", op, commit)
		}
		ref.applyCommitted(rec.prepare, nil)
	}
	return ref.state.Snapshot(), nil
}
