package sim

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// Violation is one broken invariant, with where and when it was seen.
type Violation struct {
	Tick    uint64
	Group   string
	Replica int // -1: cluster-wide
	Check   string
	Detail  string
}

func (v Violation) String() string {
	return fmt.Sprintf("tick=%d group=%s replica=%d check=%s: %s", v.Tick, v.Group, v.Replica, v.Check, v.Detail)
}

// Names of the checks, used in violations and docs/simulator.md.
const (
	checkCommittedChanged  = "committed-op-changed"  // (a) a replica re-committed an op with another checksum
	checkAgreement         = "agreement"             // (c) two replicas committed different ops at one number
	checkApplyOrder        = "apply-order"           // Committed not contiguous / state hash diverged
	checkMonotonic         = "monotonic"             // (b) view/log_view/commit went backwards
	checkDurableMonotonic  = "durable-monotonic"     // (b) superblock or snapshot went backwards
	checkRevealedView      = "revealed-view"         // (b) restart came back below a view it had revealed
	checkInternal          = "internal"              // accessor invariants (commit_min <= commit_max, ...)
	checkAckInLog          = "ack-in-log"            // (d) acknowledged request not at its op
	checkExactlyOnce       = "exactly-once"          // (d) metadata request executed twice
	checkTimestamp         = "timestamp"             // prepare timestamps strictly increase along the log
	checkLiveness          = "liveness"              // (e) no progress after heal
	checkConvergence       = "convergence"           // (e) replicas did not reach the same commit after heal
	checkSnapshot          = "snapshot"              // a handed-out snapshot is corrupt or regresses state
	checkContract          = "contract"              // driver contract (Ready shape, constructor errors)
	checkCommitBelowQuorum = "commit-without-quorum" // first commit of an op while durable on fewer than a replication quorum
	checkPersistBeforeSend = "persist-before-send"   // a message revealed a view or prepare not yet durable
	checkUnanswered        = "unanswered-proposal"   // a Propose never got its Reply
	checkCachedReply       = "cached-reply"          // (d) a deduplicated retry replays another op or other bytes
	checkSnapshotAgreement = "snapshot-agreement"    // replicas checkpointing one op made different snapshots
	checkClientTable       = "client-table"          // converged replicas hold different client tables
)

// committedOp is the cluster's record of one committed op number.
type committedOp struct {
	known     bool
	checksum  uint64
	stateHash uint64 // app hash after applying it
	timestamp uint64
	client    consensus.Uint128
	request   uint64
	operation consensus.Operation
	bodySum   uint64
}

// requestRecord is where a metadata request committed and what it replied.
type requestRecord struct {
	op    uint64
	reply []byte
}

type requestKey struct {
	client  consensus.Uint128
	request uint64
}

// replicaWatch is what the checker remembers about one replica.
type replicaWatch struct {
	live                 bool // an incarnation is running
	view, logView        uint32
	commitMin, commitMax uint64
	revealedView         uint32 // highest view in a message it sent (RequestStartView excepted)
	durable              consensus.VsrState
	durableSet           bool
	snapshotOp           uint64
	highestCommitted     uint64 // over all incarnations
	amnesiac             bool   // at the last observation (consensus Amnesiac)
	storageLost          bool   // at the last observation (consensus StorageLost)
}

// groupChecker checks one consensus group's invariants.
type groupChecker struct {
	name    string
	dedup   bool // metadata plane: each (client, request) at most once
	log     []committedOp
	seen    map[requestKey]uint64
	replies map[requestKey]requestRecord // metadata plane: first reply body per request
	// checkpoints: op -> the snapshot (application state and the core's
	// client table) the first replica to checkpoint there made.
	checkpoints map[uint64]consensus.Snapshot
	replicas    []replicaWatch
	report      func(Violation)
	now         *uint64

	// Quorum audit: when an op is committed for the first time anywhere,
	// at least replicationQuorum replicas must hold it durably.
	replicationQuorum int
	durableCopies     func(op, checksum uint64) int

	// excused: ops up to here committed before a quorum-wide power loss
	// and may be replaced once (checker_powerloss.go); lostOps counts
	// the ops a rebase dropped.
	excused     uint64
	lostOps     uint64
	quorumLost  bool
	preLossView uint32
}

func newGroupChecker(name string, n int, dedup bool, now *uint64, report func(Violation)) *groupChecker {
	return &groupChecker{name: name, dedup: dedup, seen: map[requestKey]uint64{}, replies: map[requestKey]requestRecord{}, checkpoints: map[uint64]consensus.Snapshot{}, replicas: make([]replicaWatch, n), report: report, now: now}
}

func (c *groupChecker) fail(replica int, check, format string, args ...any) {
	c.report(Violation{Tick: *c.now, Group: c.name, Replica: replica, Check: check, Detail: fmt.Sprintf(format, args...)})
}

// maxCommitted is the highest op any replica has committed.
func (c *groupChecker) maxCommitted() uint64 { return uint64(len(c.log)) }

func (c *groupChecker) entry(op uint64) *committedOp {
	if op == 0 || op > uint64(len(c.log)) {
		return nil
	}
	e := &c.log[op-1]
	if !e.known {
		return nil
	}
	return e
}

// onCommitted records that replica r applied p, reaching app state hash.
// Checks (a) and (c): one op number, one checksum, cluster-wide and
// across restarts; and equal state hashes after equal ops.
func (c *groupChecker) onCommitted(r int, p *consensus.Prepare, stateHash, bodySum uint64) {
	h := &p.Header
	w := &c.replicas[r]
	for uint64(len(c.log)) < h.Op {
		c.log = append(c.log, committedOp{})
	}
	e := &c.log[h.Op-1]
	if !e.known {
		*e = committedOp{known: true, checksum: h.Checksum, stateHash: stateHash, timestamp: h.Timestamp,
			client: h.Client, request: h.Request, operation: h.Operation, bodySum: bodySum}
		c.checkNeighbours(r, h.Op)
		if c.durableCopies != nil && !c.auditExempt(h) {
			if copies := c.durableCopies(h.Op, h.Checksum); copies < c.replicationQuorum {
				c.fail(r, checkCommitBelowQuorum, "op %d (view %d) committed while durable on %d replicas, replication quorum is %d", h.Op, h.View, copies, c.replicationQuorum)
			}
		}
		if c.dedup && h.Request != 0 && h.Operation != consensus.OperationRegister && h.Operation != consensus.OperationLogout {
			k := requestKey{h.Client, h.Request}
			if prev, dup := c.seen[k]; dup {
				c.fail(r, checkExactlyOnce, "client %x request %d committed at op %d and again at op %d", h.Client.Lo, h.Request, prev, h.Op)
			} else {
				c.seen[k] = h.Op
			}
		}
	} else if e.checksum != h.Checksum && h.Op <= c.excused {
		c.rebase(h.Op)
		c.onCommitted(r, p, stateHash, bodySum)
		return
	} else if e.checksum != h.Checksum {
		check := checkAgreement
		if h.Op <= w.highestCommitted {
			check = checkCommittedChanged
		}
		c.fail(r, check, "op %d committed with checksum %x, cluster has %x", h.Op, h.Checksum, e.checksum)
	} else if e.stateHash != stateHash {
		c.fail(r, checkApplyOrder, "state hash after op %d is %x, cluster has %x", h.Op, stateHash, e.stateHash)
	}
	if h.Op > w.highestCommitted {
		w.highestCommitted = h.Op
	}
}

// checkNeighbours verifies the hash chain and timestamps against the
// committed ops either side of a newly learnt op.
func (c *groupChecker) checkNeighbours(r int, op uint64) {
	e := c.entry(op)
	if prev := c.entry(op - 1); prev != nil && op > 1 && prev.timestamp >= e.timestamp {
		c.fail(r, checkTimestamp, "op %d timestamp %d not above op %d timestamp %d", op, e.timestamp, op-1, prev.timestamp)
	}
	if next := c.entry(op + 1); next != nil && e.timestamp >= next.timestamp {
		c.fail(r, checkTimestamp, "op %d timestamp %d not below op %d timestamp %d", op, e.timestamp, op+1, next.timestamp)
	}
}

// onSnapshotInstalled checks a state-transfer snapshot against the log.
func (c *groupChecker) onSnapshotInstalled(r int, op, stateHash, appliedBefore uint64) {
	if op < appliedBefore {
		c.fail(r, checkSnapshot, "installed snapshot at op %d below applied op %d", op, appliedBefore)
	}
	if e := c.entry(op); e != nil && e.stateHash != stateHash {
		c.fail(r, checkSnapshot, "snapshot at op %d has state hash %x, cluster has %x", op, stateHash, e.stateHash)
	}
	w := &c.replicas[r]
	if op > w.highestCommitted {
		w.highestCommitted = op
	}
}

// onAck checks (d): a request acknowledged as committed at op sits there.
func (c *groupChecker) onAck(r int, client consensus.Uint128, request uint64, operation consensus.Operation, bodySum, op uint64) {
	e := c.entry(op)
	if e == nil {
		c.fail(r, checkAckInLog, "client %x request %d acknowledged at op %d, which no replica committed", client.Lo, request, op)
		return
	}
	if e.client != client || e.request != request || e.operation != operation || e.bodySum != bodySum {
		c.fail(r, checkAckInLog, "client %x request %d (operation %d) acknowledged at op %d, which holds client %x request %d (operation %d)",
			client.Lo, request, operation, op, e.client.Lo, e.request, e.operation)
	}
}

// onSent records the highest view a replica revealed in a message.
func (c *groupChecker) onSent(r int, m *consensus.Message) {
	if m.Kind == consensus.MsgRequestStartView {
		return // exempt from persist-before-send (spec §3.7)
	}
	w := &c.replicas[r]
	if m.View > w.revealedView {
		w.revealedView = m.View
	}
}

// onSuperblock checks (b) on durable state: superblock fields never regress.
func (c *groupChecker) onSuperblock(r int, sb consensus.VsrState) {
	w := &c.replicas[r]
	if sb.LogView > sb.View {
		c.fail(r, checkInternal, "superblock log_view %d > view %d", sb.LogView, sb.View)
	}
	if w.durableSet {
		d := w.durable
		// An amnesiac forgets commit numbers from before its power loss
		// when it adopts a view (consensus forgetAmnesiacCommits), and so
		// does a replica whose storage was lost.
		commitDown := sb.CommitMax < d.CommitMax && !d.Amnesiac && !w.storageLost
		if sb.View < d.View || sb.LogView < d.LogView || commitDown || sb.CheckpointOp < d.CheckpointOp {
			c.fail(r, checkDurableMonotonic, "superblock went from %+v to %+v", d, sb)
		}
	}
	w.durable, w.durableSet = sb, true
}

// onSnapshotDurable checks the durable snapshot op never regresses.
func (c *groupChecker) onSnapshotDurable(r int, op uint64) {
	w := &c.replicas[r]
	if op < w.snapshotOp {
		c.fail(r, checkDurableMonotonic, "durable snapshot went from op %d to op %d", w.snapshotOp, op)
	}
	w.snapshotOp = op
}

// onCrash forgets the in-memory incarnation.
func (c *groupChecker) onCrash(r int) { c.replicas[r].live = false }

// onRestart checks what a restarted replica came back with (b).
func (c *groupChecker) onRestart(r int, g consensus.Group) {
	w := &c.replicas[r]
	view := g.View()
	if view < w.revealedView {
		c.fail(r, checkRevealedView, "restarted in view %d below view %d it had revealed", view, w.revealedView)
	}
	if w.durableSet && (view < w.durable.View || g.LogView() < w.durable.LogView) {
		c.fail(r, checkMonotonic, "restarted in view %d/log_view %d below durable %d/%d", view, g.LogView(), w.durable.View, w.durable.LogView)
	}
	if g.CommitMin() < w.snapshotOp {
		c.fail(r, checkMonotonic, "restarted with commit_min %d below its durable snapshot op %d", g.CommitMin(), w.snapshotOp)
	}
	w.live = false
	c.observe(r, g)
}

// observe runs every tick on a live replica: (b) within an incarnation
// view, log_view, commit_min and commit_max never go backwards, and the
// accessors satisfy their invariants.
func (c *groupChecker) observe(r int, g consensus.Group) {
	w := &c.replicas[r]
	view, logView, cmin, cmax := g.View(), g.LogView(), g.CommitMin(), g.CommitMax()
	amnesiac, storageLost := false, false
	if a, ok := g.(amnesiacReporter); ok {
		amnesiac = a.Amnesiac()
	}
	if l, ok := g.(storageLostReporter); ok {
		storageLost = l.StorageLost()
	}
	if w.live {
		commitDown := cmax < w.commitMax && !w.amnesiac && !w.storageLost // see onSuperblock
		if view < w.view || logView < w.logView || cmin < w.commitMin || commitDown {
			c.fail(r, checkMonotonic, "view/log_view/commit_min/commit_max went from %d/%d/%d/%d to %d/%d/%d/%d",
				w.view, w.logView, w.commitMin, w.commitMax, view, logView, cmin, cmax)
		}
	}
	if logView > view {
		c.fail(r, checkInternal, "log_view %d > view %d", logView, view)
	}
	if cmin > cmax {
		c.fail(r, checkInternal, "commit_min %d > commit_max %d", cmin, cmax)
	}
	w.live, w.view, w.logView, w.commitMin, w.commitMax = true, view, logView, cmin, cmax
	w.amnesiac, w.storageLost = amnesiac, storageLost
}

// amnesiacReporter is a core that reports power-loss amnesia.
type amnesiacReporter interface{ Amnesiac() bool }

// storageLostReporter is a core that reports a replica restarted with its
// storage lost, until it holds a view's log again.
type storageLostReporter interface{ StorageLost() bool }

// onRecordReply remembers the first reply body the application produced
// for a metadata request (every replica must produce the same).
func (c *groupChecker) onRecordReply(client consensus.Uint128, request, op uint64, body []byte) {
	k := requestKey{client, request}
	if _, ok := c.replies[k]; !ok {
		c.replies[k] = requestRecord{op: op, reply: body}
	}
}

// onCachedReply checks (d) for a deduplicated retry: it names the op the
// request first committed at and replays that op's reply bytes.
func (c *groupChecker) onCachedReply(r int, client consensus.Uint128, request, op uint64, cached []byte) {
	rec, ok := c.replies[requestKey{client, request}]
	if !ok {
		c.fail(r, checkCachedReply, "client %x request %d answered from cache, but it never committed", client.Lo, request)
		return
	}
	if rec.op != op || string(rec.reply) != string(cached) {
		c.fail(r, checkCachedReply, "client %x request %d committed at op %d with reply %x; the cached answer says op %d with %x",
			client.Lo, request, rec.op, rec.reply, op, cached)
	}
}

// onCheckpoint checks that every replica checkpointing at one op hands
// consensus the same snapshot bytes: the application state and the
// core's client table must be functions of the committed log alone.
func (c *groupChecker) onCheckpoint(r int, s consensus.Snapshot) {
	if prev, ok := c.checkpoints[s.Op]; ok {
		if prev.Checksum != s.Checksum {
			c.fail(r, checkSnapshotAgreement, "checkpoint at op %d differs from another replica's: %s", s.Op, describeDiff(prev.Data, s.Data))
		}
		return
	}
	c.checkpoints[s.Op] = s
}

// describeDiff says where two snapshots first differ (the first 16 bytes
// are the application state, the rest the core's client table).
func describeDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	part := "application state"
	if i >= 16 {
		part = fmt.Sprintf("client table byte %d", i-16)
	}
	lo, hiA, hiB := max(0, i-8), min(len(a), i+24), min(len(b), i+24)
	return fmt.Sprintf("first difference in %s (lengths %d vs %d): ...%x... vs ...%x...", part, len(a), len(b), a[lo:hiA], b[lo:hiB])
}
