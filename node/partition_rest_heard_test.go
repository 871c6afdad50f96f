package node

import "testing"

// TestABackupHearsItsPrimaryOnlyInItsOwnView: a backup in view 0 gets a
// heartbeat of view 3 from replica 0, the primary of both views among
// three. It has not heard its primary in its view: it must keep probing
// (and so move to view 3), not rest in view 0 (metadata simulator seed
// 74876).
func TestABackupHearsItsPrimaryOnlyInItsOwnView(t *testing.T) {
	s, e, g := reserveTestShard(t)
	g.view = 0
	s.heard(e, 0, 3)
	if e.heardView != 0 {
		t.Fatalf("a message of view 3 counted as heard in view 0 (heardView %d)", e.heardView)
	}
	s.heard(e, 1, 0)
	if e.heardView != 0 {
		t.Fatalf("a message from a backup counted as the primary's (heardView %d)", e.heardView)
	}
	s.heard(e, 0, 0)
	if e.heardView != 1 {
		t.Fatalf("the primary's message of view 0 not counted (heardView %d)", e.heardView)
	}
}
