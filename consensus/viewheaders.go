package consensus

import "fmt"

// View headers (VsrState.ViewHeaders): the headers of log_view's log as this
// replica adopted it, made durable in the same superblock write as log_view.
//
// Why (simulator finding 6, VSR Revisited §4 / TigerBeetle's view_headers):
// log_view = v claims "my log is view v's log". A backup that adopts a
// StartView whose head is above its journal, persists log_view and then
// crashes before repair, would otherwise come back reporting log_view v with
// its shorter journal head; a merge that takes the highest log_view as
// canonical then cuts ops that committed in an earlier view. With the view
// headers durable, the DVC reports view v's head and headers, with the
// present bit clear where the body is missing (and the nack bit set: it
// never acknowledged them), so the merge keeps every op a quorum member
// holds and fetches its body from that member.

// setViewHeaders replaces the view headers with the suffix of the log just
// adopted (head downwards, Checksum 0 = blank); a new slice makes the
// superblock dirty (superblockDirty), and a handed-out VsrState is never
// mutated.
func (r *Replica) setViewHeaders(head uint64, suffix []PrepareHeader) {
	n := min(len(suffix), ViewHeadersMax)
	if uint64(n) > head {
		n = int(head)
	}
	hs := make([]PrepareHeader, n)
	for i := range n {
		op := head - uint64(i)
		if h := suffix[i]; h.Checksum != 0 && h.Op == op {
			hs[i] = h
		} else {
			hs[i] = PrepareHeader{Op: op}
		}
	}
	r.viewHeaders = hs
}

// viewHeadersHead is the head op of the view headers (0 when none).
func viewHeadersHead(hs []PrepareHeader) uint64 {
	if len(hs) == 0 {
		return 0
	}
	return hs[0].Op
}

// viewHeaderAt returns the view header at op, if the view headers hold a
// non-blank one.
func (r *Replica) viewHeaderAt(op uint64) (PrepareHeader, bool) {
	head := viewHeadersHead(r.viewHeaders)
	if op == 0 || op > head || head-op >= uint64(len(r.viewHeaders)) {
		return PrepareHeader{}, false
	}
	h := r.viewHeaders[head-op]
	return h, h.Checksum != 0
}

// validateViewHeaders checks a restored VsrState.ViewHeaders: bounded, one
// slot per op from the head downwards, never reaching op 0.
func validateViewHeaders(hs []PrepareHeader) error {
	if len(hs) == 0 {
		return nil
	}
	if len(hs) > ViewHeadersMax {
		return fmt.Errorf("%d view headers exceed the bound %d", len(hs), ViewHeadersMax)
	}
	head := hs[0].Op
	if head < uint64(len(hs)) {
		return fmt.Errorf("%d view headers below head op %d reach op 0", len(hs), head)
	}
	for i, h := range hs {
		if h.Op != head-uint64(i) {
			return fmt.Errorf("view header %d names op %d, want op %d", i, h.Op, head-uint64(i))
		}
	}
	return nil
}
