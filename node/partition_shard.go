package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// Shard loop bounds.
const (
	partitionProposalQueueMax = 4096 // proposals waiting for a shard loop
	partitionProposalBatchMax = 512  // proposals admitted per loop turn (one Ready, one sync covers them)
	partitionReadyRoundsMax   = 64   // Ready batches drained per group per turn
	partitionControlQueueMax  = 64   // metadata-driven changes waiting for a shard loop
	partitionBacklogMax       = 1024 // proposals held per partition while its group's window is full
	partitionWaitDuration     = 10 * time.Second
	// A shard's inbox: deep enough for the view changes of thousands of
	// groups at once (each a few small messages; a drop costs a
	// retransmit timeout), bounded in the bytes of the bodies it holds
	// (prepares, state chunks).
	partitionInboxMax      = 16384
	partitionInboxBytesMax = 256 << 20
)

// partitionGroup is what a shard drives: the same contract as the
// metadata group (drivenGroup), without the client table.
type partitionGroup = drivenGroup

// partitionGroupConfig sizes every partition group.
type partitionGroupConfig struct {
	prepareQueueDepth uint32
	journalSlots      uint32
	// walBytesMax ([partition] wal_bytes_max) bounds a group's retained
	// prepare WAL plus its in-flight prepares, bodies included; 0 = none.
	walBytesMax uint64
	// broken: deliberate bugs for the simulator's checker tests (zero:
	// none; partition_broken.go).
	broken partitionBreakage
}

// partitionProposal is one partition-plane write waiting for its outcome.
type partitionProposal struct {
	entry *partitionEntry
	op    wire.Operation
	body  []byte
	// bodyOwned: body is the proposal's own (a request frame the caller
	// gives up), so consensus keeps it without a copy; handedOver is set
	// once it did (the caller must then never reuse the buffer).
	bodyOwned, handedOver bool
	done                  chan partitionOutcome // buffered 1; nil = fire and forget (auto-commit)
	// A client send's identity for retry recognition (partition_dedup.go);
	// zero client: none.
	user    uint32
	client  consensus.Uint128
	request uint64
	sum     uint64 // the client's batch checksum, before stamping
	// refused (shard goroutine), when set, hears that the proposal was
	// refused before it entered a pipeline (58: storage fenced, a backup,
	// a full backlog), so its proposer may propose it again.
	refused func()
}

// partitionOutcome is a write's result: wire.OK and the batch's base offset,
// or the code to answer.
type partitionOutcome struct {
	code       wire.ErrorCode
	baseOffset uint64
	// stall (apply, cluster mode): the op could not be carried out on this
	// replica's storage; it must not count as applied.
	stall error
	// bodyReleased (set by propose): the shard and consensus keep no
	// reference to the proposal's body (consensus copied it at Propose, or
	// it never got there), so the caller may reuse its buffer. False when
	// consensus kept an owned body, or when the wait timed out with the
	// proposal possibly still queued.
	bodyReleased bool
}

type shardControl struct {
	fn   func()
	done chan struct{}
}

// partitionShard is one loop owning a set of partition groups: it ticks
// them every 10 ms, feeds them proposals, and carries out their Readys
// (apply in op order, reply, Advance, Checkpoint; storage work off the
// loop: partition_writer.go, partition_barrier.go).
type partitionShard struct {
	// recordedSends: the sends apply recorded in the retry table for the
	// Ready being applied (marked ambiguous if its sync fails).
	recordedSends []ambiguousSend
	// barriers: groups whose log sync is to leave the loop at the end of
	// this turn (partition_barrier.go).
	barriers []*partitionEntry
	// rolls: groups whose full segment is to roll off the loop at the end
	// of this turn (partition_roll.go).
	rolls []*partitionEntry
	// fsys holds the shard's partition files (the plane's, useFS).
	fsys  vfs.FS
	log   *slog.Logger
	clock loopClock
	// inbox holds replica messages for this shard's groups (routed by
	// group id); a full inbox drops, VSR retransmits.
	inbox        chan routedMessage
	inboxDropped atomic.Uint64
	inboxBytes   atomic.Int64 // body bytes of the messages in inbox
	// led and served: groups this replica leads and drives, as of the last tick.
	led, served atomic.Int64
	cfg         partitionGroupConfig
	// peers carries partition groups' messages to the other replicas (nil
	// until the replica bus starts, and on a single node).
	peers *peerBus
	// Cluster mode: the superblock identity, the replica count, and where
	// state transfers fetch records (nil on a single node).
	identity     journal.Identity
	replicaCount uint8
	records      recordSource
	// self and alignTo: leadership alignment (partition_align.go); alignTo
	// is nil on a single node.
	self    uint8
	alignTo alignTarget
	// Resting quiet groups (partition_rest.go): ticks of standstill before a
	// group rests (0: never, a single node), whether a peer is connected,
	// and the metadata group's view changes.
	restAfterTicks uint32
	connected      func(replica uint8) bool
	wakeups        chan struct{}
	deposed        *atomic.Int32 // the plane's deposed metadata primary (-1: none); nil in unit tests
	// closeFailed: a WAL or log of this shard did not sync or close at
	// shutdown (the plane's; the stop is then not clean).
	closeFailed *atomic.Bool
	proposals   chan *partitionProposal
	controls    chan shardControl
	stopped     chan struct{}

	// Owned by the loop goroutine (or by the caller of do after stop).
	groups map[*partitionEntry]struct{}
	// awake: the groups that tick (all but the resting ones), and how many
	// resting groups this replica leads (partition_rest.go).
	awake      awakeList
	restingLed int
	// restHeartbeats: the resting groups this replica leads, in the order
	// their next heartbeat is due (partition_rest_heartbeat.go);
	// restHeartbeatTicks apart (0: none, a single node).
	restHeartbeats     []restHeartbeatDue
	restHeartbeatTicks uint64
	restHeartbeatNext  uint64 // the first tick the next one may leave
	// tickNo counts the shard's 10 ms ticks (partition_ticks.go).
	tickNo  uint64
	nextTag uint64
	waiting map[uint64]*partitionProposal
	touched []*partitionEntry
	results map[uint64]partitionOutcome // op -> outcome of the group being processed

	// Durable writes off the loop (partition_writer.go): batches in
	// flight, where they report back, and the shard's concurrent writes.
	writesInFlight int
	writesDone     chan *writeBatch
	writeSlots     chan struct{}
	// sbLog: the node's partition superblock log (cluster mode; nil on a
	// single node, whose groups keep no superblock).
	sbLog *journal.SuperblockLog

	// inline: a deterministic simulator drives this shard from its own
	// goroutine instead of run: durable writes run on the caller and wait
	// in inlineDone until the simulator finishes them (finishInlineWrite),
	// and a state transfer makes one synchronous pass over its peers.
	inline     bool
	inlineDone []*writeBatch

	wedgedTimeout time.Duration // 0: a fenced group never stops the process
	fatal         chan error    // the plane's: a fence outlived wedgedTimeout
	// outstanding: the write batches out in the writers, for the hung
	// write check (partition_hung_write.go).
	outstanding map[*writeBatch]struct{}
	// fsyncFailed (the plane's afterFsyncFailure; nil in unit tests) takes
	// a group a failed fsync just fenced on.
	fsyncFailed func(*partitionEntry, *fsyncFailed)
	// damaged (the plane's repairDamaged; nil in unit tests) repairs a
	// batch a replayed send found damaged.
	damaged func(*partitionEntry, *partitions.CorruptionError)
	// purged (the whole-node simulator's ledger; nil otherwise) hears of
	// each purge generation this replica carries out, with its op.
	purged func(e *partitionEntry, generation, op uint64)
}

func newPartitionShard(log *slog.Logger, cfg partitionGroupConfig, peers *peerBus) *partitionShard {
	return &partitionShard{
		log:       log,
		peers:     peers,
		clock:     systemClock{},
		fsys:      vfs.OS,
		cfg:       cfg,
		proposals: make(chan *partitionProposal, partitionProposalQueueMax),
		controls:  make(chan shardControl, partitionControlQueueMax),
		inbox:     make(chan routedMessage, partitionInboxMax),
		wakeups:   make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		groups:    make(map[*partitionEntry]struct{}),
		// The plane replaces it with its own (a shard alone in a unit test keeps this one).
		closeFailed: new(atomic.Bool),
		waiting:     make(map[uint64]*partitionProposal),
		results:     make(map[uint64]partitionOutcome),
		// Batches in flight are bounded by the groups (one write each).
		writesDone: make(chan *writeBatch, 16),
		writeSlots: make(chan struct{}, writeSlotsMax),
	}
}

// do runs fn on the shard's goroutine and waits for it; after the loop has
// stopped, or on an inline shard, fn runs on the caller's goroutine
// (nothing else touches the shard).
func (s *partitionShard) do(fn func()) {
	if s.inline {
		// A simulator's shard: its caller is the loop (run's control case).
		s.settleWrites()
		fn()
		return
	}
	select {
	case <-s.stopped:
		fn()
		return
	default:
	}
	c := shardControl{fn: fn, done: make(chan struct{})}
	select {
	case <-s.stopped:
		fn()
		return
	case s.controls <- c:
	}
	select {
	case <-c.done:
	case <-s.stopped:
		// The loop finishes every control it took before stopping; one
		// queued after its last look (or when both select cases were
		// ready) is still in the channel: run it here.
		s.runQueuedControls()
		<-c.done
	}
}

// runQueuedControls (after stop) runs controls left in the queue.
func (s *partitionShard) runQueuedControls() {
	for {
		select {
		case c := <-s.controls:
			c.fn()
			close(c.done)
		default:
			return
		}
	}
}

// submit hands a proposal to the loop: false when the queue is full or the
// shard stopped (the write never entered a pipeline: 58).
func (s *partitionShard) submit(p *partitionProposal) bool {
	select {
	case <-s.stopped:
		return false
	default:
	}
	select {
	case s.proposals <- p:
		return true
	default:
		return false
	}
}

// propose submits and waits for the outcome (bounded).
func (s *partitionShard) propose(ctx context.Context, p *partitionProposal) partitionOutcome {
	p.done = make(chan partitionOutcome, 1)
	if !s.submit(p) {
		return partitionOutcome{code: wire.ErrTransientNotAccepted, bodyReleased: true}
	}
	timer := time.NewTimer(partitionWaitDuration)
	defer timer.Stop()
	select {
	case out := <-p.done:
		out.bodyReleased = out.bodyReleased || !p.handedOver
		return out
	case <-ctx.Done():
		return partitionOutcome{code: wire.ErrTransientNotCommitted}
	case <-timer.C:
		return partitionOutcome{code: wire.ErrTransientNotCommitted}
	}
}

// run drives the shard until ctx is cancelled, then finishes what was
// admitted, syncs and closes every log.
func (s *partitionShard) run(ctx context.Context) {
	ticker := s.clock.NewTicker(tickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			s.drain()
			return
		case <-ticker.C():
			s.onTick()
		case c := <-s.controls:
			s.settleWrites() // a control may drop, reopen or close a group
			c.fn()
			close(c.done)
		case b := <-s.writesDone:
			s.finishWrites(b)
		case <-s.wakeups:
			s.wakeAll()
		case m := <-s.inbox:
			s.step(m)
		steps:
			for i := 1; i < inboxBatchMax; i++ {
				select {
				case m := <-s.inbox:
					s.step(m)
				default:
					break steps
				}
			}
		case p := <-s.proposals:
			s.admit(p)
		batch:
			for i := 1; i < partitionProposalBatchMax; i++ {
				select {
				case p := <-s.proposals:
					s.admit(p)
				default:
					break batch
				}
			}
		}
		s.processTouched()
	}
}

// onTick is one 10 ms tick of every awake group (the loop's ticker case;
// a simulator calls it at its own virtual times).
func (s *partitionShard) onTick() {
	now := s.clock.NowMicros()
	nowT := time.UnixMicro(int64(now))
	led := s.restingLed
	s.tickNo++
	// Backwards: noteQuiet may take the current group out
	// (swapping the last one in, already visited).
	for i := len(s.awake.list) - 1; i >= 0; i-- {
		e := s.awake.list[i]
		if e.primary.Load() {
			led++
		}
		if !s.dueNow(e) {
			continue // nothing due: its ticks are counted when it next runs
		}
		if e.fence.fenced() {
			s.checkWedged(e, nowT)
		}
		elapsed := s.tickNo - e.tickedAt
		s.catchUp(e)
		if e.group.HasReady() || len(e.backlog) > 0 {
			s.touch(e)
		}
		e.publishRole()
		s.noteQuiet(e, elapsed)
		s.schedule(e)
	}
	s.checkHungWrites(nowT)
	s.sendRestHeartbeats()
	s.led.Store(int64(led))
	s.served.Store(int64(len(s.groups)))
	s.align(time.UnixMicro(int64(now)))
}

// pump (inline shards) does what one turn of run does for everything
// already queued, in a fixed order: controls, wake-ups, replica messages,
// proposals, then the touched groups' Readys. The simulator calls onTick
// and finishInlineWrite itself, at its own virtual times.
func (s *partitionShard) pump() {
	// One goroutine feeds and drains an inline shard: a queue's length is
	// what it holds.
	for len(s.controls) > 0 {
		c := <-s.controls
		s.settleWrites()
		c.fn()
		close(c.done)
	}
	if len(s.wakeups) > 0 {
		<-s.wakeups
		s.wakeAll()
	}
	for i := 0; i < inboxBatchMax && len(s.inbox) > 0; i++ {
		s.step(<-s.inbox)
	}
	for i := 0; i < partitionProposalBatchMax && len(s.proposals) > 0; i++ {
		s.admit(<-s.proposals)
	}
	s.processTouched()
}

// routedMessage is a replica message with the partition it is for.
type routedMessage struct {
	entry *partitionEntry
	msg   consensus.Message
}

// deliver hands a replica message to the shard without blocking.
// A full inbox (in messages or body bytes) drops; VSR retransmits.
func (s *partitionShard) deliver(e *partitionEntry, m consensus.Message) {
	n := messageBodyBytes(&m)
	if n > 0 && s.inboxBytes.Load()+n > partitionInboxBytesMax {
		s.inboxDropped.Add(1)
		return
	}
	s.inboxBytes.Add(n)
	select {
	case s.inbox <- routedMessage{entry: e, msg: m}:
	default:
		s.inboxBytes.Add(-n)
		s.inboxDropped.Add(1)
	}
}

// messageBodyBytes is what a replica message holds beyond its fixed part.
func messageBodyBytes(m *consensus.Message) int64 {
	n := int64(len(m.ChunkData))
	if m.Prepare != nil {
		n += int64(len(m.Prepare.Body))
	}
	return n
}

// step feeds a routed message to its group if the shard still drives it
// (the partition may have been removed meanwhile).
func (s *partitionShard) step(r routedMessage) {
	s.inboxBytes.Add(-messageBodyBytes(&r.msg))
	if _, ok := s.groups[r.entry]; !ok {
		return
	}
	if r.entry.resting && s.restHeartbeatHeld(r.entry, &r.msg) {
		return // a resting backup that holds what it says stays resting
	}
	s.wake(r.entry)
	s.catchUp(r.entry)
	r.entry.group.Step(r.msg)
	s.heard(r.entry, r.msg.From, r.msg.View)
	if r.entry.group.HasReady() {
		s.touch(r.entry)
	}
	s.schedule(r.entry)
}

// drain carries out every admitted proposal, then syncs and closes the logs
// (graceful shutdown flushes everything).
func (s *partitionShard) drain() {
	s.settleWrites()
	for {
		select {
		case c := <-s.controls:
			c.fn()
			close(c.done)
			continue
		case p := <-s.proposals:
			s.admit(p)
			continue
		default:
		}
		break
	}
	// What was admitted is carried out (bounded: each round finishes the
	// writes the one before started).
	for round := 0; round < partitionReadyRoundsMax; round++ {
		s.processTouched()
		if s.writesInFlight == 0 {
			break
		}
		s.settleWrites()
	}
	s.settleWrites()
	for tag, p := range s.waiting {
		p.reply(partitionOutcome{code: wire.ErrTransientNotCommitted})
		delete(s.waiting, tag)
	}
	for e := range s.groups {
		for _, p := range e.backlog {
			p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted}) // never entered a pipeline
		}
		e.backlog = nil
	}
	close(s.stopped)
	for e := range s.groups {
		if e.transfer != nil {
			e.transfer.stop()
			e.transfer = nil
		}
		// Synced, so the boot record may call the stop clean (boot_record.go).
		if err := e.syncAndCloseWAL(); err != nil {
			s.closeFailed.Store(true)
			s.log.Error("close partition prepare WAL at shutdown", "dir", e.dir, "err", err)
		}
		if e.log != nil {
			if err := e.log.Close(); err != nil {
				s.closeFailed.Store(true)
				s.log.Error("close partition log at shutdown", "dir", e.dir, "err", err)
			}
		}
	}
	// Proposals that raced the stop get a definite answer.
	for {
		select {
		case p := <-s.proposals:
			p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
		default:
			return
		}
	}
}

func (p *partitionProposal) reply(out partitionOutcome) {
	if p.refused != nil && out.code == wire.ErrTransientNotAccepted {
		p.refused()
	}
	if p.done != nil {
		p.done <- out
	}
}

// touch queues a group for processTouched (once: a flag, not a scan,
// since thousands of groups may be touched in one turn).
func (s *partitionShard) touch(e *partitionEntry) {
	if e.inTouched {
		return
	}
	e.inTouched = true
	s.touched = append(s.touched, e)
}

func (s *partitionShard) admit(p *partitionProposal) {
	e := p.entry
	s.wake(e)
	if _, ok := s.groups[e]; !ok || e.log == nil {
		// Deleted (or quarantined) between admission and now.
		p.reply(partitionOutcome{code: wire.ErrResourceNotFound})
		return
	}
	if p.op == wire.OpSendMessages && !p.client.IsZero() && !s.cfg.broken.ignoreRetries {
		switch verdict, base := e.dedup.check(dedupKey{p.user, p.client}, p.request, p.sum); verdict {
		case dedupReplay:
			if s.cfg.broken.replayOffByOne {
				base++
			}
			p.reply(partitionOutcome{code: wire.OK, baseOffset: base, bodyReleased: true})
			return
		case dedupTooOld:
			p.reply(partitionOutcome{code: wire.ErrRequestAlreadyApplied, bodyReleased: true})
			return
		case dedupAmbiguous:
			p.reply(partitionOutcome{code: wire.ErrTransientNotCommitted, bodyReleased: true})
			return
		}
	}
	if e.fence.fenced() {
		// Storage failing (partition_fence.go): retryable, nothing entered a pipeline.
		p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
		return
	}
	if !e.group.IsPrimary() && e.group.Status() == consensus.StatusNormal {
		// A backup: the write belongs on the group's primary (58, never
		// entered a pipeline). During a view change it waits in the backlog:
		// this replica may be the next primary.
		p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
		return
	}
	if len(e.backlog) > 0 || e.inflight >= s.inflightMax() || !s.stampReady(e) || !s.walRoom(e, len(p.body)) {
		// The group's window is full, the prepare WAL at its bound, or the
		// primary cannot stamp yet: wait here rather than have consensus
		// refuse the request (58) under a burst or a view change.
		if len(e.backlog) >= partitionBacklogMax {
			p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
			return
		}
		e.backlog = append(e.backlog, p)
		return
	}
	s.proposeNow(e, p)
}

// inflightMax is what one group takes at once: its request queue (2 ×
// depth), which must hold everything when journal pressure leaves the
// pipeline empty.
func (s *partitionShard) inflightMax() int { return 2 * int(s.cfg.prepareQueueDepth) }

func (s *partitionShard) proposeNow(e *partitionEntry, p *partitionProposal) {
	switch p.op {
	case wire.OpSendMessages:
		if code := s.stamp(e, p.body); code != wire.OK {
			p.reply(partitionOutcome{code: code, bodyReleased: true})
			return
		}
	case partitionOpPurge:
		// Batches proposed after the purge start the offsets again, behind
		// a reservation of their own (the purge resets it).
		e.stampNext, e.stampReserved, e.stampSkipTo = 0, 0, 0
	}
	s.nextTag++
	s.waiting[s.nextTag] = p
	e.inflight++
	e.walQueuedBytes += uint64(len(p.body))
	s.catchUp(e)
	e.group.SetNow(s.clock.NowMicros())
	e.group.Propose(consensus.Request{Operation: consensus.Operation(p.op), Body: p.body, BodyOwned: p.bodyOwned,
		Tag: s.nextTag, Client: p.client, Request: p.request, Checksum: p.sum, UserID: p.user})
	p.handedOver = p.bodyOwned
	s.touch(e)
	s.schedule(e)
}

// promoteBacklog proposes held proposals as the group's window frees up
// and the primary can stamp; a replica that turned out a backup answers
// them 58.
func (s *partitionShard) promoteBacklog(e *partitionEntry) {
	if len(e.backlog) == 0 {
		return
	}
	if !e.group.IsPrimary() {
		if e.group.Status() == consensus.StatusNormal {
			for _, p := range e.backlog {
				p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
			}
			e.backlog = nil
		}
		return
	}
	n := 0
	for n < len(e.backlog) && e.inflight < s.inflightMax() && s.stampReady(e) && s.walRoom(e, len(e.backlog[n].body)) {
		s.proposeNow(e, e.backlog[n])
		e.backlog[n] = nil
		n++
	}
	e.backlog = e.backlog[n:]
}

// dropGroup (shard goroutine) answers everything still waiting for a
// partition that is going away.
func (s *partitionShard) dropGroup(e *partitionEntry, code wire.ErrorCode) {
	delete(s.groups, e)
	if e.resting && e.primary.Load() {
		s.restingLed--
	}
	s.awake.remove(e)
	if e.transfer != nil {
		e.transfer.stop()
		e.transfer = nil
	}
	for tag, p := range s.waiting {
		if p.entry == e {
			p.reply(partitionOutcome{code: code})
			delete(s.waiting, tag)
		}
	}
	for _, p := range e.backlog {
		p.reply(partitionOutcome{code: code})
	}
	e.backlog, e.inflight, e.walQueuedBytes = nil, 0, 0
}

// persist implements readySteps. In cluster mode a Ready's journal work
// goes to the group's prepare WAL and its superblock is written here
// (partition_vsr.go); a single node keeps its journal in memory. The
// committed batch itself is made durable as it is applied, before its
// reply (synced first on persisted topics).
func (e *partitionEntry) persist(rd *consensus.Ready) error { return e.persistVSR(rd) }

// send implements readySteps: the group's messages go to the other
// replicas over the replica bus (a one-replica group sends none).
func (e *partitionEntry) send(msgs []consensus.Message) {
	e.shard.peers.send(msgs)
}

// install implements readySteps: persist already brought the log to the
// snapshot's frontier and installed its consumer offsets
// (partition_transfer.go); the group's applied state now starts there.
func (e *partitionEntry) install(snap consensus.Snapshot) error {
	e.logSyncedCheckpoint = 0
	e.filesReshaped++
	e.appliedOp = snap.Op
	e.lastTimestamp = lastAppendTime(e.log)
	e.stampValid = false
	return nil
}

// apply implements readySteps: each committed op is carried out on the
// partition's log (results kept for the replies), then a persisted topic's
// log is synced once for the whole Ready. A cluster replica that cannot
// carry out a committed op stops there (out.stall): the Ready is tried
// again under a fence (partition_fence.go), never skipped, so its files
// stay those of its peers. A failed sync makes the Ready's writes
// ambiguous (57: they may still become visible) and fences the group until
// a restart.
func (e *partitionEntry) apply(committed []consensus.Prepare) error {
	s := e.shard
	appended := false
	s.recordedSends = s.recordedSends[:0]
	for i := range committed {
		op := committed[i].Header.Op
		if op <= e.appliedOp {
			// Applied by an earlier attempt of this Ready, which stalled
			// on a later op. Applying it again is not idempotent: a send
			// would be answered from the retry table it recorded, and the
			// offsets would stay behind (metadata simulator seed 17037:
			// every later batch refused as stamped for another place, the
			// replica's frontier wrong, a transfer spread it).
			if out, ok := e.stalledResults[op]; ok {
				s.results[op] = out
			}
			continue
		}
		if !appendsOnly(wire.Operation(committed[i].Header.Operation)) {
			e.filesReshaped++ // a checkpoint captured before it no longer describes the files (partition_presync.go)
		}
		out, wrote := s.applyStaged(e, &committed[i])
		if out.stall != nil {
			e.keepStalledResults()
			return out.stall
		}
		appended = appended || wrote
		s.results[op] = out
		e.appliedOp = op
		if i+1 < len(committed) && e.rollsMidReady() {
			// The op filled the segment: the rest of the Ready is applied
			// after its roll, off the loop (partition_roll.go).
			e.keepStalledResults()
			return errRollMidReady
		}
	}
	e.stalledResults = nil
	if appended && e.persisted && e.wal == nil {
		// A single node: no WAL, the segment sync is the barrier before
		// the answers, off the loop (partition_barrier.go). (A cluster
		// replica synced the WAL before its PrepareOk; its log is synced
		// before each checkpoint, partition_vsr.go.)
		e.barrier = &segmentBarrier{sends: append([]ambiguousSend(nil), s.recordedSends...)}
	}
	return nil
}

// keepStalledResults keeps the outcomes of the ops a Ready applied before
// it stopped (a stall, a roll), for the attempt that carries it on.
func (e *partitionEntry) keepStalledResults() {
	s := e.shard
	if e.stalledResults == nil {
		e.stalledResults = make(map[uint64]partitionOutcome, len(s.results))
	}
	maps.Copy(e.stalledResults, s.results)
	clear(s.results)
}

// reply implements readySteps: it answers the waiting proposals.
func (e *partitionEntry) reply(replies []consensus.Reply) {
	s := e.shard
	for _, r := range replies {
		p, ok := s.waiting[r.Tag]
		if !ok {
			continue
		}
		delete(s.waiting, r.Tag)
		e.inflight--
		e.noteInflightEnded()
		if r.Kind != consensus.ReplyCommitted {
			// The offsets stamped after this one may now leave a hole:
			// stamp again from the log once everything in flight applied.
			e.stampValid = false
		}
		switch r.Kind {
		case consensus.ReplyCommitted:
			out, ok := s.results[r.Op]
			if !ok {
				out = partitionOutcome{code: wire.ErrTransientNotCommitted}
			}
			if out.code != wire.OK && p.op == wire.OpSendMessages {
				e.stampValid = false
			}
			if e.barrier != nil {
				e.barrier.replies = append(e.barrier.replies, heldReply{p: p, out: out})
				continue
			}
			p.reply(out)
		case consensus.ReplyNotAccepted, consensus.ReplyDropped:
			// Never entered the journal, so never written to the WAL.
			e.walQueuedBytes -= min(e.walQueuedBytes, uint64(len(p.body)))
			p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted})
		default:
			p.reply(partitionOutcome{code: wire.ErrTransientNotCommitted})
		}
	}
	clear(s.results)
}

// checkpoint hands consensus the partition's small snapshot (frontier,
// first offset, consumer offsets: partition_checkpoint.go) so the
// in-memory journal may reuse the slots of applied ops; in cluster mode
// the next Ready's superblock records it with the frontier, after the log
// was synced ahead to it (partition_presync.go).
func (s *partitionShard) checkpoint(e *partitionEntry) {
	if s.afterPresync(e) {
		return
	}
	if !e.group.NeedsCheckpoint() && !s.walPressure(e) && !e.purgedSinceCheckpoint() {
		return
	}
	if e.presync != nil {
		return // its log sync is out: the checkpoint follows it
	}
	c := s.captureCheckpoint(e)
	if !e.syncsAhead() {
		e.presyncBypass = false
		s.handCheckpoint(e, c, false)
		return
	}
	s.startPresync(e, c)
}

// apply carries out one committed partition op; wrote reports a log append.
func (s *partitionShard) apply(e *partitionEntry, p *consensus.Prepare) (out partitionOutcome, wrote bool) {
	if e.erasedByPurge(p.Header.Op) && wire.Operation(p.Header.Operation) != wire.OpSendMessages {
		return s.applyErased(e, p), false // partition_purge_replay.go
	}
	switch wire.Operation(p.Header.Operation) {
	case wire.OpSendMessages:
		return s.applySend(e, p)
	case partitionOpPurge:
		return s.applyPurge(e, p), false
	case partitionOpCut:
		return s.applyCut(e, p), false
	case partitionOpReserve:
		return s.applyReserve(e, p), false
	case wire.OpStoreConsumerOffset:
		kind, id, offset, ok := decodeOffsetOp(p.Body, true)
		if !ok {
			return partitionOutcome{code: wire.ErrInvalidCommand}, false
		}
		if p.Header.Op <= e.offsetsAppliedOp {
			return partitionOutcome{code: wire.OK}, false // the offsets reflect it already
		}
		if err := e.log.StoreConsumerOffset(kind, id, s.cfg.broken.brokenStoredOffset(offset)); err != nil {
			s.log.Error("store consumer offset", "dir", e.dir, "err", err)
			return e.storageFailure(wire.ErrCannotWriteToFile, p, err), false
		}
		return partitionOutcome{code: wire.OK}, false
	case wire.OpDeleteConsumerOffset:
		kind, id, _, ok := decodeOffsetOp(p.Body, false)
		if !ok {
			return partitionOutcome{code: wire.ErrInvalidCommand}, false
		}
		if p.Header.Op <= e.offsetsAppliedOp {
			return partitionOutcome{code: wire.OK}, false // the offsets reflect it already
		}
		if err := e.log.DeleteConsumerOffset(kind, id); err != nil {
			if errors.Is(err, partitions.ErrConsumerOffsetNotFound) {
				return partitionOutcome{code: wire.ErrConsumerOffsetNotFound}, false
			}
			s.log.Error("delete consumer offset", "dir", e.dir, "err", err)
			return e.storageFailure(wire.ErrCannotDeleteConsumerOffsetFile, p, err), false
		}
		return partitionOutcome{code: wire.OK}, false
	}
	return partitionOutcome{code: wire.ErrInvalidCommand}, false
}

// applySend appends the committed batch exactly as the primary stamped and
// sealed it, on every replica, so every replica writes identical bytes. A
// batch stamped for another offset (the primary's stamp raced a hole it
// could not know of) is refused the same way on every replica.
func (s *partitionShard) applySend(e *partitionEntry, p *consensus.Prepare) (partitionOutcome, bool) {
	h, err := wire.DecodeBatchHeader(p.Body)
	if err != nil {
		s.log.Error("committed batch header", "dir", e.dir, "op", p.Header.Op, "err", err)
		return partitionOutcome{code: wire.ErrorCodeOf(err)}, false
	}
	key := dedupKey{p.Header.UserID, p.Header.Client}
	identified := !p.Header.Client.IsZero() && !s.cfg.broken.ignoreRetries
	if identified {
		switch verdict, base := e.dedup.check(key, p.Header.Request, p.Header.ReqSum); verdict {
		case dedupReplay:
			e.stampValid = false // the offsets stamped for this copy stay unused
			if s.cfg.broken.replayOffByOne {
				base++
			}
			return partitionOutcome{code: wire.OK, baseOffset: base}, false
		case dedupTooOld:
			e.stampValid = false
			return partitionOutcome{code: wire.ErrRequestAlreadyApplied}, false
		case dedupAmbiguous:
			e.stampValid = false
			return partitionOutcome{code: wire.ErrTransientNotCommitted}, false
		}
	}
	out, wrote := s.appendCommitted(e, p, h)
	if identified && out.code == wire.OK {
		e.dedup.record(key, p.Header.Request, p.Header.ReqSum, out.baseOffset, p.Header.Op)
		if wrote {
			s.recordedSends = append(s.recordedSends, ambiguousSend{key, p.Header.Request})
		}
	}
	return out, wrote
}

// appendCommitted appends a committed batch (or recognises one the log
// already holds) on this replica.
func (s *partitionShard) appendCommitted(e *partitionEntry, p *consensus.Prepare, h wire.BatchHeader) (partitionOutcome, bool) {
	if e.erasedByPurge(p.Header.Op) {
		return s.appendErased(e, h), false
	}
	next := e.appliedNext
	if h.BaseOffset == next && next < e.log.NextOffset() && h.PartitionID == uint64(e.key.partition) {
		out := s.replayedSend(e, p, h)
		if out.code == wire.OK {
			e.appliedNext += uint64(h.MessageCount) // where the peers' logs stand after it
		}
		return out, false
	}
	if h.BaseOffset != next || h.PartitionID != uint64(e.key.partition) {
		s.log.Warn("committed batch stamped for another place; refused on every replica", "dir", e.dir,
			"op", p.Header.Op, "base_offset", h.BaseOffset, "next_offset", next, "partition_id", h.PartitionID)
		// Committed as a no-op everywhere: nothing was written, a retry is safe.
		return partitionOutcome{code: wire.ErrTransientNotAccepted}, false
	}
	if s.beyondReservation(e, h) {
		// Its reservation op never committed ahead of it: acknowledging it
		// could hand its offsets out twice after a power loss.
		s.log.Warn("committed batch stamped beyond the offset reservation; refused on every replica", "dir", e.dir,
			"op", p.Header.Op, "base_offset", h.BaseOffset, "messages", h.MessageCount, "reserved", e.marker.OffsetsReserved)
		return partitionOutcome{code: wire.ErrTransientNotAccepted}, false
	}
	if tag, _, ok := e.log.FirstStaged(); ok && tag != p.Header.Op {
		// A later op's batch is staged where this one goes: that op will be
		// refused (its stamp follows another), this one is appended.
		if err := e.unstage(); err != nil {
			return e.storageFailure(wire.ErrCannotAppendMessage, p, err), false
		}
	}
	body := p.Body
	if s.cfg.broken.backupsRestamp && !e.group.IsPrimary() {
		if err := e.unstage(); err != nil { // the batch staged is the primary's
			return e.storageFailure(wire.ErrCannotAppendMessage, p, err), false
		}
		body = append([]byte(nil), body...)
		if err := wire.StampBatch(body, uint32(h.PartitionID), h.BaseOffset, h.BaseTimestamp+1); err != nil {
			return partitionOutcome{code: wire.ErrorCodeOf(err)}, false
		}
	}
	loc, err := e.log.Append(body)
	if err != nil {
		s.log.Error("append committed batch", "dir", e.dir, "op", p.Header.Op, "err", err)
		return e.storageFailure(wire.ErrCannotAppendMessage, p, err), false
	}
	if s.cfg.broken.backupsFlipAByte && !e.group.IsPrimary() && h.BaseOffset%5 == 0 {
		s.cfg.broken.flipLastByte(s.fsys, e.log, loc)
	}
	e.lastTimestamp = max(e.lastTimestamp, h.BaseTimestamp)
	e.appliedNext = e.log.NextOffset()
	return partitionOutcome{code: wire.OK, baseOffset: h.BaseOffset}, true
}

// replayedSend answers a committed send whose offsets the log already
// holds: a replica that restarted above its checkpoint applies those ops
// again (its base is where the applied ops end, appliedNext). The stored
// batch must be this one (same batch checksum); below the first stored
// offset (retention) it cannot be compared and counts as applied; nor
// when it is damaged (rot in a sealed segment, served around): it is
// repaired with a peer's copy of the same committed batch.
func (s *partitionShard) replayedSend(e *partitionEntry, p *consensus.Prepare, h wire.BatchHeader) partitionOutcome {
	stored, _, err := e.log.ReadRecords(nil, h.BaseOffset, h.BaseOffset+1, 1)
	var ce *partitions.CorruptionError
	switch {
	case errors.Is(err, partitions.ErrBelowRetained):
	case errors.As(err, &ce):
		if s.damaged != nil {
			s.damaged(e, ce)
		}
	case err != nil:
		s.log.Error("replayed batch: reading the stored one", "dir", e.dir, "op", p.Header.Op, "base_offset", h.BaseOffset, "err", err)
		return e.storageFailure(wire.ErrCannotReadPartitions, p, err)
	default:
		sh, herr := wire.DecodeBatchHeader(stored)
		if herr != nil || sh.BatchChecksum != h.BatchChecksum || sh.BatchLength != h.BatchLength {
			// Another op's batch is stored there: the first apply refused
			// this one (beyond the reservation then), as its peers did.
			s.log.Warn("replayed batch was refused when first applied: another is stored at its offset", "dir", e.dir,
				"op", p.Header.Op, "base_offset", h.BaseOffset)
			return partitionOutcome{code: wire.ErrTransientNotAccepted}
		}
	}
	return partitionOutcome{code: wire.OK, baseOffset: h.BaseOffset}
}

// storageFailure answers a committed op this replica's storage could not
// carry out. A single node answers code (the write was rolled back; its
// one replica decides alone). A cluster replica must not skip it while
// its peers applied it: it stalls (partitionOutcome.stall).
func (e *partitionEntry) storageFailure(code wire.ErrorCode, p *consensus.Prepare, err error) partitionOutcome {
	out := partitionOutcome{code: code}
	if e.superblock != nil {
		out.stall = fmt.Errorf("carry out committed op %d: %w", p.Header.Op, err)
	}
	return out
}

// Offset op bodies (ours, inside a partition prepare): [kind u8][id u32]
// and, for a store, [offset u64].
func encodeOffsetOp(kind wire.ConsumerKind, id uint32, offset uint64, store bool) []byte {
	b := make([]byte, 0, 13)
	b = append(b, byte(kind))
	b = binary.LittleEndian.AppendUint32(b, id)
	if store {
		b = binary.LittleEndian.AppendUint64(b, offset)
	}
	return b
}

func decodeOffsetOp(b []byte, store bool) (wire.ConsumerKind, uint32, uint64, bool) {
	want := 5
	if store {
		want = 13
	}
	if len(b) != want {
		return 0, 0, 0, false
	}
	kind := wire.ConsumerKind(b[0])
	id := binary.LittleEndian.Uint32(b[1:])
	var offset uint64
	if store {
		offset = binary.LittleEndian.Uint64(b[5:])
	}
	return kind, id, offset, true
}
