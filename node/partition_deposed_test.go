package node

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// TestMetadataViewChangeNamesTheDeposedPrimary: the node the metadata
// group was last Normal under is deposed once a later view with another
// primary starts, and only then.
func TestMetadataViewChangeNamesTheDeposedPrimary(t *testing.T) {
	p := &partitionPlane{topo: topology{clustered: true, count: 3}}
	p.deposed.Store(-1)
	st := func(view uint32, status consensus.Status) groupStatus { return groupStatus{view: view, status: status} }
	steps := []struct {
		old, cur groupStatus
		want     int32
	}{
		{st(0, consensus.StatusRecovering), st(0, consensus.StatusNormal), -1}, // boot: nothing deposed
		{st(0, consensus.StatusNormal), st(1, consensus.StatusViewChange), 0},  // view 0's primary (0) deposed
		{st(1, consensus.StatusViewChange), st(1, consensus.StatusNormal), 0},
		{st(1, consensus.StatusNormal), st(2, consensus.StatusViewChange), 1},
		{st(2, consensus.StatusViewChange), st(3, consensus.StatusViewChange), 1},
		{st(3, consensus.StatusViewChange), st(4, consensus.StatusNormal), -1}, // view 4's primary is 1 again
		{st(4, consensus.StatusNormal), st(4, consensus.StatusNormal), -1},
	}
	for i, s := range steps {
		p.metadataViewChanged(s.old, s.cur)
		if got := p.deposed.Load(); got != s.want {
			t.Fatalf("step %d (%+v -> %+v): deposed %d, want %d", i, s.old, s.cur, got, s.want)
		}
	}
}
