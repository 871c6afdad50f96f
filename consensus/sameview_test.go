package consensus

import (
	"strings"
	"testing"
)

// TestSameViewStartViewMerged: a StartView of the replica's own log_view
// whose head is below prepares of that view it holds is older than them
// (the primary's log only grows within a view); adopting it must keep and
// re-acknowledge them, not truncate them (simulator finding 8). The late
// StartView here carries the current boot's nonce, so the Recovering
// nonce check lets it through and only the same-view merge protects the
// acknowledged ops 2..3.
func TestSameViewStartViewMerged(t *testing.T) {
	ts := &transcript{t: t, file: "TestSameViewStartViewMerged", tags: map[string]uint64{}}
	run := func(script string) {
		t.Helper()
		for _, line := range strings.Split(script, "\n") {
			ts.line++
			if f := strings.Fields(line); len(f) > 0 {
				ts.exec(f)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	run(`replicas 3
propose 0 as=a
deliver
run x60
crash 0
drop 1->2 kind=StartView
run x520
heal all
hold 2
run x60
release 2 only=StartView first
release 2 only=Commit
unhold 2
propose 1 as=b
propose 1 as=c
deliver
expect reply c kind=committed op=3
crash 2
restart 2
expect 2 status=recovering view=1 logview=1 op=3 journal=1..3`)
	r := ts.h.replicas[2]
	stale := 0
	for i, m := range ts.h.stash[2] {
		if m.Kind == MsgStartView {
			if m.View != 1 || m.HeadOp != 1 {
				t.Fatalf("held StartView view %d op %d, want view 1 op 1", m.View, m.HeadOp)
			}
			ts.h.stash[2][i].Incarnation = r.cfg.Incarnation
			stale++
		}
	}
	if stale == 0 {
		t.Fatal("no late StartView held for replica 2")
	}
	run(`reset-sent
release 2 only=StartView
expect 2 status=normal view=1 logview=1 op=3 journal=1..3
expect sent PrepareOk=2`)
	if head := viewHeadersHead(r.viewHeaders); head != 3 {
		t.Fatalf("view headers head %d after the merge, want 3", head)
	}
	for op := uint64(2); op <= 3; op++ {
		if _, unprovable := r.unprovable[op]; unprovable {
			t.Fatalf("op %d marked unprovable: it is a verified entry of view 1", op)
		}
		vh, ok := r.viewHeaderAt(op)
		jh, held := r.journal.header(op)
		if !ok || !held || vh.Checksum != jh.Checksum {
			t.Fatalf("op %d: view header %+v (%v) disagrees with journal %+v (%v)", op, vh, ok, jh, held)
		}
	}
	run(`deliver
run x60
expect 2 commit=3 applied=3
propose 1 as=d
deliver
expect reply d kind=committed op=4`)
}
