package sim

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// readyLoopMax bounds how many Ready batches one input may produce before
// the driver calls it a livelock (the core never settles).
const readyLoopMax = 1000

// proposal is a client request waiting on a replica for its reply.
type proposal struct {
	client   int
	request  uint64
	op       consensus.Operation
	bodySum  uint64
	clientID consensus.Uint128
	tick     uint64 // when it was proposed
}

// replicaDriver runs one group's replica on one node the way the real
// node does: feed it, then carry out each Ready (persist, send, apply,
// reply) and Advance. Its storage outlives crashes; the rest does not.
type replicaDriver struct {
	w     *world
	group int
	node  int
	cfg   consensus.Config

	g       consensus.Group // nil while the node is down
	store   storage
	app     appState
	pending map[uint64]proposal // by Tag

	lastCheckpointOp uint64
	incarnations     uint64

	// held: a Ready persisted and not yet sent, applied or advanced
	// (Scenario.HoldReadyChance), released at tick heldUntil.
	held      *consensus.Ready
	heldPlan  crashPlan
	heldUntil uint64

	// owed: ticks not yet given to the replica (Scenario.SkipQuietTicks).
	owed uint64

	// amnesiaPending: a power loss hit this node and no superblock with
	// Amnesiac has been written since, so restarts pass Restored.Amnesia
	// (the node's boot record).
	amnesiaPending bool

	// storageLost: this replica lost its storage and has not rejoined
	// since (the node's storage.lost marker, storagelost.go): every
	// restart passes Restored.StorageLost. wipedNilSuperblock: the wiped
	// replica restarts with no superblock rather than a zero one.
	storageLost, wipedNilSuperblock bool
}

// tickSkipper is a core whose quiet ticks may be skipped.
type tickSkipper interface {
	Ticks() uint64
	NextTimerTick() uint64
	AdvanceTicks(n uint64)
}

// tick gives the replica this world tick: at once, or (SkipQuietTicks)
// only when its next timer is due. It reports whether the replica ran.
func (d *replicaDriver) tick() bool {
	sk, ok := d.g.(tickSkipper)
	if !d.w.scn.SkipQuietTicks || !ok {
		d.w.setClock(d)
		d.g.Tick()
		return true
	}
	d.owed++
	if sk.Ticks()+d.owed < sk.NextTimerTick() {
		d.w.cov.SkippedTicks++
		return false
	}
	d.catchUp()
	return true
}

// catchUp gives the replica the ticks it is owed, before anything else is
// done to it (those arm timers relative to its tick count).
func (d *replicaDriver) catchUp() {
	if d.owed == 0 || d.g == nil {
		return
	}
	d.w.setClock(d)
	d.g.(tickSkipper).AdvanceTicks(d.owed)
	d.owed = 0
}

// crashPoint says where in carrying out a Ready the node dies.
type crashPoint uint8

const (
	crashNone          crashPoint = iota
	crashMidPersist               // after writes[0:at]; the write at `at` may be torn
	crashBeforeSend               // everything durable, nothing sent
	crashMidSend                  // after messages[0:at] went out
	crashBeforeAdvance            // all done but Advance
)

type crashPlan struct {
	point crashPoint
	at    int
	torn  bool
}

// drain carries out Ready batches until the replica has none. It returns
// false if the node crashed on the way.
func (d *replicaDriver) drain() bool {
	for i := 0; d.g != nil; i++ {
		if i >= readyLoopMax {
			d.w.fail(d.group, d.node, checkContract, "replica still HasReady after %d Ready batches", readyLoopMax)
			return true
		}
		if d.held != nil {
			if d.w.now < d.heldUntil {
				return true // still being persisted: checkpoints wait for its Advance
			}
			rd, plan := d.held, d.heldPlan
			d.held = nil
			if d.w.healed {
				// Drawn before the heal, which turned every fault off: a crash
				// now would leave the node down through the convergence check.
				plan = crashPlan{}
			}
			if !d.finish(rd, plan) {
				return false
			}
			d.g.Advance(*rd)
			continue
		}
		if !d.g.HasReady() {
			break
		}
		rd := d.g.Ready()
		if d.w.scn.HoldReadyChance > 0 && d.w.rng.chance(d.w.scn.HoldReadyChance) {
			plan, ok := d.begin(&rd)
			if !ok {
				return false
			}
			d.held, d.heldPlan = &rd, plan
			d.heldUntil = d.w.now + 1 + uint64(d.w.rng.intn(max(d.w.scn.HoldReadyTicksMax, 1)))
			d.w.cov.HeldReadys++
			continue
		}
		if !d.carryOut(&rd) {
			return false
		}
		d.g.Advance(rd)
	}
	if d.g == nil {
		return false
	}
	d.maybeCheckpoint()
	if d.g != nil && d.g.CommitMin() != d.app.op {
		d.w.fail(d.group, d.node, checkContract, "after draining, commit_min %d but %d ops applied", d.g.CommitMin(), d.app.op)
	}
	d.maybeRejoinedAfterLoss()
	return d.g != nil
}

// carryOut does what the node does with one Ready: persist, send, install
// a snapshot, apply, reply. It returns false if the node crashed on the way
// (the plan for this Ready may say so).
func (d *replicaDriver) carryOut(rd *consensus.Ready) bool {
	plan, ok := d.begin(rd)
	return ok && d.finish(rd, plan)
}

// begin checks and persists a Ready (the first half of carryOut); false if
// the node crashed on the way.
func (d *replicaDriver) begin(rd *consensus.Ready) (crashPlan, bool) {
	w := d.w
	d.verifyChecksums(rd)
	if rd.Truncate != 0 {
		w.cov.Truncations++
		w.trace(evTruncate, d.node, d.group, rd.Truncate, 0)
	}
	for i := range rd.Entries {
		w.trace(evJournal, d.node, d.group, rd.Entries[i].Header.Op, rd.Entries[i].Header.Checksum)
	}
	plan := w.planCrash(d.node, len(planWrites(rd)), len(rd.Messages))
	return plan, d.persist(rd, plan)
}

// finish sends, applies and answers a persisted Ready (the second half);
// false if the node crashed on the way.
func (d *replicaDriver) finish(rd *consensus.Ready, plan crashPlan) bool {
	w := d.w
	if !d.send(rd, plan) {
		return false
	}
	d.apply(rd)
	if plan.point == crashBeforeAdvance {
		w.crashNode(d.node, "before Advance of "+w.groups[d.group].name)
		return false
	}
	return true
}

// persist makes the Ready's writes durable, in order, unless the plan
// crashes the node in the middle (possibly tearing the next record) or
// right after.
func (d *replicaDriver) persist(rd *consensus.Ready, plan crashPlan) bool {
	w := d.w
	writes := planWrites(rd)
	for i, wr := range writes {
		if plan.point == crashMidPersist && i == plan.at {
			if i > 0 || plan.torn {
				w.cov.CrashesMidPersist++
			}
			if plan.torn {
				d.store.applyTorn(wr, w.rng)
			}
			w.crashNode(d.node, fmt.Sprintf("mid-persist of %s after %d of %d writes (torn=%v)", w.groups[d.group].name, i, len(writes), plan.torn))
			return false
		}
		d.store.apply(wr)
		if wr.kind == writeSuperblock {
			w.checkers[d.group].onSuperblock(d.node, wr.superblock)
			if wr.superblock.Amnesiac {
				d.amnesiaPending = false // the core's durable flag covers it now
			}
		}
	}
	d.store.maybeCompact()
	if plan.point == crashBeforeSend {
		w.crashNode(d.node, "after persist, before send of "+w.groups[d.group].name)
		return false
	}
	return true
}

// send puts the Ready's messages on the network, checking each one's
// addressing and that what it reveals is durable.
func (d *replicaDriver) send(rd *consensus.Ready, plan crashPlan) bool {
	w := d.w
	for i := range rd.Messages {
		if plan.point == crashMidSend && i == plan.at {
			w.cov.CrashesMidSend++
			w.crashNode(d.node, fmt.Sprintf("mid-send of %s after %d of %d messages", w.groups[d.group].name, i, len(rd.Messages)))
			return false
		}
		m := &rd.Messages[i]
		if int(m.From) != d.node || m.Group != d.cfg.GroupID || int(m.To) >= w.scn.Replicas || int(m.To) == d.node {
			w.fail(d.group, d.node, checkContract, "message kind %d from %d to %d group %d is misaddressed", m.Kind, m.From, m.To, m.Group)
			continue
		}
		if d.g.Outdated(m) {
			w.cov.OutdatedDropped++ // the replica moved on while the Ready was held
			continue
		}
		d.checkPersistBeforeSend(m)
		d.checkCurrentView(m)
		w.checkers[d.group].onSent(d.node, m)
		w.traceMessage(evSend, m)
		w.net.send(*m)
	}
	return true
}

// apply installs a state-transfer snapshot, applies the committed ops to
// the application (recording reply bodies for the client table) and
// delivers the replies.
func (d *replicaDriver) apply(rd *consensus.Ready) {
	w := d.w
	chk := w.checkers[d.group]
	if rd.Snapshot != nil {
		d.installSnapshot(rd.Snapshot)
	}
	for i := range rd.Committed {
		p := &rd.Committed[i]
		if err := d.app.apply(p); err != nil {
			w.fail(d.group, d.node, checkApplyOrder, "%v", err)
			continue
		}
		chk.onCommitted(d.node, p, d.app.hash, xxh3.Hash(p.Body))
		if rr, ok := d.g.(replyRecorder); ok && d.cfg.ClientTableMax > 0 && p.Header.Request != 0 {
			body := d.app.replyBody()
			rr.RecordReply(p.Header.Client, p.Header.Request, body)
			chk.onRecordReply(p.Header.Client, p.Header.Request, p.Header.Op, body)
		}
		w.trace(evCommit, d.node, d.group, p.Header.Op, p.Header.Checksum)
	}
	for _, rep := range rd.Replies {
		d.deliverReply(rep)
	}
}

func (d *replicaDriver) installSnapshot(snap *consensus.Snapshot) {
	w := d.w
	app, err := decodeAppSnapshot(snap)
	if err != nil {
		w.fail(d.group, d.node, checkSnapshot, "state transfer handed out a bad snapshot: %v", err)
		return
	}
	w.checkers[d.group].onSnapshotInstalled(d.node, app.op, app.hash, d.app.op)
	d.app = app
	d.restoreClientTable("state transfer install")
	w.checkers[d.group].onSnapshotDurable(d.node, snap.Op) // made durable with the Ready's writes
	d.lastCheckpointOp = snap.Op
	w.cov.StateTransfers++
	w.trace(evSnapshot, d.node, d.group, snap.Op, app.hash)
}

func (d *replicaDriver) deliverReply(rep consensus.Reply) {
	w := d.w
	p, ok := d.pending[rep.Tag]
	if !ok {
		w.fail(d.group, d.node, checkContract, "reply kind %d for unknown tag %d", rep.Kind, rep.Tag)
		return
	}
	delete(d.pending, rep.Tag)
	if rep.Kind == consensus.ReplyCommitted {
		w.checkers[d.group].onAck(d.node, p.clientID, p.request, p.op, p.bodySum, rep.Op)
		if rep.Cached != nil {
			w.cov.CachedReplies++
			w.checkers[d.group].onCachedReply(d.node, p.clientID, p.request, rep.Op, rep.Cached)
		}
	}
	w.trace(evReply, d.node, d.group, rep.Tag, uint64(rep.Kind)<<56|rep.Op)
	w.sendReply(p.client, rep)
}

// maybeCheckpoint takes an application snapshot every CheckpointEveryOps
// applied ops: make it durable, then hand it to consensus.
func (d *replicaDriver) maybeCheckpoint() {
	every := d.w.scn.CheckpointEveryOps
	periodic := every > 0 && d.app.op >= d.lastCheckpointOp+every
	// Journal pressure: the core cannot reuse a slot above its checkpoint.
	// Ask the core as the node does; a core without the query gets a
	// checkpoint once half the journal holds unreleased ops.
	var pressure bool
	if p, ok := d.g.(pressureReporter); ok {
		pressure = p.NeedsCheckpoint()
	} else {
		pressure = d.g.Op() >= d.lastCheckpointOp+uint64(d.cfg.JournalSlots)/2
	}
	pressure = pressure && d.app.op > d.lastCheckpointOp
	if !periodic && !pressure {
		return
	}
	if ct, ok := d.g.(clientTableCarrier); ok {
		d.app.extra = ct.ClientTableSnapshot()
	}
	snap := d.app.snapshot()
	d.store.installSnapshot(snap)
	d.w.checkers[d.group].onSnapshotDurable(d.node, snap.Op)
	d.w.checkers[d.group].onCheckpoint(d.node, snap)
	d.lastCheckpointOp = snap.Op
	d.w.cov.Checkpoints++
	d.g.Checkpoint(snap)
	if ce, ok := d.g.(checkpointErrorReporter); ok && ce.CheckpointError() != nil {
		d.w.fail(d.group, d.node, checkContract, "Checkpoint at op %d (commit_min %d) rejected: %v", snap.Op, d.g.CommitMin(), ce.CheckpointError())
	}
	d.w.trace(evCheckpoint, d.node, d.group, snap.Op, d.app.hash)
	for i := 0; d.g != nil && d.g.HasReady(); i++ {
		if i >= readyLoopMax {
			d.w.fail(d.group, d.node, checkContract, "replica still HasReady after %d Ready batches", readyLoopMax)
			return
		}
		rd := d.g.Ready()
		if !d.carryOut(&rd) {
			return
		}
		d.g.Advance(rd)
	}
}

// replyRecorder is implemented by a core whose client table caches the
// application's reply bodies for deduplicated retries.
type replyRecorder interface {
	RecordReply(client consensus.Uint128, request uint64, body []byte)
}

// pressureReporter says when the core's journal needs a checkpoint.
type pressureReporter interface{ NeedsCheckpoint() bool }

// checkpointErrorReporter says why the last Checkpoint was refused.
type checkpointErrorReporter interface{ CheckpointError() error }

// clientTableRestorer takes back the client table carried in a snapshot.
type clientTableRestorer interface {
	RestoreClientTable(data []byte) error
}

// restoreClientTable hands the core the client table carried in the
// application snapshot, as its contract asks after a restart or a state
// transfer install.
func (d *replicaDriver) restoreClientTable(when string) {
	ct, ok := d.g.(clientTableRestorer)
	if !ok || d.cfg.ClientTableMax == 0 || len(d.app.extra) == 0 {
		return
	}
	if err := ct.RestoreClientTable(d.app.extra); err != nil {
		d.w.fail(d.group, d.node, checkContract, "restore client table (%s) at op %d: %v", when, d.app.op, err)
	}
}

// clientTableCarrier is implemented by a core that needs the driver to
// carry its client table inside application snapshots.
type clientTableCarrier interface {
	ClientTableSnapshot() []byte
}

// start boots (restart=false: New) or reboots the replica from storage.
func (d *replicaDriver) start(restart bool) error {
	w := d.w
	d.incarnations++
	cfg := d.cfg
	cfg.Seed = w.rng.uint64()
	cfg.Incarnation = consensus.Uint128{Lo: w.rng.uint64() | 1, Hi: d.incarnations}
	d.pending = map[uint64]proposal{}
	var (
		g   consensus.Group
		err error
	)
	if !restart {
		d.app = appState{}
		g, err = w.factory.New(cfg)
	} else {
		st, cut := d.store.restore()
		d.app = appState{}
		if st.Snapshot != nil {
			app, derr := decodeAppSnapshot(st.Snapshot)
			if derr != nil {
				return fmt.Errorf("restore snapshot of node %d: %w", d.node, derr)
			}
			d.app = app
		}
		d.lastCheckpointOp = d.app.op
		if d.amnesiaPending {
			st.Amnesia = true
			w.cov.AmnesiacRestarts++
		}
		if st.Superblock != nil && st.Superblock.Amnesiac {
			d.amnesiaPending = false
		}
		d.restoredAfterLoss(&st)
		// As the node promises for its partition groups: a journal is
		// intact short of a power loss, reported as amnesia, unless the
		// node's storage is faulty (a crash keeps a prefix of a Ready's
		// writes, which may cut a truncation from its re-append: the
		// node's prepare WAL spares those, this store does not) or was
		// lost.
		st.JournalIntact = !w.scn.FaultyStorage[d.node] && !st.StorageLost
		w.trace(evRestore, d.node, d.group, uint64(len(st.Entries)), uint64(cut))
		g, err = w.factory.Restart(cfg, st)
	}
	if err != nil {
		return fmt.Errorf("start replica %d of %s (restart=%v): %w", d.node, w.groups[d.group].name, restart, err)
	}
	d.g, d.owed = g, 0
	w.setClock(d)
	if restart && d.lastCheckpointOp > 0 {
		d.restoreClientTable("restart")
	}
	if restart {
		w.checkers[d.group].onRestart(d.node, g)
	} else {
		w.checkers[d.group].observe(d.node, g)
	}
	return nil
}

// verifyChecksums checks that every prepare the core hands out carries its
// own identity checksum, as the real journal verifies before writing.
func (d *replicaDriver) verifyChecksums(rd *consensus.Ready) {
	for _, list := range [][]consensus.Prepare{rd.Entries, rd.Committed} {
		for i := range list {
			p := &list[i]
			if got := consensus.PrepareChecksum(&p.Header, p.Body); got != p.Header.Checksum {
				d.w.fail(d.group, d.node, checkContract, "op %d carries checksum %x, its header and body hash to %x", p.Header.Op, p.Header.Checksum, got)
			}
		}
	}
}

// checkCurrentView: a message bound to a view leaves only while its
// sender is still in that view. A replica that moved to a later view takes
// no part in earlier ones (finding 14: a late PrepareOk of view 0 after a
// StartView of view 1 could count towards a view-0 commit the view change
// never saw).
func (d *replicaDriver) checkCurrentView(m *consensus.Message) {
	switch m.Kind {
	case consensus.MsgPrepare, consensus.MsgPrepareOk, consensus.MsgCommit, consensus.MsgStartViewChange,
		consensus.MsgDoViewChange, consensus.MsgStartView:
		if v := d.g.View(); m.View < v {
			d.w.fail(d.group, d.node, checkPersistBeforeSend, "message kind %d of view %d sent while the replica is in view %d", m.Kind, m.View, v)
		}
	}
}

// checkPersistBeforeSend: a message that reveals a view or a prepare may
// leave only once what it reveals is durable (spec §3.7, §3.8): the
// superblock holds its view (and, for DoViewChange/StartView, its
// log_view), and a Prepare or PrepareOk names an op this replica's journal
// durably holds with that checksum.
func (d *replicaDriver) checkPersistBeforeSend(m *consensus.Message) {
	var view, logView uint32
	if sb := d.store.superblock; sb != nil {
		view, logView = sb.View, sb.LogView
	}
	switch m.Kind {
	case consensus.MsgPrepare, consensus.MsgPrepareOk, consensus.MsgCommit, consensus.MsgStartViewChange,
		consensus.MsgDoViewChange, consensus.MsgStartView:
		if m.View > view {
			d.w.fail(d.group, d.node, checkPersistBeforeSend, "message kind %d for view %d sent while the durable superblock holds view %d", m.Kind, m.View, view)
		}
	}
	switch m.Kind {
	case consensus.MsgDoViewChange:
		if m.LogView > logView {
			d.w.fail(d.group, d.node, checkPersistBeforeSend, "DoViewChange with log_view %d sent while the durable log_view is %d", m.LogView, logView)
		}
	case consensus.MsgStartView:
		if m.View > logView {
			d.w.fail(d.group, d.node, checkPersistBeforeSend, "StartView for view %d sent while the durable log_view is %d", m.View, logView)
		}
	case consensus.MsgPrepare, consensus.MsgPrepareOk:
		if h := m.Prepare; h != nil && !d.store.holds(h.Header.Op, h.Header.Checksum) {
			d.w.fail(d.group, d.node, checkPersistBeforeSend, "message kind %d for op %d (checksum %x) sent before the op is durable here", m.Kind, h.Header.Op, h.Header.Checksum)
		}
	}
}
