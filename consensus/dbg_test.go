package consensus

import ("fmt"; "testing")

func TestDbgChaos(t *testing.T) {
	t.Run("x", func(t *testing.T) { dbgHook = func(s string) { t.Log(s) }; chaosDebug = true; runChaos(t, 5, 8) })
}

func (r *Replica) dbgRepair(m Message) string {
	h := m.Prepare.Header
	prev, ok := r.journal.header(h.Op - 1)
	return fmt.Sprintf("r%d repair op %d from %d view %d/%d nonce ok %v parent %x prev(%v) %x cmin %d", r.id, h.Op, m.From, m.View, r.view, m.Nonce == r.repair.nonce, h.Parent, ok, prev.Checksum, r.commitMin)
}
