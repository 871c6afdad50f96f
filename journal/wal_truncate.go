package journal

import (
	"fmt"
	"math"

	"github.com/lodestream/lodestream/consensus"
)

// TruncateFrom removes every entry with op >= from (a divergent suffix)
// by appending a tombstone record (one write, one fdatasync); nothing is
// read or rewritten. A no-op when no record at or above from is held.
func (w *WAL) TruncateFrom(from uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	return w.truncateAndAppendLocked(from, nil, fmt.Sprintf("truncate from op %d", from))
}

// TruncateAndAppend removes every entry with op >= from and then appends
// entries (a Ready's Truncate and its re-appended Entries) as one durable
// step: a tombstone naming from and the number of entries, followed by
// the entries, in one write and one fdatasync. The scan applies such a
// group only when all of its records are present and valid, and cuts a
// group a crash tore as a torn tail (tombstone included), so a crash
// leaves either the journal before the call or the journal after it,
// never the truncated journal without the re-appended entries, which may
// include ops this replica acknowledged. The cost is the bytes appended,
// whatever the size of the WAL.
//
// from must be non-zero; entries may be empty (a plain truncation) and
// may hold ops below from (they supersede, as with Append).
func (w *WAL) TruncateAndAppend(from uint64, entries []consensus.Prepare) error {
	if from == 0 {
		return fmt.Errorf("WAL truncate-and-append: truncation op 0 would drop the whole journal")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.poisoned {
		return ErrWALPoisoned
	}
	return w.truncateAndAppendLocked(from, entries, fmt.Sprintf("truncate from op %d and append %d entries", from, len(entries)))
}

func (w *WAL) truncateAndAppendLocked(from uint64, entries []consensus.Prepare, what string) error {
	// A tombstone is needed only when some record at or above from is on
	// disk (live or not: records of ops the WAL's view already released
	// still come back at the next open).
	needed := false
	for _, s := range w.segs {
		needed = needed || (s.hasOps && s.maxOp >= from)
	}
	var buf []byte
	records := 0
	if needed {
		if len(entries) > math.MaxUint32 {
			return fmt.Errorf("WAL %s: too many entries for one group", what)
		}
		tomb := walTombstone(from, len(entries))
		buf = appendEntry(buf, &tomb)
		records = 1
	} else if len(entries) == 0 {
		return nil
	}
	buf, locs, err := encodeEntries(buf, entries, what)
	if err != nil {
		return err
	}
	s, base, err := w.writeLocked(buf, records+len(locs), what)
	if err != nil {
		return err
	}
	if needed {
		w.removeRangeLocked(from, math.MaxUint64)
	}
	w.recordLocked(s, base, locs)
	return nil
}
