package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// traceHash folds every event of a run (deliveries, attempts, outcomes,
// crashes, writes, fetches) into one hash: the same seed must give the
// same hash (TestNodeSimIsDeterministic).
type traceHash struct {
	h   xxh3.Hasher
	buf []byte
	n   uint64
}

func (t *traceHash) add(kind string, vals ...uint64) {
	t.buf = append(t.buf[:0], kind...)
	for _, v := range vals {
		t.buf = binary.LittleEndian.AppendUint64(t.buf, v)
	}
	_, _ = t.h.Write(t.buf)
	t.n++
}

func (t *traceHash) sum() uint64 { return t.h.Sum64() }

// run drives the world for steps steps with faults, then heals it and
// runs until every replica caught up (at most healSteps), then checks.
func (w *simWorld) run(steps, healSteps uint64) error {
	w.clients = w.newClients()
	w.ledger = newSimLedger()
	for ; w.step < steps && w.failure == nil; w.step++ {
		w.advance(true)
		w.faultStep()
	}
	w.heal()
	converged := false
	for i := uint64(0); i < healSteps && w.failure == nil; i, w.step = i+1, w.step+1 {
		w.advance(false)
		if w.step%simTickSteps == 0 && w.converged() {
			converged = true
			break
		}
	}
	for _, n := range w.nodes {
		w.stats.SyncFailures += n.mem.Stats().SyncFailures
		w.stats.NoSpace += n.mem.Stats().NoSpace
	}
	if w.failure != nil {
		return w.failure
	}
	if !converged {
		lost, amnesiac := 0, 0
		for _, n := range w.nodes {
			switch {
			case !n.up:
			case n.entry.storageLost:
				lost++
			case n.stillAmnesiac():
				amnesiac++
			}
		}
		if lost > 0 && lost+amnesiac > (len(w.nodes)-1)/2 {
			// More replicas lost storage (a damaged WAL, a wipe) or, with
			// them, unsynced writes (a power loss) than the group tolerates:
			// the ops only they held may be gone. A storage-lost replica
			// never votes before a primary answers, and amnesiacs elect
			// among themselves only when they alone are too many, so no
			// primary may be elected without an operator. Waiting is the
			// safe outcome; the run's own checks held until here.
			w.stats.QuorumLost++
			return nil
		}
		if w.onlyCopyRotted() {
			// Two faults on one range: rot damaged a replica's copy, and no
			// other replica holds it intact (a power loss took unsynced
			// records of a replicated topic, an amnesiac gave back the
			// records past its checkpoint, cutPastCheckpoint). No replica
			// can repair it or transfer it; waiting for an operator is the
			// safe outcome.
			w.stats.OnlyCopyRotted++
			return nil
		}
		if w.beyondBudget {
			// More replicas than the group tolerates were compromised at
			// once earlier in the run: ops it knows committed may be on no
			// replica any more, and a merge does not decide below a commit
			// a voter reports (it would cut acknowledged data), so it waits
			// for an operator (finding 32, as the metadata simulator's
			// StalledBeyondBudget). The run's own checks held until here.
			w.stats.StalledBeyondBudget++
			return nil
		}
		err := fmt.Errorf("no convergence %d steps after the heal: %s", healSteps, w.describe())
		if w.keepGoing {
			// A broken build's test wants every checker's word, the final
			// comparison of the replicas' logs and files included.
			w.fail(err)
			return w.check()
		}
		return err
	}
	return w.check()
}

// advance is one step of virtual time: deliveries, client work, the
// shards' queues, durable writes reporting back, a tick every 10 ms.
func (w *simWorld) advance(newRequests bool) {
	w.now += simStepMicros
	w.stats.Steps++
	w.deliverDue()
	w.clientsStep(newRequests)
	w.pumpAll()
	w.finishWrites()
	w.pumpAll()
	if w.step%simTickSteps == 0 {
		w.tick()
		w.pumpAll()
	}
	w.pollStep()
	if w.step%simRetentionSteps == 0 {
		// The retention job: each primary proposes the cut its log's
		// retention allows; the cut is ordered in the group's log.
		for _, n := range w.nodes {
			if n.up {
				n.entry.proposeRetention(w.now, w.topic)
			}
		}
	}
	if w.step%simScrubSteps == 0 {
		w.scrubStep()
	}
	w.metadataStep()
	w.purgeStep()
	w.recreateStep()
	w.debugStates()
	w.finishDying()
	w.reopenWantedGroups()
	w.watchFences()
	for _, n := range w.nodes {
		if !n.up && n.restartAt != 0 && w.now >= n.restartAt {
			n.restartAt = 0
			if err := w.boot(n); err != nil {
				n.up, n.plane, n.entry = false, nil, nil
				if errors.Is(err, journal.ErrSuperblockLogDamaged) && n.mem.Stats().SyncFailures > 0 {
					// A failed fsync lost part of a superblock log append
					// that a later record of the same append survived: the
					// boot refuses, and the documented remedy is the
					// operator's: wipe the node's data, it rejoins by
					// state transfer (docs/simulator.md, known limit).
					w.debugf("node %d: %v: wiped", n.id, err)
					w.stats.Wipes++
					n.wiped = true
					if err := n.mem.RemoveAll(n.dir); err != nil {
						w.fail(fmt.Errorf("node %d: wipe: %w", n.id, err))
						continue
					}
					if err := n.mem.SyncDir("/"); err != nil && w.faults {
						n.restartAt = w.now + 1_000_000
						continue
					}
					n.restartAt = w.now + simStepMicros
					continue
				}
				if !w.bootMayFail() {
					w.fail(err)
					continue
				}
				// An injected fsync failure or a full disk may stop a boot
				// (the node exits and an operator starts it again): retry,
				// faults end at the heal.
				w.debugf("node %d boot failed: %v", n.id, err)
				w.stats.BootFailures++
				n.restartAt = w.now + 1_000_000
			}
		}
	}
}

// simRetentionSteps: the retention job's period (1 s of virtual time).
const simRetentionSteps = 1000

// The scrub job: every simulated second, this many bytes per node (the
// node's default is 16 MiB/s; the simulated logs are small).
const (
	simScrubSteps = 1000
	simScrubBytes = 256 << 10
)

// scrubStep runs each running node's scrub job, as the node schedules it:
// damage it finds is repaired with a peer's copy (scrubTurn,
// repairDamaged). Only bit rot and torn writes (a power loss, a death
// inside a write) damage a verified log: elsewhere a find is a bug.
func (w *simWorld) scrubStep() {
	for _, n := range w.nodes {
		if !n.up || n.dying || n.entry == nil || n.entry.log == nil {
			continue
		}
		found := n.scrub.found
		n.plane.scrubTurn(&n.scrub, simScrubBytes)
		if n.scrub.found > found {
			w.damageFound(n, "the scrubber")
		}
	}
}

// damageFound counts damage a read or the scrubber found in node n's log.
func (w *simWorld) damageFound(n *simNode, by string) {
	w.stats.DamageFound++
	w.trace.add("damage-found", uint64(n.id))
	w.debugf("node %d: %s found damage", n.id, by)
	if w.sc.bitRotRate == 0 && w.stats.PowerLosses == 0 && w.stats.MidWriteDeaths == 0 {
		w.fail(fmt.Errorf("node %d: %s found damage in its log, and no byte rotted nor write tore in this seed", n.id, by))
	}
}

// rotStep flips a stored byte of a random segment file of a random node
// (bit rot: its current and durable content), with the seed's chance.
func (w *simWorld) rotStep() {
	if w.sc.bitRotRate == 0 || w.rotRng.Float64() >= w.sc.bitRotRate {
		return
	}
	n := w.nodes[w.rotRng.IntN(len(w.nodes))]
	f, at, ok := w.flipRandomByte(n, "*.log", w.rotRng)
	if !ok {
		return
	}
	w.stats.BitRot++
	w.trace.add("bitrot", uint64(n.id), uint64(at))
	w.debugf("bit rot on node %d: %s byte %d", n.id, f, at)
}

// faultyDisks: fsync failures are being injected.
func (w *simWorld) faultyDisks() bool { return w.sc.syncFailRate > 0 && w.faults }

// bootMayFail: injected disk faults (failed fsyncs, a full disk) may stop a boot.
func (w *simWorld) bootMayFail() bool { return w.faultyDisks() || (w.sc.noSpaceRate > 0 && w.faults) }

// debugStates (with -nodesim.debug) prints each node's group state when
// it changes: view, log view, status, op, commits, log end, appliedNext,
// storage lost (node, core), amnesia, fence.
func (w *simWorld) debugStates() {
	if !*nodeSimDebug {
		return
	}
	for _, n := range w.nodes {
		if !n.up || n.entry == nil || n.entry.group == nil || n.entry.log == nil {
			continue
		}
		g := n.entry.group
		amnesiac := false
		if a, ok := g.(interface{ Amnesiac() bool }); ok {
			amnesiac = a.Amnesiac()
		}
		st := fmt.Sprintf("view %d lv %d status %d op %d commit %d/%d next %d applied %d lost %v/%v amnesiac %v fenced %v", g.View(),
			g.LogView(), g.Status(), g.Op(), g.CommitMin(), g.CommitMax(), n.entry.log.NextOffset(), n.entry.appliedNext, n.entry.storageLost,
			g.StorageLost(), amnesiac, n.entry.fence.fenced())
		if st != n.lastState {
			n.lastState = st
			w.debugf("state node %d %s", n.id, st)
		}
	}
}

// reopenWantedGroups reopens, as the plane's reopen does in the
// background, a group a failed fsync fenced (partition_fsync_failed.go):
// it starts from a fresh WAL and rejoins StorageLost; or one whose log a
// read or the scrubber found damaged (reopenDamaged): the open sets the
// damage aside and the group refills it from its peers. An open that fails
// (an injected fsync failure) stops the node, as a failed boot would.
func (w *simWorld) reopenWantedGroups() {
	for _, n := range w.nodes {
		e := n.reopenWanted
		n.reopenWanted = nil
		if e == nil || !n.up || e != n.entry {
			continue
		}
		w.stats.Reopens++
		w.trace.add("reopen", uint64(n.id))
		w.debugf("reopen node %d (a failed fsync, or damage found)", n.id)
		e.shard.do(func() { e.shard.closeGroup(e) })
		n.plane.mu.Lock()
		delete(n.plane.entries, w.key)
		n.plane.mu.Unlock()
		ne := n.plane.open(w.key, w.desired(false))
		// A new incarnation of the group, as after a restart: its consumer
		// offsets start from the checkpoint's again (the replay moves them
		// on), and requests to the old one have been answered.
		n.boots++
		n.entry, n.fencedSince = ne, 0
		if ne.log == nil || ne.group == nil {
			w.debugf("node %d reopen failed: %v", n.id, ne.quarantine)
			w.crash(n, false)
			n.restartAt = w.now + 1_000_000
			continue
		}
		n.plane.syncWatermarks(ne, w.desired(false).part) // afterOpen
	}
}

// simDyingMicrosMax bounds how long a dying process runs (100 ms).
const simDyingMicrosMax = 100_000

// finishDying ends the dying processes whose cut came, or whose time is
// up (simDyingMicrosMax): what their file operations did before the cut
// stays (the page cache keeps it), what failed after it never happened.
func (w *simWorld) finishDying() {
	for _, n := range w.nodes {
		if !n.dying || (!n.mem.PoweredOff() && w.now < n.dyingUntil) {
			continue
		}
		w.crash(n, false) // ends the death: the cut may have landed inside its file operations
	}
}

// watchFences restarts a node whose group stayed fenced (a failed fsync
// fences it until a restart) for a second, as an operator would.
func (w *simWorld) watchFences() {
	for _, n := range w.nodes {
		if !n.up {
			continue
		}
		if !n.entry.fence.fenced() {
			n.fencedSince = 0
			continue
		}
		if n.fencedSince == 0 {
			n.fencedSince = w.now
		} else if w.now-n.fencedSince > 1_000_000 {
			w.crash(n, false)
			n.restartAt = w.now + 100_000
		}
	}
}

// faultStep may crash a node, cut the network or move the metadata
// primary (leadership alignment follows it).
func (w *simWorld) faultStep() {
	sc := w.sc
	w.rotStep()
	if sc.crashEvery > 0 && w.rng.Uint64N(sc.crashEvery) == 0 {
		n := w.nodes[w.rng.IntN(len(w.nodes))]
		if n.up && !n.dying {
			power := w.rng.Float64() < sc.powerLoss
			if power && !sc.persisted && !w.othersIntact(n) {
				// Under `replicated` an acknowledgement survives the power
				// loss of fewer nodes than a quorum (docs/durability.md):
				// one node at a time, while the others run intact.
				power = false
			}
			if !power && w.deathRng.IntN(2) == 0 {
				// Half the process crashes land inside the node's next file
				// operations: a write torn at a page (a WAL write cut after
				// its truncation record, a segment append cut short), a WAL
				// written without its superblock record.
				ops := w.deathRng.IntN(24)
				n.mem.KillAfter(ops)
				n.dying, n.dyingUntil = true, w.now+simDyingMicrosMax
				w.trace.add("dying", uint64(n.id), uint64(ops))
				w.debugf("node %d dies after %d more file operations", n.id, ops)
			} else {
				w.crash(n, power)
			}
			n.restartAt = w.now + 50_000 + w.rng.Uint64N(3_000_000)
		}
	}
	if w.healAt != 0 && w.now >= w.healAt {
		w.healNetwork()
	}
	if sc.partitionRate > 0 && w.healAt == 0 && w.rng.Float64() < sc.partitionRate {
		w.stats.Partitions++
		isolated := w.rng.IntN(len(w.nodes))
		oneWay := w.rng.IntN(2) == 0
		for o := range w.nodes {
			if o != isolated {
				w.cut[isolated][o] = true
				if !oneWay {
					w.cut[o][isolated] = true
				}
			}
		}
		w.healAt = w.now + 200_000 + w.rng.Uint64N(5_000_000)
		w.trace.add("partition", uint64(isolated), b2u(oneWay))
	}
	if sc.alignRate > 0 && w.rng.Float64() < sc.alignRate {
		if to := uint8(w.rng.IntN(len(w.nodes))); to != w.alignTo && w.nodes[to].up {
			w.moveMetadataPrimary(to)
		}
	}
}

// metadataStep simulates the metadata group's failure detection: when its
// primary's node is down or cannot exchange messages with a majority, a
// heartbeat timeout later the metadata group is led by an up node that
// can.
func (w *simWorld) metadataStep() {
	if w.reachesMajority(w.nodes[w.alignTo]) {
		w.metaMoveAt = 0
		return
	}
	if w.metaMoveAt == 0 {
		w.metaMoveAt = w.now + simMetadataTimeoutMicros
		return
	}
	if w.now < w.metaMoveAt {
		return
	}
	for i := 1; i < len(w.nodes); i++ {
		if cand := w.nodes[(int(w.alignTo)+i)%len(w.nodes)]; w.reachesMajority(cand) {
			w.moveMetadataPrimary(cand.id)
			return
		}
	}
}

// reachesMajority: n is up and exchanges messages both ways with enough
// up nodes to form a majority with itself.
func (w *simWorld) reachesMajority(n *simNode) bool {
	if !n.up {
		return false
	}
	joined := 1
	for _, o := range w.nodes {
		if o != n && o.up && !w.cut[n.id][o.id] && !w.cut[o.id][n.id] {
			joined++
		}
	}
	return 2*joined > len(w.nodes)
}

// simMetadataTimeoutMicros: how long the simulated metadata group takes
// to replace a lost primary (about its heartbeat timeout).
const simMetadataTimeoutMicros = 500_000

// othersIntact: every node but n is up and has not lost power since its
// group last held a primary's log (up, Normal, and its group neither
// amnesiac nor storage-lost: an adopted amnesiac is Normal before its
// journal holds the log again; seed 9332 lost a second node's power then
// and with it committed `replicated` ops no page cache held any more).
func (w *simWorld) othersIntact(n *simNode) bool {
	for _, o := range w.nodes {
		if o == n {
			continue
		}
		if !o.up || o.entry.group == nil || o.entry.group.Status() != consensus.StatusNormal || o.stillAmnesiac() {
			return false
		}
	}
	return true
}

func (n *simNode) stillAmnesiac() bool {
	if _, err := n.mem.Stat(path.Join(n.entry.dir, amnesiaMarkerFile)); err == nil {
		return true
	}
	g := n.entry.group
	if a, ok := g.(interface{ Amnesiac() bool }); ok && a.Amnesiac() {
		return true
	}
	return g.StorageLost()
}

func (w *simWorld) healNetwork() {
	for a := range w.cut {
		for b := range w.cut[a] {
			w.cut[a][b] = false
		}
	}
	w.healAt = 0
	w.trace.add("heal")
}

// heal ends every fault: the network joins, crashed nodes boot, fsyncs
// stop failing.
func (w *simWorld) heal() {
	w.faults = false
	w.healNetwork()
	for _, n := range w.nodes {
		n.mem.SetFaults(vfs.Faults{})
		if !n.up {
			n.restartAt = w.now + simStepMicros
		}
	}
}

// converged: every node up, no client request pending, every replica's
// group normal in one view, with the same commit, all applied, the same
// log end, and nothing left to write.
func (w *simWorld) converged() bool {
	for _, c := range w.clients {
		if c.pending != nil {
			return false
		}
	}
	var view uint32
	var commit, next uint64
	for i, n := range w.nodes {
		if !n.up || n.entry.group == nil || n.entry.fence.fenced() {
			return false
		}
		g := n.entry.group
		// Every op of the log committed too: a new primary's pipeline of
		// ops the view change kept re-earns its quorum (seed 40566 checked
		// while an acknowledged store sat there, uncommitted on the new
		// primary, and took it for lost).
		if g.Status() != consensus.StatusNormal || len(n.plane.shards[0].inlineDone) > 0 || g.CommitMin() != g.CommitMax() ||
			g.Op() != g.CommitMax() {
			return false
		}
		// Nothing admitted and still waiting: a primary holds new proposals
		// (metadata's purge among them) for up to a second while its
		// reservation settles before a hand-over (seed 49132 checked while
		// the purge sat there and took it for never carried out).
		if len(n.entry.backlog) > 0 {
			return false
		}
		if i == 0 {
			view, commit, next = g.View(), g.CommitMax(), n.entry.log.NextOffset()
		} else if g.View() != view || g.CommitMax() != commit || n.entry.log.NextOffset() != next {
			return false
		}
	}
	// Damage the scrubber has not reached yet: a whole pass over every
	// replica's log, as the job would make sooner or later.
	for _, n := range w.nodes {
		if w.damagedLog(n) {
			return false
		}
	}
	return true
}

// onlyCopyRotted: some up replica's log holds damage after the heal that
// no other up replica holds an intact copy of.
func (w *simWorld) onlyCopyRotted() bool {
	found := false
	for _, n := range w.nodes {
		if !n.up {
			continue
		}
		var cursor partitions.ScrubCursor
		for {
			res, err := n.entry.log.Scrub(cursor, 1<<30)
			if err != nil || res.Wrapped && res.Damage == nil {
				break
			}
			if d := res.Damage; d != nil {
				if w.intactElsewhere(n, d.Offset) {
					return false // repairable: a real stall
				}
				found = true
			}
			if res.Wrapped {
				break
			}
			cursor = res.Next
		}
	}
	return found
}

// intactElsewhere: another up replica of the same epoch serves offset
// intact.
func (w *simWorld) intactElsewhere(n *simNode, offset uint64) bool {
	for _, o := range w.nodes {
		if o == n || !o.up || o.entry.log == nil || o.entry.revision != n.entry.revision ||
			o.entry.marker.PurgeGeneration != n.entry.marker.PurgeGeneration {
			continue
		}
		if records, _, err := o.entry.log.ReadRecords(nil, offset, offset+1, 1); err == nil && len(records) > 0 {
			return true
		}
	}
	return false
}

// damagedLog scrubs node n's whole log; damage it finds is repaired, as
// the scrub job's would be.
func (w *simWorld) damagedLog(n *simNode) bool {
	var cursor partitions.ScrubCursor
	for {
		res, err := n.entry.log.Scrub(cursor, 1<<30)
		if err != nil {
			return true
		}
		if res.Damage != nil {
			w.damageFound(n, "the final scrub")
			n.plane.repairDamaged(n.entry, res.Damage)
			return true
		}
		if res.Wrapped {
			return false
		}
		cursor = res.Next
	}
}

func (w *simWorld) describe() string {
	var b strings.Builder
	for _, n := range w.nodes {
		if !n.up {
			fmt.Fprintf(&b, "[node %d down] ", n.id)
			continue
		}
		g := n.entry.group
		fmt.Fprintf(&b, "[node %d view %d status %d op %d commit %d/%d next %d fenced %v writes %d] ", n.id, g.View(), g.Status(),
			g.Op(), g.CommitMin(), g.CommitMax(), n.entry.log.NextOffset(), n.entry.fence.fenced(), len(n.plane.shards[0].inlineDone))
	}
	for _, c := range w.clients {
		if c.pending != nil {
			fmt.Fprintf(&b, "[client %d request %d attempts %d] ", c.index, c.pending.request&^dedupRequestFlag, c.pending.attempts)
		}
	}
	return b.String()
}

// check compares every replica with the ledger and with each other.
func (w *simWorld) check() error {
	var errs []error
	var first map[string][]byte
	for i, n := range w.nodes {
		if n.entry == nil {
			// Down after a failed boot (a broken build's run goes on to
			// the checks without converging): nothing of it to read.
			errs = append(errs, fmt.Errorf("node %d is down: its files are not checked", n.id))
			continue
		}
		// Every acknowledged message at its offset, every request at most
		// once (exactly once when acknowledged), every polled message
		// where the poll saw it.
		seen := map[string]uint64{}
		atOffset := map[uint64]string{}
		records, err := readWholeLog(n.entry.log)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: read its log: %w", n.id, err))
			continue
		}
		if err := forEachMessage(records, func(off uint64, payload []byte) {
			name := payloadName(payload)
			if prev, dup := seen[name]; dup {
				errs = append(errs, fmt.Errorf("node %d: message %s at offsets %d and %d (applied twice)", n.id, name, prev, off))
			}
			seen[name] = off
			atOffset[off] = name
		}); err != nil {
			errs = append(errs, fmt.Errorf("node %d: its records: %w", n.id, err))
		}
		// Every purge metadata asked for, carried out; what the log holds
		// is the last purge epoch's.
		epoch := simEpoch(n.entry.revision, n.entry.marker.PurgeGeneration)
		if g := n.entry.marker.PurgeGeneration; g != w.purgeWanted {
			errs = append(errs, fmt.Errorf("node %d carried out purge generation %d, metadata wants %d", n.id, g, w.purgeWanted))
		}
		kept := n.entry.log.Stats().FirstOffset // below it: cut by retention, in every replica's log alike
		if w.beyondBudget {
			kept = ^uint64(0) // what was acknowledged or polled may be gone (noteCompromised)
		}
		for k, name := range w.ledger.offsetOwner {
			if off := k[1]; k[0] == epoch && off >= kept {
				if got, ok := atOffset[off]; !ok || got != name {
					errs = append(errs, fmt.Errorf("node %d: acknowledged %s at offset %d holds %q", n.id, name, off, got))
				}
			}
		}
		for k, name := range w.ledger.polled {
			if off := k[1]; k[0] == epoch && off >= kept {
				if got := atOffset[off]; got != name {
					errs = append(errs, fmt.Errorf("node %d: a poll saw %s at offset %d, the log holds %q", n.id, name, off, got))
				}
			}
		}
		// Consumer offsets: at least the last acknowledged store of the
		// epoch, never a value no client asked for.
		for _, c := range w.clients {
			v, _ := n.entry.log.ConsumerOffset(c.consumerKind(), c.index+1)
			acked := w.ledger.storeAcked[[2]uint64{epoch, uint64(c.index)}]
			if (v < acked && !w.beyondBudget) || v > w.ledger.storeAsked[c.index] {
				errs = append(errs, fmt.Errorf("node %d: consumer %d's offset %d; acknowledged %d, highest asked %d",
					n.id, c.index+1, v, acked, w.ledger.storeAsked[c.index]))
			}
		}
		// Byte-identical segment files across the replicas.
		files, err := w.segmentFiles(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if i == 0 {
			first = files
			continue
		}
		if !maps2Equal(first, files) {
			errs = append(errs, fmt.Errorf("node %d's segment files differ from node 0's: %s", n.id, diffFiles(first, files)))
		}
		if len(errs) > 20 {
			break
		}
	}
	return errors.Join(errs...)
}

// readWholeLog reads every stored record of a log (ReadRecords answers a
// segment at a time and steps over recorded holes).
func readWholeLog(l partitionStore) ([]byte, error) {
	var all []byte
	from, next := l.Stats().FirstOffset, l.NextOffset()
	for from < next {
		records, end, err := l.ReadRecords(nil, from, next, 1<<30)
		if err != nil {
			return nil, fmt.Errorf("from offset %d: %w", from, err)
		}
		if end <= from {
			return nil, fmt.Errorf("no progress reading from offset %d (end %d)", from, end)
		}
		all = append(all, records...)
		from = end
	}
	return all, nil
}

// segmentFiles reads a replica's segment and index files (what must be
// identical on every replica) by name.
func (w *simWorld) segmentFiles(n *simNode) (map[string][]byte, error) {
	files, err := segmentFilesIn(n.mem, n.entry.dir)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", n.id, err)
	}
	return files, nil
}

// segmentFilesIn reads the segment, index and lost-range files of a
// partition directory by name.
func segmentFilesIn(fsys *vfs.Mem, dir string) (map[string][]byte, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	files := map[string][]byte{}
	for _, de := range entries {
		name := de.Name()
		if !strings.HasSuffix(name, ".log") && !strings.HasSuffix(name, ".index") && !strings.HasSuffix(name, ".lost") {
			continue
		}
		if name == storageLostMarkerFile {
			continue // the replica's own rejoin state, not a hole in its log
		}
		b, err := fsys.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path.Join(dir, name), err)
		}
		files[name] = b
	}
	return files, nil
}

func maps2Equal(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func diffFiles(a, b map[string][]byte) string {
	var names []string
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []string
	for _, k := range names {
		x, okA := a[k]
		y, okB := b[k]
		switch {
		case !okA || !okB:
			out = append(out, fmt.Sprintf("%s only on one (%v/%v)", k, okA, okB))
		case !bytes.Equal(x, y):
			out = append(out, fmt.Sprintf("%s: %d vs %d bytes", k, len(x), len(y)))
		}
	}
	return strings.Join(out, "; ")
}
