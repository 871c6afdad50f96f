package node

import (
	"context"
	"sync"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Partitions are opened (or created) off the metadata driver: reconcile
// runs on the metadata loop after every applied change, and creating a
// partition costs several fsyncs (directory, marker, segment files, the
// group's superblock), so a topic of a thousand partitions opened there
// would stall the metadata group for seconds (its heartbeats too: a
// cluster would change views). reconcile only queues the work; a small
// pool of openers does it and publishes each partition once it is open.
// A request for a partition still being opened waits for it (bounded).

const (
	partitionOpenersMax = 8                // concurrent opens: fsyncs overlap in the file system's journal
	partitionOpenWait   = 10 * time.Second // a request or a create reply waits this long for an open
)

// openJob asks for one partition to be opened as metadata describes it.
type openJob struct {
	k partitionKey
	d desiredPartition
}

// openQueue is the openers' work: FIFO, bounded by the partitions metadata
// holds (each partition is queued at most once at a time).
type openQueue struct {
	mu    sync.Mutex
	jobs  []openJob
	ready chan struct{} // signalled when jobs were added
}

func newOpenQueue() *openQueue { return &openQueue{ready: make(chan struct{}, 1)} }

func (q *openQueue) push(j openJob) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// tryPop takes the next job without waiting (the metadata simulator runs
// the openers inline).
func (q *openQueue) tryPop() (openJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) == 0 {
		return openJob{}, false
	}
	j := q.jobs[0]
	q.jobs[0] = openJob{}
	q.jobs = q.jobs[1:]
	return j, true
}

func (q *openQueue) pop(ctx context.Context) (openJob, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs[0] = openJob{}
			q.jobs = q.jobs[1:]
			more := len(q.jobs) > 0
			q.mu.Unlock()
			if more {
				select {
				case q.ready <- struct{}{}: // wake another opener
				default:
				}
			}
			return j, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return openJob{}, false
		case <-q.ready:
		}
	}
}

// scheduleOpen (reconcile, under reconcileMu) queues an open unless one is
// queued or running for the key.
func (p *partitionPlane) scheduleOpen(k partitionKey, d desiredPartition) {
	p.mu.Lock()
	if _, busy := p.opening[k]; busy {
		p.mu.Unlock()
		return
	}
	p.opening[k] = make(chan struct{})
	p.mu.Unlock()
	p.opens.push(openJob{k: k, d: d})
}

// runOpeners opens queued partitions until ctx ends.
func (p *partitionPlane) runOpeners(ctx context.Context, wg *sync.WaitGroup) {
	for range partitionOpenersMax {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := p.opens.pop(ctx)
				if !ok {
					return
				}
				p.afterOpen(p.open(j.k, j.d))
			}
		}()
	}
}

// afterOpen brings a just-opened partition up to date with metadata, which
// may have moved on while it opened: watermarks applied, or the partition
// removed (and its new incarnation queued) when metadata no longer wants it.
func (p *partitionPlane) afterOpen(e *partitionEntry) {
	p.reconcileMu.Lock()
	defer p.reconcileMu.Unlock()
	d, ok := p.desiredOf(e.key)
	if !ok || d.part.CreatedRevision != e.revision {
		p.remove(e)
		if ok {
			p.scheduleOpen(e.key, d)
		}
		return
	}
	p.syncWatermarks(e, d.part)
}

// desiredOf is what the metadata state says of partition k now.
func (p *partitionPlane) desiredOf(k partitionKey) (desiredPartition, bool) {
	if p.state == nil {
		return desiredPartition{}, false
	}
	t, code := p.state.GetTopic(metadata.ByID(k.stream), metadata.ByID(k.topic))
	if code != metadata.CodeOK || int(k.partition) >= len(t.Partitions) {
		return desiredPartition{}, false
	}
	return p.desiredPartitionOf(t, t.Partitions[k.partition]), true
}

// awaitEntry returns the served partition k, waiting (bounded) while it is
// being opened; opening reports that it is still being opened.
func (p *partitionPlane) awaitEntry(ctx context.Context, k partitionKey) (e *partitionEntry, opening bool) {
	if p.gated && !p.gateOpen.Load() {
		return nil, true // still catching up after boot: retry
	}
	p.mu.RLock()
	e, ch := p.entries[k], p.opening[k]
	p.mu.RUnlock()
	if e != nil || ch == nil {
		return e, false
	}
	t := time.NewTimer(partitionOpenWait)
	defer t.Stop()
	select {
	case <-ch:
		return p.entry(k), false
	case <-ctx.Done():
	case <-t.C:
	}
	return nil, true
}

// awaitOpen (a connection goroutine, after a committed CreateTopic or
// CreatePartitions) waits, bounded, until this node serves the topic's
// partitions, so the client that created them can use them at once.
func (n *Node) awaitOpen(ctx context.Context, cmd metadata.Command) {
	var stream, topic metadata.Ident
	switch c := cmd.(type) {
	case metadata.CreateTopic:
		stream, topic = c.Stream, metadata.ByName(c.Name)
	case metadata.CreatePartitions:
		stream, topic = c.Stream, c.Topic
	default:
		return
	}
	t, code := n.state.GetTopic(stream, topic)
	if code != metadata.CodeOK {
		return
	}
	deadline, cancel := context.WithTimeout(ctx, partitionOpenWait)
	defer cancel()
	for _, part := range t.Partitions {
		if _, opening := n.plane.awaitEntry(deadline, partitionKey{t.StreamID, t.ID, part.ID}); opening {
			n.log.Warn("topic created but its partitions are still being opened on this node", "stream", t.StreamID,
				"topic", t.ID, "partitions", len(t.Partitions))
			return
		}
	}
}

// notServedCode answers a request for a partition metadata knows but this
// node does not serve: 58 (retry) while it is still being opened, else
// missing.
func notServedCode(opening bool, missing wire.ErrorCode) wire.ErrorCode {
	if opening {
		return wire.ErrTransientNotAccepted
	}
	return missing
}

// reopenDamaged (cluster mode): a read found damage in this replica's log.
// The partition is closed and opened again, as at boot: the open sets the
// damage aside (openLog) and the group rejoins with nothing applied,
// refilling the rest by state transfer from a peer, without a restart of
// the node.
func (p *partitionPlane) reopenDamaged(e *partitionEntry) {
	if !p.clustered() {
		return // no peer to refill from: the damaged range stays refused
	}
	// The open must set the damage aside, not serve around it again (a
	// sealed segment's damage is served around to be repaired in place,
	// which is what could not be done).
	p.setAsideOnOpen.Store(e.key, true)
	if p.reopenInline != nil {
		p.reopenInline(e)
		return
	}
	p.reopen(e, "partition damage found on a read: reopening it to set the damage aside and refill it from the other replicas")
}

// reopen closes a partition and opens it again, as a restart would, in
// the background. Writes waiting on the group are answered 57 (their
// outcome is the group's), requests meanwhile wait for the open
// (awaitEntry).
func (p *partitionPlane) reopen(e *partitionEntry, why string) {
	if !e.reopening.CompareAndSwap(false, true) {
		return
	}
	go func() {
		p.reconcileMu.Lock()
		defer p.reconcileMu.Unlock()
		d, ok := p.desiredOf(e.key)
		p.mu.Lock()
		_, busy := p.opening[e.key]
		current := p.entries[e.key] == e
		if !current || busy || !ok || d.part.CreatedRevision != e.revision {
			p.mu.Unlock()
			return // removed, re-created or being opened: metadata moves it anyway
		}
		p.opening[e.key] = make(chan struct{})
		delete(p.entries, e.key)
		p.mu.Unlock()
		p.log.Warn(why, "dir", e.dir)
		e.shard.do(func() { e.shard.closeGroup(e) })
		p.opens.push(openJob{k: e.key, d: d})
	}()
}

// closeGroup (loop) drops a group about to be opened again and closes its
// files.
func (s *partitionShard) closeGroup(e *partitionEntry) {
	s.dropGroup(e, wire.ErrTransientNotCommitted)
	_ = e.closeWAL()
	if e.log != nil {
		_ = e.log.Close()
	}
}
