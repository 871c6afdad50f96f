package node

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/lodestream/lodestream/partitions"
)

// The scrubber (issue 15 point 6) re-verifies stored batches in the
// background so damage is found before a consumer reaches it. It is a
// scheduled job, not a loop: every scrubInterval it verifies at most
// [partition] scrub_bytes_per_second × the interval bytes, in steps of at
// most scrubStepBytes (each step holds one log's read lock), walking the
// partitions in key order and each log from its first segment. Damage is
// logged (file, byte, offset) by the log itself and never served: polls
// and state-transfer reads verify too. A cluster replica repairs the
// batch with a peer's copy at once, as for damage a poll finds
// (repairDamaged, partition_repair.go; a reopen that refills it from the
// peers when no copy fits). A single node keeps refusing the damaged range.
const (
	scrubInterval       = time.Second
	scrubStepBytes      = 1 << 20
	scrubPartitionsTurn = 256 // partitions visited per turn at most (empty ones cost a step each)
)

// scrubState is the scrub job's position (owned by the job's goroutine).
type scrubState struct {
	round  []partitionKey // the keys of this round, sorted
	next   int            // index in round of the partition being scrubbed
	cursor partitions.ScrubCursor
	// found counts the damaged places found (each reported once).
	found int
}

// scrubTurn verifies up to budget bytes, continuing where the last turn
// stopped.
func (p *partitionPlane) scrubTurn(s *scrubState, budget uint64) {
	if budget == 0 {
		return
	}
	if s.next >= len(s.round) {
		// A new round starts at a turn's beginning only: a small data set is
		// verified once per turn, not over and over within one.
		s.round, s.next, s.cursor = p.scrubRound(s.round[:0]), 0, partitions.ScrubCursor{}
	}
	for visited := 0; budget > 0 && visited < scrubPartitionsTurn && s.next < len(s.round); {
		e := p.entry(s.round[s.next])
		if e == nil || e.log == nil {
			s.next, s.cursor, visited = s.next+1, partitions.ScrubCursor{}, visited+1
			continue
		}
		res, err := e.log.Scrub(s.cursor, min(budget, scrubStepBytes))
		budget -= min(budget, res.BytesVerified)
		if res.Damage != nil {
			if res.NewDamage {
				s.found++
				p.log.Error("scrubber found a corrupt batch: it is refused to readers", "stream", e.key.stream,
					"topic", e.key.topic, "partition", e.key.partition, "file", res.Damage.File,
					"position", res.Damage.Position, "offset", res.Damage.Offset, "reason", res.Damage.Reason,
					"repair", p.scrubRemedy())
			}
			p.repairDamaged(e, res.Damage) // again each round until a peer's copy repairs it
		}
		if err != nil || res.Wrapped {
			if err != nil && !errors.Is(err, partitions.ErrClosed) {
				p.log.Warn("scrub step failed", "dir", e.dir, "err", err)
			}
			s.next, s.cursor, visited = s.next+1, partitions.ScrubCursor{}, visited+1
			continue
		}
		s.cursor = res.Next
	}
}

// scrubRound lists the served partitions in key order.
func (p *partitionPlane) scrubRound(keys []partitionKey) []partitionKey {
	p.mu.RLock()
	for k := range p.entries {
		keys = append(keys, k)
	}
	p.mu.RUnlock()
	slices.SortFunc(keys, func(a, b partitionKey) int {
		return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return keys
}

func (p *partitionPlane) scrubRemedy() string {
	if p.clustered() {
		return "repaired with a peer's copy of the batch (or, when none fits, the partition is reopened and refilled from the other replicas)"
	}
	return "the damaged range stays refused; `iggy-server check` reports it"
}
