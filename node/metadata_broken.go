package node

import (
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
)

// metadataBreakage deliberately breaks the metadata group, so that the
// metadata simulator's tests can show its checkers fail on a broken build
// (issue 13 point 2, node/metasim_broken_test.go). Only those tests set
// it; the zero value is the product, and no configuration, flag or
// environment variable reaches it.
type metadataBreakage struct {
	// quorumOfOne: the metadata group commits on its primary's own ack
	// (consensus.Config.TestingReplicationQuorum = 1).
	quorumOfOne bool
	// backupsSkipUsers: a backup answers a committed CreateUser OK
	// without applying it.
	backupsSkipUsers bool
}

// skips reports whether the breakage skips applying op on n.
func (b metadataBreakage) skips(n *Node, op consensus.Operation) bool {
	return b.backupsSkipUsers && op == consensus.Operation(metadata.KindCreateUser) &&
		n.driver != nil && !n.driver.group.IsPrimary()
}
