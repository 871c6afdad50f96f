package node

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lodestream/lodestream/partitions"
)

// TestFailedOpensAreRetriedWithBackoff: a partition whose open failed on
// a storage error is opened again by the partition-reopen job, one second
// after it was first seen and then backing off (2 s, 4 s, ...); one
// quarantined for damage is never retried; a served one is left alone.
func TestFailedOpensAreRetriedWithBackoff(t *testing.T) {
	p := &partitionPlane{entries: map[partitionKey]*partitionEntry{}, openRetries: map[partitionKey]reopenBackoff{}}
	ioFailed := &partitionEntry{key: partitionKey{1, 1, 0}, quarantine: fmt.Errorf("create offsets directory: %w", errors.New("input/output error"))}
	damaged := &partitionEntry{key: partitionKey{1, 1, 1}, quarantine: fmt.Errorf("segment: %w", partitions.ErrQuarantined)}
	p.entries[ioFailed.key], p.entries[damaged.key] = ioFailed, damaged
	var reopened []partitionKey
	p.reopenInline = func(e *partitionEntry) { reopened = append(reopened, e.key) }

	t0 := time.Unix(1_700_000_000, 0)
	want := map[time.Duration]int{0: 0, 999 * time.Millisecond: 0, time.Second: 1, 2500 * time.Millisecond: 1,
		3 * time.Second: 2, 6 * time.Second: 2, 7 * time.Second: 3}
	for _, at := range []time.Duration{0, 999 * time.Millisecond, time.Second, 2500 * time.Millisecond, 3 * time.Second,
		6 * time.Second, 7 * time.Second} {
		p.retryFailedOpens(t0.Add(at))
		if len(reopened) != want[at] {
			t.Fatalf("at +%s: %d reopens, want %d", at, len(reopened), want[at])
		}
	}
	for _, k := range reopened {
		if k != ioFailed.key {
			t.Fatalf("reopened %v, a partition quarantined for damage", k)
		}
	}
	delete(p.entries, ioFailed.key) // opened again (or removed): its backoff goes
	p.retryFailedOpens(t0.Add(time.Minute))
	if _, ok := p.openRetries[ioFailed.key]; ok {
		t.Fatal("the backoff of a partition no longer quarantined was kept")
	}
}
