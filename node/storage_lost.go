package node

import (
	"context"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport/bus"
)

// A clustered node that boots on empty metadata storage cannot tell on its
// own a new cluster's first boot from a replica whose storage was lost (a
// wiped or replaced disk). Joining as a fresh replica is right for the
// first, and unsafe for the second: a fresh replica is Normal at once, so
// its empty log would vote as a nack in a view change, and replica 0 would
// come back as primary of view 0 with an empty log while its backups hold
// committed ops. So before its metadata group runs, such a node asks its
// peers where they stand in the metadata group (FetchStatus frames):
//
//   - a peer with history (a view, op or commit above zero, unless the
//     peer is newborn: see peerHasHistory) means the storage was lost:
//     the group restarts Recovering with consensus.Restored.StorageLost (no vote until the view's primary
//     answers, and never an election on its empty log), and partition
//     groups created before this boot do the same;
//   - a view-change quorum of fresh replicas (this node included) means
//     nothing was ever prepared: any committed op would be on a
//     replication quorum, which intersects every view-change quorum. The
//     node joins as a fresh replica, as before.
//
// It asks every statusProbeInterval and decides on each round's replies
// (settleVerdict) until one of the two holds.

const (
	statusProbeInterval = 200 * time.Millisecond
	statusWaitLogEvery  = 5 * time.Second
	statusRepliesMax    = 64 // buffered replies; more are dropped (the next round asks again)
)

// onFetchStatus answers a peer's FetchStatus for the metadata group (bus
// reader goroutine). Other groups are not answered: the asker counts only
// metadata replies.
func (n *Node) onFetchStatus(f bus.Fetch) {
	if f.Group != metadataGroupID || n.bus == nil {
		return
	}
	view, op, commitMax, newborn := n.driver.position()
	n.bus.SendFetch(f.From, &bus.Fetch{Kind: bus.FetchStatusReply, From: n.topo.self, Group: f.Group, Nonce: f.Nonce,
		View: view, Op: op, CommitMax: commitMax, Newborn: newborn})
}

// onFetchStatusReply hands a reply to settleFreshStorage, if it waits.
func (n *Node) onFetchStatusReply(f bus.Fetch) {
	select {
	case n.statusReplies <- f:
	default:
	}
}

// peerHasHistory reports whether a peer's FetchStatusReply shows metadata
// history this node could have lost. A newborn peer (the view-0 primary
// of a cluster born in its process, nothing committed, no view change
// since) does not: the ops it prepared since no backup acknowledged yet
// — the asker among them, were it one — so it counts as fresh. Without
// that a view-0 primary that prepares its first op (a client's login)
// before its other peers settled makes every one of them decide its
// storage was lost, and a new cluster waits for ever on Recovering
// replicas (seen in TestClusterWipedNodeThatCrashedWhileSettlingRejoinsLost
// on a loaded machine).
func peerHasHistory(view uint32, op, commitMax uint64, newborn bool) bool {
	if newborn {
		return false
	}
	return view > 0 || op > 0 || commitMax > 0
}

// settleVerdict is what one probe round's replies tell: history wins over
// fresh replies of the same round (a peer's answer may be late, not
// absent); otherwise enough fresh peers (need, this node excluded) make a
// new cluster; otherwise ask again.
func settleVerdict(histories, fresh, need int) peersVerdict {
	switch {
	case histories > 0:
		return peersHaveHistory
	case fresh >= need:
		return peersFresh
	}
	return peersUndecided
}

type peersVerdict int

const (
	peersUndecided peersVerdict = iota
	peersHaveHistory
	peersFresh
)

// settleFreshStorage (clustered, empty metadata storage, before the
// metadata group runs) decides whether this node's storage was lost; see
// above. It returns ctx's error when cancelled first.
func (n *Node) settleFreshStorage(ctx context.Context) (lost bool, err error) {
	need := consensus.ViewChangeQuorum(int(n.topo.count)) - 1 // fresh peers besides this node
	ticker := time.NewTicker(statusProbeInterval)
	defer ticker.Stop()
	started, lastLog := time.Now(), time.Now()
	for {
		// A round: ask every peer, then take the replies until the next
		// tick; a reply of an earlier round (another nonce) is dropped.
		nonce := consensus.Uint128{Lo: randomUint64(), Hi: randomUint64()}
		for id := uint8(0); id < n.topo.count; id++ {
			if id != n.topo.self {
				n.bus.SendFetch(id, &bus.Fetch{Kind: bus.FetchStatus, From: n.topo.self, Group: metadataGroupID, Nonce: nonce})
			}
		}
		fresh := make(map[uint8]bool)
		var history *bus.Fetch
	wait:
		for {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case r := <-n.statusReplies:
				if r.Nonce != nonce || r.Group != metadataGroupID || r.From >= n.topo.count || r.From == n.topo.self {
					continue
				}
				if peerHasHistory(r.View, r.Op, r.CommitMax, r.Newborn) {
					history = &r
				} else {
					fresh[r.From] = true
				}
			case <-ticker.C:
				break wait
			}
		}
		histories := 0
		if history != nil {
			histories = 1
		}
		switch settleVerdict(histories, len(fresh), need) {
		case peersHaveHistory:
			n.log.Warn("empty metadata storage, but the cluster has history: this replica's storage was lost; "+
				"rejoining Recovering (no vote until the primary answers, then repair or state transfer)",
				"peer", history.From, "peer_view", history.View, "peer_op", history.Op, "peer_commit", history.CommitMax)
			return true, nil
		case peersFresh:
			n.log.Info("empty metadata storage and a quorum of fresh replicas: joining a new cluster",
				"fresh_peers", len(fresh))
			return false, nil
		}
		if time.Since(lastLog) >= statusWaitLogEvery {
			lastLog = time.Now()
			n.log.Info("empty metadata storage: waiting for peers to tell a new cluster from a lost replica",
				"fresh_peers", len(fresh), "needed", need, "waited", time.Since(started).Round(time.Second))
		}
	}
}

// settleMetadataGroup is the driver's settle step (driver goroutine, before
// the group first runs): nil to keep the fresh group, else the group that
// rejoins Recovering as a replica whose storage was lost.
func (n *Node) settleMetadataGroup(ctx context.Context) (metadataGroup, error) {
	lost, err := n.settleFreshStorage(ctx)
	if err != nil {
		return nil, err
	}
	if !lost {
		n.driver.newborn = true
		return nil, writeMetadataSettle(n.fsys, n.dataDir, metadataSettled)
	}
	return n.rejoinLostStorage()
}

// rejoinLostStorage (driver goroutine, before the group first runs): the
// storage was lost; it records that, then returns the group that rejoins
// Recovering. The metadata simulator calls it once it decided as
// settleFreshStorage does.
func (n *Node) rejoinLostStorage() (metadataGroup, error) {
	// Recorded before the group runs: a restart rejoins the same way.
	if err := writeMetadataSettle(n.fsys, n.dataDir, metadataLost); err != nil {
		return nil, err
	}
	n.driver.rejoined = n.metadataRejoined
	group, err := consensus.Restart(n.groupConfig(n.topo.self), consensus.Restored{
		Superblock: &consensus.VsrState{}, StorageLost: true})
	if err != nil {
		return nil, fmt.Errorf("rejoin after lost storage: %w", err)
	}
	if n.plane != nil {
		n.plane.storageLost = true // read by the openers only after the gate opens (after this)
		n.plane.partitionsLost.Store(true)
	}
	return group, nil
}

// metadataRejoined (driver goroutine) removes metadata.storage_lost once
// the metadata group holds a view's whole log (see driver.rejoined).
func (n *Node) metadataRejoined() {
	if err := writeMetadataSettle(n.fsys, n.dataDir, metadataSettled); err != nil {
		n.log.Warn("metadata rejoined after lost storage, but its marker stays (the next restart waits for a primary again)",
			"err", err)
		return
	}
	n.log.Info("metadata replica rejoined after losing storage: it votes again", "view", n.driver.group.View())
}
