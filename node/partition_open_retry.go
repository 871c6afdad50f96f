package node

import (
	"errors"
	"slices"
	"time"

	"github.com/lodestream/lodestream/partitions"
)

// A partition whose open failed on a storage error (a failed fsync while
// its directory was created, a full disk, an I/O error opening its WAL)
// is quarantined like a damaged one: its requests are refused. Nothing is
// wrong with its data, though, and the disk may work again a moment later;
// without a retry the replica would stay out of the partition's group
// until the node restarts, one fault closer to losing the quorum, and
// nothing would say so but the log line of the failure. The
// partition-reopen job opens such partitions again, backing off from
// reopenRetryMin to reopenRetryMax per partition. Damage found in a log
// (partitions.ErrQuarantined) is not retried: it needs the repair path.
// Found by the metadata simulator's partition planes (seed 102).

const (
	reopenRetryMin = time.Second
	reopenRetryMax = time.Minute
)

// reopenBackoff is the retry state of one partition's failed opens.
type reopenBackoff struct {
	next  time.Time
	delay time.Duration
}

// retryFailedOpens (the partition-reopen job) opens again, in key order,
// the partitions whose open failed on a storage error and whose backoff
// ran out.
func (p *partitionPlane) retryFailedOpens(now time.Time) {
	p.mu.Lock()
	var due []*partitionEntry
	for k, e := range p.entries {
		if e.log != nil || e.quarantine == nil || errors.Is(e.quarantine, partitions.ErrQuarantined) {
			delete(p.openRetries, k)
			continue
		}
		b, seen := p.openRetries[k]
		if !seen {
			b = reopenBackoff{next: now.Add(reopenRetryMin), delay: reopenRetryMin}
		}
		if now.Before(b.next) {
			p.openRetries[k] = b
			continue
		}
		b.delay = min(2*b.delay, reopenRetryMax)
		b.next = now.Add(b.delay)
		p.openRetries[k] = b
		due = append(due, e)
	}
	for k := range p.openRetries {
		if _, ok := p.entries[k]; !ok {
			delete(p.openRetries, k)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(due, func(a, b *partitionEntry) int { return a.key.compare(b.key) })
	for _, e := range due {
		if p.reopenInline != nil {
			p.reopenInline(e)
			continue
		}
		p.reopen(e, "partition open failed on a storage error: opening it again")
	}
}

// compare orders partition keys by stream, topic, partition.
func (k partitionKey) compare(o partitionKey) int {
	switch {
	case k.stream != o.stream:
		return cmpUint32(k.stream, o.stream)
	case k.topic != o.topic:
		return cmpUint32(k.topic, o.topic)
	default:
		return cmpUint32(k.partition, o.partition)
	}
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
