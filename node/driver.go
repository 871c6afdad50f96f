package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
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
	inboxMax             = 4096 // replica messages waiting for the event loop
	inboxBatchMax        = 256  // replica messages stepped per loop turn
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

// peerSender carries consensus messages to the other replicas (the replica
// bus). Send never blocks: a full peer queue drops the message and VSR's
// retransmits cover the loss.
type peerSender interface {
	Send(to uint8, m *consensus.Message)
	// SendShared sends m to every replica of to, encoded once.
	SendShared(to []uint8, m *consensus.Message)
}

// applier applies committed ops (in op order, exactly once) and returns the
// reply body to send and to remember for dedup replay. local is the proposal
// made on this node for the op, if any.
type applier interface {
	applyCommitted(p consensus.Prepare, local *proposal) []byte
	// installSnapshot replaces the applied state with a state transfer's
	// snapshot (after it is durable), including the client table it
	// carries, which it hands to the group.
	installSnapshot(s consensus.Snapshot, g metadataGroup) error
	// checkpointData is the application snapshot after the last applied op,
	// including the client table's encoding (nil if the group keeps none).
	checkpointData(clientTable []byte) []byte
}

// drivenGroup is the one contract every event loop drives: the consensus
// Group plus the wall clock for prepare timestamps, the journal-pressure
// hook and the checkpoint verdict. *consensus.Replica implements it.
type drivenGroup interface {
	consensus.Group
	SetNow(micros uint64)
	NeedsCheckpoint() bool
	CheckpointError() error
}

// metadataGroup adds the client table the metadata plane keeps (sessions,
// dedup, the reply ring that travels with snapshots).
type metadataGroup interface {
	drivenGroup
	RecordReply(client consensus.Uint128, request uint64, body []byte)
	ClientTableSnapshot() []byte
	RestoreClientTable(data []byte) error
}

var _ metadataGroup = (*consensus.Replica)(nil)

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
	// caughtUp, when set, runs once on the driver goroutine the first time
	// the group is Normal with everything it knows committed applied.
	caughtUp func()
	// heardPrimaryView is the latest view in which this replica, a
	// backup, heard from that view's primary (a Prepare, Commit or
	// StartView it stepped while in that view). A fresh replica is Normal
	// with nothing to commit at once; it is caught up only once the view's
	// primary told it what there is.
	heardPrimaryView uint32
	heardPrimary     bool
	// settle, when set, runs first in run, before the group steps or
	// publishes its status: a clustered node on empty storage finds out
	// whether its storage was lost (storage_lost.go) and may replace the
	// group.
	settle func(ctx context.Context) (metadataGroup, error)
	// rejoined, when set, is called once after a Ready round that leaves a
	// group restarted with StorageLost rejoined (maybeRejoined).
	rejoined func()
	// view, head op and commit_max as of the last Ready round, for peers
	// asking where this replica stands (FetchStatus), and whether it is
	// newborn then (see newborn).
	posView      atomic.Uint32
	posOp        atomic.Uint64
	posCommitMax atomic.Uint64
	posNewborn   atomic.Bool
	// newborn: the settle found a new cluster and this group joined it
	// fresh in this process. Its status replies say so while it is the
	// primary of view 0 with nothing committed and no view change done
	// (storage_lost.go, peerHasHistory). Never set after a restart: a
	// restarted primary's commit_max may lag what it acknowledged.
	newborn bool
	// viewChanged, when set, runs on the driver goroutine after the group's
	// view or status changed (wakes resting partition groups).
	viewChanged func(old, cur groupStatus)
	// primaryGone, when set (clustered), lets a backup suspect a primary
	// whose bus connection dropped (primary_watch.go).
	primaryGone *primaryWatch
	// peerReturn, when set (clustered), wakes resting partition groups
	// when a replica connection comes back (peer_return.go).
	peerReturn *peerReturn
	log        *slog.Logger
	group      metadataGroup
	store      durableLog
	app        applier
	proposals  chan *proposal
	stopped    chan struct{} // closed when run returns
	// inbox holds messages from other replicas; peers sends ours (nil on a
	// one-replica node, which never produces any).
	inbox         chan consensus.Message
	peers         peerSender
	clock         loopClock
	inboxDropped  atomic.Uint64
	unsentDropped uint64
	// status is the group's view state as of the last Ready round.
	status atomic.Pointer[groupStatus]

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
	// fence: storage failing, writes refused and retried (storage_fence.go);
	// fenced mirrors it for other goroutines (status, tests).
	fence  storageFence
	fenced atomic.Bool
	// storageSince: when the storage work under way began (unix ns; 0:
	// none), for the hung-write watchdog (metadata_hung_write.go).
	storageSince atomic.Int64
	// unwrittenSnapshot: a checkpoint consensus accepted whose snapshot
	// write failed; written before anything else is persisted.
	unwrittenSnapshot *consensus.Snapshot
}

func newDriver(log *slog.Logger, g metadataGroup, store durableLog, app applier, appliedOp uint64) *driver {
	return &driver{
		log:            log,
		group:          g,
		store:          store,
		app:            app,
		proposals:      make(chan *proposal, proposalQueueMax),
		stopped:        make(chan struct{}),
		inbox:          make(chan consensus.Message, inboxMax),
		clock:          systemClock{},
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

// deliver hands a message from another replica to the loop without
// blocking: a full inbox drops it (counted), like a lossy link.
func (d *driver) deliver(m consensus.Message) bool {
	select {
	case d.inbox <- m:
		return true
	default:
		d.inboxDropped.Add(1)
		return false
	}
}

// run drives the group until ctx is cancelled; it returns a non-nil error
// only when storage failed (the node must stop: it cannot make progress
// safely).
func (d *driver) run(ctx context.Context) error {
	defer close(d.stopped)
	defer d.failPending()
	if d.settle != nil {
		g, err := d.settle(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while settling: nothing ran
			}
			return fmt.Errorf("settle empty storage: %w", err)
		}
		if g != nil {
			d.group = g
		}
		d.settle = nil
		d.publishStatus()
	}
	ticker := d.clock.NewTicker(tickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			// Finish what is already admitted so acknowledged work is durable.
			return d.processReady()
		case <-ticker.C():
			d.setNow()
			d.group.Tick()
			if d.primaryGone != nil && d.primaryGone.check(d.group, time.UnixMicro(int64(d.clock.NowMicros()))) {
				d.log.Warn("metadata primary's replica connection lost: starting a view change",
					"view", d.group.View(), "after", d.primaryGone.goneAfter)
			}
			if d.peerReturn != nil {
				d.peerReturn.check()
			}
		case m := <-d.inbox:
			d.step(m)
		steps:
			for i := 1; i < inboxBatchMax; i++ {
				select {
				case m := <-d.inbox:
					d.step(m)
				default:
					break steps
				}
			}
		case p := <-d.proposals:
			d.admitOrRefuse(p)
		batch:
			for i := 1; i < proposalBatchMax; i++ {
				select {
				case p := <-d.proposals:
					d.admitOrRefuse(p)
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

// position is the group's view, head op and commit_max as of the last
// Ready round (any goroutine; all zero before the first).
func (d *driver) position() (view uint32, op, commitMax uint64, newborn bool) {
	return d.posView.Load(), d.posOp.Load(), d.posCommitMax.Load(), d.posNewborn.Load()
}

// step hands a replica message to the group and notes, until the group
// is caught up, whether it came from the primary of the group's view.
func (d *driver) step(m consensus.Message) {
	d.group.Step(m)
	if d.caughtUp == nil {
		return
	}
	switch m.Kind {
	case consensus.MsgPrepare, consensus.MsgCommit, consensus.MsgStartView: // only a view's primary sends these
		if m.View == d.group.View() {
			d.heardPrimaryView, d.heardPrimary = m.View, true
		}
	}
}

func (d *driver) setNow() {
	d.group.SetNow(d.clock.NowMicros())
}

// admitOrRefuse admits a proposal, or refuses it (retryable) while the
// storage is fenced.
func (d *driver) admitOrRefuse(p *proposal) {
	if d.fence.fenced() {
		refuseFenced(p)
		return
	}
	d.admit(p)
}

func (d *driver) admit(p *proposal) {
	d.setNow()
	d.nextTag++
	p.req.Tag = d.nextTag
	d.waiting[p.req.Tag] = p
	d.byKey[proposalKey{p.req.Client, p.req.Request, p.req.Operation}] = p
	d.group.Propose(p.req)
}

// processReady carries out the group's Readys. A storage failure fences
// the group instead of stopping the node (storage_fence.go); only a fence
// that outlived superblock_wedged_fatal_timeout returns an error.
func (d *driver) processReady() error {
	defer d.publishStatus()
	defer d.maybeRejoined()
	d.storageSince.Store(time.Now().UnixNano())
	defer d.storageSince.Store(0)
	if !d.mayRetryStorage() {
		return nil
	}
	if s := d.unwrittenSnapshot; s != nil {
		if err := d.store.WriteSnapshot(*s); err != nil {
			return d.storageFailed(fmt.Errorf("write metadata snapshot at op %d: %w", s.Op, err))
		}
		d.unwrittenSnapshot, d.lastCheckpoint = nil, s.Op
		d.log.Info("metadata checkpoint written", "op", s.Op, "bytes", len(s.Data))
	}
	if d.fence.fenced() && !d.group.HasReady() {
		d.storageRecovered() // what failed is done
	}
	for round := 0; round < readyRoundsMax && d.group.HasReady(); round++ {
		if err := carryOut(d.group, d); err != nil {
			return d.storageFailed(err)
		}
		if err := d.maybeCheckpoint(); err != nil {
			return d.storageFailed(err)
		}
		d.storageRecovered()
	}
	return nil
}

// install implements readySteps: the transferred snapshot (durable since
// persist) replaces the applied state.
func (d *driver) install(s consensus.Snapshot) error {
	if err := d.app.installSnapshot(s, d.group); err != nil {
		return fmt.Errorf("install metadata snapshot at op %d: %w", s.Op, err)
	}
	d.appliedOp = max(d.appliedOp, s.Op)
	d.lastCheckpoint = max(d.lastCheckpoint, s.Op)
	d.log.Info("metadata snapshot installed from a peer", "op", s.Op, "bytes", len(s.Data))
	return nil
}

// apply implements readySteps: each committed op is applied, its reply
// body kept for a local proposal and recorded in the client table's ring.
func (d *driver) apply(committed []consensus.Prepare) error {
	for _, p := range committed {
		local := d.byKey[proposalKey{p.Header.Client, p.Header.Request, p.Header.Operation}]
		body := d.app.applyCommitted(p, local)
		if local != nil {
			d.bodies[p.Header.Op] = body
		}
		d.group.RecordReply(p.Header.Client, p.Header.Request, body)
		d.appliedOp = p.Header.Op
	}
	return nil
}

// reply implements readySteps: it answers this node's waiting proposals.
func (d *driver) reply(replies []consensus.Reply) {
	for _, r := range replies {
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
}

// publishStatus stores the group's view state for other goroutines; it
// allocates only when something changed.
func (d *driver) publishStatus() {
	if d.settle != nil {
		return // nothing to publish before the group settled
	}
	cur := snapshotStatus(d.group)
	d.posView.Store(cur.view)
	d.posOp.Store(d.group.Op())
	d.posCommitMax.Store(cur.commitMax)
	d.posNewborn.Store(d.newborn && d.group.ReplicaID() == 0 && d.group.LogView() == 0 && cur.commitMax == 0)
	if d.caughtUp != nil && cur.status == statusNormal && cur.commitMin == cur.commitMax &&
		(cur.primary || d.heardPrimary && d.heardPrimaryView == cur.view) {
		f := d.caughtUp
		d.caughtUp = nil
		f()
	}
	old := d.status.Load()
	if old != nil && *old == cur {
		return
	}
	if old != nil && (old.view != cur.view || old.status != cur.status) {
		d.log.Info("metadata group view", "view", cur.view, "status", cur.status.String(), "primary", cur.primary,
			"commit", cur.commitMin)
		if d.viewChanged != nil {
			d.viewChanged(*old, cur)
		}
	}
	d.status.Store(&cur)
}

// send hands the Ready's messages to the replica bus; persist came first,
// so nothing leaves before what it reveals is durable.
func (d *driver) send(msgs []consensus.Message) {
	if len(msgs) == 0 {
		return
	}
	if d.peers == nil {
		d.unsentDropped += uint64(len(msgs))
		d.log.Debug("dropping replica messages: no replica bus", "count", len(msgs))
		return
	}
	sendAll(d.peers, msgs)
}

func (d *driver) persist(rd *consensus.Ready) error {
	if rd.Truncate != 0 {
		if err := d.store.TruncateAndAppend(rd.Truncate, rd.Entries); err != nil {
			return fmt.Errorf("truncate metadata journal from op %d and re-append %d entries: %w", rd.Truncate, len(rd.Entries), err)
		}
	} else if len(rd.Entries) > 0 {
		if err := d.store.Append(rd.Entries...); err != nil {
			return fmt.Errorf("append %d metadata journal entries: %w", len(rd.Entries), err)
		}
	}
	// A transferred snapshot is durable before the superblock that names
	// it (a restart must find what the superblock's checkpoint points at).
	if rd.Snapshot != nil {
		if err := d.store.WriteSnapshot(*rd.Snapshot); err != nil {
			return fmt.Errorf("write transferred metadata snapshot at op %d: %w", rd.Snapshot.Op, err)
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
	return nil
}

// maybeCheckpoint writes a snapshot when the group's journal asks for one
// or every checkpointEveryOps applied ops, whichever comes first: snapshot
// file first, then (via the group's next Ready) the superblock that names
// it, then journal compaction.
func (d *driver) maybeCheckpoint() error {
	if !d.group.NeedsCheckpoint() && d.appliedOp < d.lastCheckpoint+checkpointEveryOps {
		return nil
	}
	return d.checkpoint()
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
	table := d.group.ClientTableSnapshot()
	s := consensus.Snapshot{Op: d.appliedOp, Data: d.app.checkpointData(table)}
	s.Checksum = snapshotChecksum(s.Data)
	d.group.Checkpoint(s)
	if err := d.group.CheckpointError(); err != nil {
		d.rejectedCheckpoint = s.Op
		d.log.Error("metadata checkpoint rejected by consensus; snapshot not written, previous checkpoint kept",
			"op", s.Op, "commit_min", d.group.CommitMin(), "checkpoint_op", d.lastCheckpoint, "err", err)
		return nil
	}
	if err := d.store.WriteSnapshot(s); err != nil {
		// Consensus holds the checkpoint: its snapshot must reach the disk
		// before any later Ready (whose superblock names it) does.
		d.unwrittenSnapshot = &s
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

// maybeRejoined calls rejoined once the group, restarted with StorageLost,
// is Normal in a view it holds the whole log of (the core cleared
// StorageLost) and its durable superblock records that view as log_view
// (processReady carried out the Ready that changed it).
func (d *driver) maybeRejoined() {
	g := d.group
	if d.rejoined == nil || d.settle != nil || g.Status() != consensus.StatusNormal || g.StorageLost() ||
		g.LogView() != g.View() || g.HasReady() {
		return
	}
	d.rejoined()
	d.rejoined = nil
}
