package client

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// route is the open batch of one destination: the single route of balanced or partition-id
// partitioning, or one per key.
type route struct {
	partitioning wire.Partitioning
	msgs         []wire.BatchMessageInput
	bytes        int
	since        time.Time // when the first message entered the batch
}

// producerLoop is the state of the sending goroutine; nothing else touches it.
type producerLoop struct {
	p       *Producer
	routes  map[string]*route
	pending int // messages in open batches, bounded by BufferMessages
	failed  []error
	lost    int // failed batches beyond producerErrorsKept
}

func (p *Producer) run() {
	l := &producerLoop{p: p, routes: make(map[string]*route)}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case it := <-p.in:
			l.handle(it)
		case <-timer.C:
			l.flushDue(time.Now())
		case <-p.stop:
			for drained := false; !drained; {
				select {
				case it := <-p.in:
					l.handle(it)
				default:
					drained = true
				}
			}
			l.flushAll()
			p.final <- l.report()
			return
		}
		if p.cfg.Linger == 0 && len(p.in) == 0 {
			l.flushAll() // no linger: send as soon as no more input is waiting
		}
		timer.Stop()
		if due, ok := l.nextDue(); ok {
			timer.Reset(max(time.Until(due), 0))
		}
	}
}

func (l *producerLoop) handle(it producerItem) {
	if it.msg == nil {
		l.flushAll()
		it.ack <- l.report()
		return
	}
	cfg := &l.p.cfg
	if l.pending >= cfg.BufferMessages {
		l.flushAll()
	}
	key := ""
	if cfg.Partitioning.kind == wire.PartitioningMessagesKey {
		key = string(it.msg.Key)
	}
	r := l.routes[key]
	if r == nil {
		r = &route{partitioning: wire.Partitioning{Kind: cfg.Partitioning.kind, PartitionID: cfg.Partitioning.partition}}
		if key != "" {
			r.partitioning.Key = []byte(key)
		}
		l.routes[key] = r
	}
	size := len(it.msg.Payload) + len(it.msg.UserHeaders)
	if len(r.msgs) > 0 && r.bytes+size > cfg.BatchBytes {
		l.flush(key, r)
	}
	if len(r.msgs) == 0 {
		r.since = time.Now()
	}
	r.msgs = append(r.msgs, toBatchInput(it.msg))
	r.bytes += size
	l.pending++
	if len(r.msgs) >= cfg.BatchMessages || r.bytes >= cfg.BatchBytes {
		l.flush(key, r)
	}
}

// toBatchInput stamps the origin time and, for a zero ID, a random one.
func toBatchInput(m *Message) wire.BatchMessageInput {
	in := wire.BatchMessageInput{ID: m.ID, OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: m.Payload, UserHeaders: m.UserHeaders}
	if in.ID == ([16]byte{}) {
		_, _ = rand.Read(in.ID[:]) // crypto/rand never fails on supported platforms
	}
	return in
}

func (l *producerLoop) nextDue() (time.Time, bool) {
	var due time.Time
	for _, r := range l.routes {
		if len(r.msgs) > 0 && (due.IsZero() || r.since.Before(due)) {
			due = r.since
		}
	}
	return due.Add(l.p.cfg.Linger), !due.IsZero()
}

func (l *producerLoop) flushDue(now time.Time) {
	for key, r := range l.routes {
		if len(r.msgs) > 0 && !now.Before(r.since.Add(l.p.cfg.Linger)) {
			l.flush(key, r)
		}
	}
}

func (l *producerLoop) flushAll() {
	for key, r := range l.routes {
		l.flush(key, r)
	}
}

// flush sends one route's batch. The Client bounds the call by its response budget.
func (l *producerLoop) flush(key string, r *route) {
	if len(r.msgs) == 0 {
		return
	}
	cfg := &l.p.cfg
	_, err := l.p.c.SendMessages(context.Background(), cfg.Stream, cfg.Topic, r.partitioning, r.msgs)
	if err != nil {
		pe := &ProduceError{Partitioning: r.partitioning, Messages: r.msgs, Err: err}
		if cfg.OnError != nil {
			cfg.OnError(pe)
		}
		if len(l.failed) < producerErrorsKept {
			l.failed = append(l.failed, pe)
		} else {
			l.lost++
		}
	}
	l.pending -= len(r.msgs)
	if key != "" {
		delete(l.routes, key) // keys come and go: keep the map as small as the open batches
	} else {
		r.msgs, r.bytes = nil, 0
	}
}

// report returns and clears the failures since the last report.
func (l *producerLoop) report() error {
	if len(l.failed) == 0 {
		return nil
	}
	err := &FlushError{Failed: l.failed, More: l.lost}
	l.failed, l.lost = nil, 0
	return err
}

// FlushError lists the batches that failed since the previous Flush: the first few as
// *ProduceError, and how many more failed beyond them.
type FlushError struct {
	Failed []error
	More   int
}

func (e *FlushError) Error() string {
	n := len(e.Failed) + e.More
	return fmt.Sprintf("producer: %d batch(es) failed; first: %v", n, e.Failed[0])
}

// Unwrap exposes the kept failures to errors.Is and errors.As.
func (e *FlushError) Unwrap() []error { return e.Failed }
