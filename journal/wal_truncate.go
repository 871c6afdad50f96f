package journal

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// TruncateAndAppend removes every entry with op >= from and then appends
// entries (a Ready's Truncate and its re-appended Entries), as one durable
// step: the kept entries and the new ones are written to journal.wal.tmp,
// fsynced and renamed over the WAL (rewriteLocked). A crash at any point
// leaves either the journal before the call or the journal after it, never
// the truncated journal without the re-appended entries, which may include
// ops this replica acknowledged. Truncation happens only on a view change,
// so the rewrite's cost (the whole WAL, bounded by checkpoints) is rare.
//
// from must be non-zero; entries may be empty (a plain truncation, also
// done by rewrite so that it is atomic too) and may hold ops below from
// (they supersede, as with Append).
func (w *WAL) TruncateAndAppend(from uint64, entries []consensus.Prepare) error {
	if from == 0 {
		return fmt.Errorf("WAL truncate-and-append: truncation op 0 would drop the whole journal")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	what := fmt.Sprintf("truncate from op %d and append %d entries", from, len(entries))
	return w.rewriteLocked(func(op uint64) bool { return op < from }, entries, what)
}
