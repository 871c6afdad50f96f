package node

import "github.com/lodestream/lodestream/consensus"

// groupStatus is a snapshot of a group's view state, published by the loop
// that owns the group after every Ready round so that other goroutines
// (cluster metadata, stats, write routing) read it without touching the
// group.
type groupStatus struct {
	view      uint32
	status    consensus.Status
	primary   bool
	commitMin uint64
	commitMax uint64
}

const statusNormal = consensus.StatusNormal

func snapshotStatus(g consensus.Group) groupStatus {
	return groupStatus{view: g.View(), status: g.Status(), primary: g.IsPrimary(),
		commitMin: g.CommitMin(), commitMax: g.CommitMax()}
}

// isMetadataPrimary reports whether this node leads the metadata group (a
// single node always does).
func (n *Node) isMetadataPrimary() bool {
	if !n.topo.clustered {
		return true
	}
	st := n.driver.status.Load()
	return st != nil && st.primary
}
