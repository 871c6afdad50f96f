package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

func snapshotChecksum(data []byte) uint64 { return xxh3.Hash(data) }

// Driver bounds.
const (
	tickInterval         = 10 * time.Millisecond
	proposalQueueMax     = 1024 // proposals waiting for the event loop
	proposalBatchMax     = 64   // proposals taken per loop turn (one fsync covers them)
	readyRoundsMax       = 64   // Ready batches drained per loop turn
	checkpointEveryOps   = 512  // applied ops between metadata checkpoints
	proposalWaitDuration = 10 * time.Second
)

// errDriverStopped answers proposals made after (or pending at) shutdown.
var errDriverStopped = errors.New("metadata group driver stopped")

// durableLog is what the driver persists for its group.
type durableLog interface {
	Append(entries ...consensus.Prepare) error // one fsync per call
	// TruncateAndAppend removes ops >= from and appends entries as ONE
	// durable step: a crash must never leave the journal truncated without
	// the re-appended entries (consensus Ready.Truncate contract).
	TruncateAndAppend(from uint64, entries []consensus.Prepare) error
	WriteSuperblock(st consensus.VsrState) error
	WriteSnapshot(s consensus.Snapshot) error
	// Compact releases entries below checkpointOp, which the superblock now
	// names; the entry AT checkpointOp stays (the restart's chain anchor).
	Compact(checkpointOp uint64) error
}

// applier applies committed ops (in op order, exactly once) and returns the
// reply body to send and to remember for dedup replay. local is the proposal
// made on this node for the op, if any.
type applier interface {
	applyCommitted(p consensus.Prepare, local *proposal) []byte
	// checkpointData is the application snapshot after the last applied op,
	// including the client table's encoding (nil if the group keeps none).
	checkpointData(clientTable []byte) []byte
}

// replyRecorder is implemented by groups that keep a client table whose
// reply ring the driver feeds (the metadata plane).
type replyRecorder interface {
	RecordReply(client consensus.Uint128, request uint64, body []byte)
	ClientTableSnapshot() []byte
}

// wallClock is implemented by groups that stamp prepares with the driver's
// wall clock (µs).
type wallClock interface {
	SetNow(micros uint64)
}

// bodiesMax bounds reply bodies kept for local proposals whose reply has
// not been delivered yet.
const bodiesMax = 4 * proposalQueueMax

// proposal is one request waiting for its outcome.
type proposal struct {
	req   consensus.Request
	extra any // node-local reply data that is never replicated (a raw PAT)
	done  chan outcome
}

type outcome struct {
	kind consensus.ReplyKind
	op   uint64
	body []byte
	err  error
}

type proposalKey struct {
	client  consensus.Uint128
	request uint64
	op      consensus.Operation
}

// driver is the metadata group's event loop: one goroutine owns the group,
// ticks it, feeds it proposals, and carries out every Ready (persist, then
// apply, then answer).
type driver struct {
	log       *slog.Logger
	group     consensus.Group
	store     durableLog
	app       applier
	proposals chan *proposal
	stopped   chan struct{} // closed when run returns

	nextTag        uint64
	waiting        map[uint64]*proposal
	byKey          map[proposalKey]*proposal
	bodies         map[uint64][]byte // op -> reply body, for local proposals
	lastCheckpoint uint64
	// rejectedCheckpoint is the op of the last snapshot consensus refused;
	// not retried until another op is applied.
	rejectedCheckpoint uint64
	lastCompacted      uint64
	appliedOp          uint64
}

func newDriver(log *slog.Logger, g consensus.Group, store durableLog, app applier, appliedOp uint64) *driver {
	return &driver{
		log:            log,
		group:          g,
		store:          store,
		app:            app,
		proposals:      make(chan *proposal, proposalQueueMax),
		stopped:        make(chan struct{}),
		waiting:        make(map[uint64]*proposal),
		byKey:          make(map[proposalKey]*proposal),
		bodies:         make(map[uint64][]byte),
		lastCheckpoint: appliedOp,
		appliedOp:      appliedOp,
	}
}

// propose submits a request and waits for its outcome. A full queue answers
// NotAccepted at once (the request never entered the pipeline).
func (d *driver) propose(ctx context.Context, req consensus.Request, extra any) outcome {
	p := &proposal{req: req, extra: extra, done: make(chan outcome, 1)}
	select {
	case <-d.stopped:
		return outcome{kind: consensus.ReplyNotAccepted, err: errDriverStopped}
	default:
	}
	select {
	case d.proposals <- p:
	default:
		return outcome{kind: consensus.ReplyNotAccepted}
	}
	timer := time.NewTimer(proposalWaitDuration)
	defer timer.Stop()
	select {
	case out := <-p.done:
		return out
	case <-d.stopped:
		select {
		case out := <-p.done:
			return out
		default:
			return outcome{kind: consensus.ReplyNotAccepted, err: errDriverStopped}
		}
	case <-ctx.Done():
		return outcome{kind: consensus.ReplyNotCommitted, err: ctx.Err()}
	case <-timer.C:
		return outcome{kind: consensus.ReplyNotCommitted, err: fmt.Errorf("no outcome within %s", proposalWaitDuration)}
	}
}

// run drives the group until ctx is cancelled; it returns a non-nil error
// only when storage failed (the node must stop: it cannot make progress
// safely).
func (d *driver) run(ctx context.Context) error {
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	defer close(d.stopped)
	defer d.failPending()
	for {
		select {
		case <-ctx.Done():
			// Finish what is already admitted so acknowledged work is durable.
			return d.processReady()
		case <-ticker.C:
			d.setNow()
			d.group.Tick()
		case p := <-d.proposals:
			d.admit(p)
		batch:
			for i := 1; i < proposalBatchMax; i++ {
				select {
				case p := <-d.proposals:
					d.admit(p)
				default:
					break batch
				}
			}
		}
		if err := d.processReady(); err != nil {
			return err
		}
	}
}

func (d *driver) setNow() {
	if c, ok := d.group.(wallClock); ok {
		c.SetNow(uint64(time.Now().UnixMicro()))
	}
}

func (d *driver) admit(p *proposal) {
	d.setNow()
	d.nextTag++
	p.req.Tag = d.nextTag
	d.waiting[p.req.Tag] = p
	d.byKey[proposalKey{p.req.Client, p.req.Request, p.req.Operation}] = p
	d.group.Propose(p.req)
}

func (d *driver) processReady() error {
	for round := 0; round < readyRoundsMax && d.group.HasReady(); round++ {
		rd := d.group.Ready()
		if err := d.persist(rd); err != nil {
			return err
		}
		if len(rd.Messages) > 0 {
			// Replica transport arrives with clustering; a one-replica group sends nothing.
			d.log.Debug("dropping replica messages: no replica transport in this build", "count", len(rd.Messages))
		}
		for _, p := range rd.Committed {
			local := d.byKey[proposalKey{p.Header.Client, p.Header.Request, p.Header.Operation}]
			body := d.app.applyCommitted(p, local)
			if local != nil {
				d.bodies[p.Header.Op] = body
			}
			if rec, ok := d.group.(replyRecorder); ok {
				rec.RecordReply(p.Header.Client, p.Header.Request, body)
			}
			d.appliedOp = p.Header.Op
		}
		for _, r := range rd.Replies {
			p, ok := d.waiting[r.Tag]
			if !ok {
				continue
			}
			delete(d.waiting, r.Tag)
			delete(d.byKey, proposalKey{p.req.Client, p.req.Request, p.req.Operation})
			out := outcome{kind: r.Kind, op: r.Op}
			if r.Kind == consensus.ReplyCommitted {
				out.body = d.bodies[r.Op]
				delete(d.bodies, r.Op)
				if r.Cached != nil {
					out.body = r.Cached
				}
			}
			p.done <- out
		}
		if len(d.bodies) > bodiesMax {
			// Replies that never came (a proposal answered otherwise): drop.
			clear(d.bodies)
		}
		d.group.Advance(rd)
		if err := d.maybeCheckpoint(); err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) persist(rd consensus.Ready) error {
	if rd.Truncate != 0 {
		if err := d.store.TruncateAndAppend(rd.Truncate, rd.Entries); err != nil {
			return fmt.Errorf("truncate metadata journal from op %d and re-append %d entries: %w", rd.Truncate, len(rd.Entries), err)
		}
	} else if len(rd.Entries) > 0 {
		if err := d.store.Append(rd.Entries...); err != nil {
			return fmt.Errorf("append %d metadata journal entries: %w", len(rd.Entries), err)
		}
	}
	if rd.Superblock != nil {
		if err := d.store.WriteSuperblock(*rd.Superblock); err != nil {
			return fmt.Errorf("write metadata superblock: %w", err)
		}
		// The superblock now names the checkpoint: entries below it can go.
		if cp := rd.Superblock.CheckpointOp; cp > d.lastCompacted {
			if err := d.store.Compact(cp); err != nil {
				return fmt.Errorf("compact metadata journal up to op %d: %w", cp, err)
			}
			d.lastCompacted = cp
		}
	}
	if rd.Snapshot != nil {
		return fmt.Errorf("state transfer snapshot at op %d: not supported by a one-replica node", rd.Snapshot.Op)
	}
	return nil
}

// checkpointPressure is implemented by groups that report when their
// journal ring needs a checkpoint to accept more prepares.
type checkpointPressure interface {
	NeedsCheckpoint() bool
}

// maybeCheckpoint writes a snapshot when the group's journal asks for one
// or every checkpointEveryOps applied ops, whichever comes first: snapshot
// file first, then (via the group's next Ready) the superblock that names
// it, then journal compaction.
func (d *driver) maybeCheckpoint() error {
	pressure := false
	if g, ok := d.group.(checkpointPressure); ok {
		pressure = g.NeedsCheckpoint()
	}
	if !pressure && d.appliedOp < d.lastCheckpoint+checkpointEveryOps {
		return nil
	}
	return d.checkpoint()
}

// checkpointErrorReporter is implemented by groups that validate the
// snapshot handed to Checkpoint and say why they rejected it.
type checkpointErrorReporter interface {
	CheckpointError() error
}

// checkpoint hands consensus a snapshot of the applied state and, once
// consensus accepted it, makes it durable in snapshot.bin (before the next
// Ready, whose superblock names it, is persisted). Consensus validates
// first so a rejected snapshot (one not matching what was applied and
// advanced) never reaches the disk, where a restart would load it. A
// rejection is a driver bug: it is logged, the previous checkpoint stays
// in force, and the next applied op tries again.
func (d *driver) checkpoint() error {
	if d.appliedOp == d.lastCheckpoint || d.appliedOp == d.rejectedCheckpoint {
		return nil
	}
	var table []byte
	if rec, ok := d.group.(replyRecorder); ok {
		table = rec.ClientTableSnapshot()
	}
	s := consensus.Snapshot{Op: d.appliedOp, Data: d.app.checkpointData(table)}
	s.Checksum = snapshotChecksum(s.Data)
	d.group.Checkpoint(s)
	if ce, ok := d.group.(checkpointErrorReporter); ok {
		if err := ce.CheckpointError(); err != nil {
			d.rejectedCheckpoint = s.Op
			d.log.Error("metadata checkpoint rejected by consensus; snapshot not written, previous checkpoint kept",
				"op", s.Op, "commit_min", d.group.CommitMin(), "checkpoint_op", d.lastCheckpoint, "err", err)
			return nil
		}
	}
	if err := d.store.WriteSnapshot(s); err != nil {
		return fmt.Errorf("write metadata snapshot at op %d: %w", s.Op, err)
	}
	d.lastCheckpoint = s.Op
	d.log.Info("metadata checkpoint written", "op", s.Op, "bytes", len(s.Data))
	return nil
}

func (d *driver) failPending() {
	for tag, p := range d.waiting {
		p.done <- outcome{kind: consensus.ReplyNotCommitted, err: errDriverStopped}
		delete(d.waiting, tag)
	}
	for {
		select {
		case p := <-d.proposals:
			p.done <- outcome{kind: consensus.ReplyNotAccepted, err: errDriverStopped}
		default:
			return
		}
	}
}
