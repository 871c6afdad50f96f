package node

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
)

// Partition planes in the metadata simulator (half of the seeds,
// metaSimScenario.partitions): each node also runs the real partition
// plane, wired to its metadata driver as Run wires it — the plane follows
// every applied command (Node.applyCommitted → reconcileAfter), opens
// partitions only once the metadata group caught up (the gate), aligns
// partition primaries with the metadata primary and wakes resting groups
// on metadata view changes. Shards and openers run inline. Topics,
// partitions, purges and deletions come from metadata commands; producers
// and readers of messages from metasim_messages_test.go. After the heal every
// node serves exactly the partitions metadata holds, at their revision and
// purge generation, and holds no other partition directory.

// metaSimSegmentDivisor scales the topics' segments (1-8 MiB in metadata)
// down to 4-32 KiB, and their size bounds with them (metaSimWorld.retention).
const metaSimSegmentDivisor = 256

// metaSimPartitionsMax bounds the partitions the workload keeps (each is a
// consensus group on every node).
const metaSimPartitionsMax = 12

// bootPlane starts node n's partition plane on its disk, as Run does: the
// boot record (a power loss marks the groups amnesiac), the superblock
// log, then the gate until the metadata group caught up.
func (w *metaSimWorld) bootPlane(n *metaSimNode, nd *Node, d *driver, storageLost bool) error {
	cfg := partitionGroupConfig{prepareQueueDepth: 8, journalSlots: 64, broken: w.broken.part}
	p := newPartitionPlane(w.log, n.dir, 1, cfg, nd.topo, w.cfg.Cluster)
	p.useFS(n.mem)
	p.random = w.rng.Uint64
	p.reopenInline = func(e *partitionEntry) { n.reopenWanted = append(n.reopenWanted, e) }
	p.storageLost = storageLost
	p.partitionsLost.Store(storageLost)
	p.segmentDivisor = metaSimSegmentDivisor
	p.files = partitions.NewFileCache(partitions.OpenFilesMin*4, w.log)
	if _, err := startBoot(n.mem, n.dir, p.root, w.log); err != nil {
		return fmt.Errorf("node %d boot record: %w", n.id, err)
	}
	if _, err := p.openSuperblockLog(n.dir); err != nil {
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	sh := p.shards[0]
	sh.inline = true
	sh.clock = metaSimClock{w}
	sh.records = metaSimRecords{w: w, self: n.id}
	sh.alignTo = nd.metadataAlignTarget
	sh.purged = func(*partitionEntry, uint64, uint64) {
		if w.msgs != nil {
			w.msgs.events++ // an epoch moved under the sends in flight
		}
	}
	sh.connected = func(r uint8) bool { return w.connected(n.id, r) }
	sh.restAfterTicks = 3 * clampTicks(w.cfg.Cluster.Ticks().CommitBroadcastIntervalTicks)
	sh.restHeartbeatTicks = restHeartbeatTicksOf(w.cfg.Cluster.Ticks())
	p.peers.set(&metaSimBus{w: w, from: n.id}, n.id)
	p.gated = true
	d.caughtUp = func() {
		p.gateOpen.Store(true)
		p.reconcile(nd.state)
	}
	d.viewChanged = p.metadataViewChanged
	nd.plane = p
	n.plane = p
	n.peerReturn = newPeerReturn(func(r uint8) bool { return w.connected(n.id, r) }, n.id, w.sc.nodes, p.wakePartitions)
	p.reconcile(nd.state) // gated: a no-op until the metadata group caught up
	return nil
}

// planeWork runs every up node's inline plane: queued opens (the openers),
// the shard's queue, durable writes reporting back (half of them per
// step), reopens a fence or damage asked for, and the shard's queue again.
func (w *metaSimWorld) planeWork() {
	for _, n := range w.nodes {
		if !n.up || n.plane == nil {
			continue
		}
		w.guard(n, func() {
			p := n.plane
			for {
				j, ok := p.opens.tryPop()
				if !ok {
					break
				}
				p.afterOpen(p.open(j.k, j.d))
				w.stats.PartitionOpens++
				w.trace.add("open", uint64(n.id), uint64(j.k.stream)<<40|uint64(j.k.topic)<<20|uint64(j.k.partition))
				w.noteCompromised(j.k, j.d.part.CreatedRevision)
			}
			sh := p.shards[0]
			sh.pump()
			for n.up && len(sh.inlineDone) > 0 && w.rng.IntN(2) == 0 {
				sh.finishInlineWrite()
			}
			sh.pump()
			w.reopenWanted(n)
			select {
			case err := <-p.fatal:
				// A partition fence outlived superblock_wedged_fatal_timeout
				// (a poisoned superblock log fences every group until a
				// restart): the process exits, a supervisor restarts it.
				w.stats.Wedged++
				w.debugf("node %d exits: %v", n.id, err)
				w.crash(n, false)
				n.restartAt = w.now + 1_000_000
			default:
			}
		})
	}
}

// reopenWanted reopens, as the plane's reopen does in the background, the
// groups a failed fsync fenced or whose log a read found damaged.
func (w *metaSimWorld) reopenWanted(n *metaSimNode) {
	wanted := n.reopenWanted
	n.reopenWanted = nil
	for _, e := range wanted {
		p := n.plane
		if p == nil || p.entry(e.key) != e {
			continue
		}
		d, ok := p.desiredOf(e.key)
		if !ok || d.part.CreatedRevision != e.revision {
			continue // removed or re-created: reconcile moves it
		}
		w.stats.Reopens++
		w.trace.add("reopen", uint64(n.id))
		e.shard.do(func() { e.shard.closeGroup(e) })
		p.mu.Lock()
		delete(p.entries, e.key)
		p.mu.Unlock()
		p.afterOpen(p.open(e.key, d))
	}
}

// tickPlane is the shard's tick and the driver's watch of its peers'
// connections (peer_return.go).
func (w *metaSimWorld) tickPlane(n *metaSimNode) {
	if n.plane == nil {
		return
	}
	n.plane.shards[0].onTick()
	n.peerReturn.check()
}

// deliverPartitionFrame hands a partition group's frame to its shard.
func (w *metaSimWorld) deliverPartitionFrame(n *metaSimNode, m consensus.Message) {
	if n.plane == nil {
		w.fail(fmt.Errorf("frame for partition group %d reached node %d, which runs no partitions", m.Group, n.id))
		return
	}
	if e := n.plane.entryByGroup(m.Group); e != nil && e.log != nil {
		e.shard.deliver(e, m)
	}
}

// partitionCount is the partitions metadata holds on the first up node.
func (w *metaSimWorld) partitionCount() int {
	for _, n := range w.nodes {
		if n.up {
			_, keys := n.streamsOf()
			return len(keys)
		}
	}
	return 0
}

// noteCompromised (after a group opened) records a group of which more
// replicas than it tolerates are compromised at once: storage lost, or
// unsynced writes lost (amnesiac after a power loss). An election among
// them may drop acknowledged data, as the whole-node simulator's
// noteCompromised says; a group in that state may also never settle
// (metaSimWorld.stalledBeyondBudget).
func (w *metaSimWorld) noteCompromised(k partitionKey, revision uint64) {
	compromised := 0
	for _, n := range w.nodes {
		if !n.up || n.plane == nil {
			continue
		}
		e := n.plane.entry(k)
		if e == nil || e.revision != revision || e.group == nil {
			continue
		}
		amnesiac := false
		if a, ok := e.group.(interface{ Amnesiac() bool }); ok {
			amnesiac = a.Amnesiac()
		}
		if e.storageLost || amnesiac || e.group.StorageLost() {
			compromised++
		}
	}
	if compromised > (len(w.nodes)-1)/2 {
		key := [2]uint64{k.groupID(), revision}
		if !w.beyondBudget[key] {
			w.beyondBudget[key] = true
			w.stats.BeyondBudget++
			w.debugf("partition %v revision %d: %d of %d replicas compromised at once: beyond the group's budget", k, revision, compromised, len(w.nodes))
		}
	}
}

// partitionsSettled: every node serves exactly the partitions its
// metadata holds, each group normal with everything committed applied,
// nothing queued to open or reopen, and every replica of a group at one
// op (a backup an idle group's primary left behind catches up: a resting
// group wakes when a peer's connection returns). Their views may differ:
// a backup of an idle group whose primary kept its node through view
// changes hears of the view only with the next write.
func (w *metaSimWorld) partitionsSettled() bool {
	groups := map[partitionKey]uint64{}
	for _, n := range w.nodes {
		if n.plane == nil {
			continue
		}
		p := n.plane
		if !p.gateOpen.Load() || len(n.reopenWanted) > 0 || len(p.shards[0].inlineDone) > 0 {
			return false
		}
		p.mu.Lock()
		opening := len(p.opening)
		p.mu.Unlock()
		if opening > 0 {
			return false
		}
		want := w.desiredPartitions(n)
		if len(want) != len(p.entries) {
			return false
		}
		for k, d := range want {
			e := p.entries[k]
			if e == nil || e.revision != d.part.CreatedRevision || e.log == nil || e.group == nil || e.fence.fenced() {
				return false
			}
			g := e.group
			if g.Status() != statusNormal || g.CommitMin() != g.CommitMax() || g.Op() != g.CommitMax() {
				return false
			}
			if e.marker.PurgeGeneration != d.part.PurgeGeneration {
				return false
			}
			if prev, ok := groups[k]; ok && prev != g.Op() {
				return false
			}
			groups[k] = g.Op()
		}
	}
	return true
}

// describePartitions says, for a liveness failure, what keeps the
// partitions from settling (the first few differences).
func (w *metaSimWorld) describePartitions() string {
	var out []string
	for _, n := range w.nodes {
		if n.plane == nil || !n.up {
			continue
		}
		p := n.plane
		if !p.gateOpen.Load() {
			out = append(out, fmt.Sprintf("node %d: gate closed", n.id))
			continue
		}
		want := w.desiredPartitions(n)
		for k, d := range want {
			e := p.entries[k]
			switch {
			case e == nil:
				_, opening := p.opening[k]
				out = append(out, fmt.Sprintf("node %d %v: not served (opening %v)", n.id, k, opening))
			case e.revision != d.part.CreatedRevision:
				out = append(out, fmt.Sprintf("node %d %v: revision %d, metadata %d", n.id, k, e.revision, d.part.CreatedRevision))
			case e.log == nil || e.group == nil:
				out = append(out, fmt.Sprintf("node %d %v: quarantined: %v", n.id, k, e.quarantine))
			case e.marker.PurgeGeneration != d.part.PurgeGeneration:
				out = append(out, fmt.Sprintf("node %d %v: purge generation %d, metadata %d (view %d %v primary %v commit %d/%d op %d fenced %v)",
					n.id, k, e.marker.PurgeGeneration, d.part.PurgeGeneration, e.group.View(), e.group.Status(), e.group.IsPrimary(),
					e.group.CommitMin(), e.group.CommitMax(), e.group.Op(), e.fence.fenced()))
			default:
				g := e.group
				if g.Status() != statusNormal || g.CommitMin() != g.CommitMax() || g.Op() != g.CommitMax() || e.fence.fenced() {
					amnesiac := false
					if a, ok := g.(interface{ Amnesiac() bool }); ok {
						amnesiac = a.Amnesiac()
					}
					out = append(out, fmt.Sprintf("node %d %v: view %d lv %d %v commit %d/%d op %d fenced %v lost %v/%v amnesiac %v", n.id, k, g.View(),
						g.LogView(), g.Status(), g.CommitMin(), g.CommitMax(), g.Op(), e.fence.fenced(), e.storageLost, g.StorageLost(), amnesiac))
				}
			}
		}
		for k := range p.entries {
			if _, ok := want[k]; !ok {
				out = append(out, fmt.Sprintf("node %d %v: served, metadata does not hold it", n.id, k))
			}
		}
	}
	// Replicas of one group at different ops.
	seen := map[partitionKey]map[uint8]uint64{}
	for _, n := range w.nodes {
		if n.plane == nil || !n.up {
			continue
		}
		for k, e := range n.plane.entries {
			if e.group == nil {
				continue
			}
			if seen[k] == nil {
				seen[k] = map[uint8]uint64{}
			}
			seen[k][n.id] = e.group.Op()
		}
	}
	for k, byNode := range seen {
		for _, op := range byNode {
			if op != byNode[w.nodes[0].id] {
				out = append(out, fmt.Sprintf("%v: replicas at different ops %v", k, byNode))
				break
			}
		}
	}
	if w.msgs != nil {
		for _, pr := range w.msgs.producers {
			if s := pr.pending; s != nil {
				out = append(out, fmt.Sprintf("producer %d: request %d to %v pending after %d attempts", pr.index, s.request&^dedupRequestFlag, s.key, s.attempts))
			}
		}
	}
	sort.Strings(out)
	if len(out) > 12 {
		out = append(out[:12], fmt.Sprintf("(%d more)", len(out)-12))
	}
	return strings.Join(out, "; ")
}

// desiredPartitions is what node n's metadata holds.
func (w *metaSimWorld) desiredPartitions(n *metaSimNode) map[partitionKey]desiredPartition {
	want := map[partitionKey]desiredPartition{}
	streams, _ := n.streamsOf()
	for _, s := range streams {
		for _, t := range s.Topics {
			for _, part := range t.Partitions {
				want[partitionKey{s.ID, t.ID, part.ID}] = n.plane.desiredPartitionOf(t, part)
			}
		}
	}
	return want
}

// checkPartitions (after the heal) checks every node's partition
// directories against its metadata: one per partition metadata holds,
// none other, each carrying the partition's revision and purge generation.
func (w *metaSimWorld) checkPartitions() {
	if w.sc.partitions {
		w.stats.PartitionsAtEnd = uint64(w.partitionCount())
	}
	for _, n := range w.nodes {
		if n.plane == nil {
			continue
		}
		want := w.desiredPartitions(n)
		dirs, err := partitionDirsUnder(n.mem, filepath.Join(n.dir, "streams"))
		if err != nil {
			w.fail(fmt.Errorf("node %d: list partition directories: %w", n.id, err))
			continue
		}
		wantDirs := map[string]partitionKey{}
		for k := range want {
			wantDirs[n.plane.partitionDir(k)] = k
		}
		var extra []string
		for _, dir := range dirs {
			if _, ok := wantDirs[dir]; !ok {
				extra = append(extra, dir)
			}
			delete(wantDirs, dir)
		}
		var missing []string
		for dir := range wantDirs {
			missing = append(missing, dir)
		}
		sort.Strings(missing)
		if len(extra) > 0 || len(missing) > 0 {
			w.fail(fmt.Errorf("after the heal node %d holds partition directories metadata does not (%s) and lacks ones it does (%s)",
				n.id, strings.Join(extra, ", "), strings.Join(missing, ", ")))
			continue
		}
		for k, d := range want {
			e := n.plane.entries[k]
			if e == nil {
				w.fail(fmt.Errorf("after the heal node %d does not serve partition %v (revision %d), though its directory is there",
					n.id, k, d.part.CreatedRevision))
				continue
			}
			if e.marker.Revision != d.part.CreatedRevision || e.marker.PurgeGeneration != d.part.PurgeGeneration {
				w.fail(fmt.Errorf("after the heal node %d partition %v is at revision %d purge generation %d, metadata says %d and %d",
					n.id, k, e.marker.Revision, e.marker.PurgeGeneration, d.part.CreatedRevision, d.part.PurgeGeneration))
			}
		}
	}
}

// metaSimRecords serves a state transfer's record fetches from the peer's
// plane at once, when the network joins both ways.
type metaSimRecords struct {
	w    *metaSimWorld
	self uint8
}

func (r metaSimRecords) fetchRecords(_ context.Context, peer uint8, group, epoch, from, end uint64, bytesMax uint32) (fetchedRecords, error) {
	w := r.w
	pn := w.nodes[peer]
	if !w.connected(r.self, peer) || !w.connected(peer, r.self) || pn.plane == nil {
		return fetchedRecords{}, errTransferNoPeer
	}
	req := bus.Fetch{Kind: bus.FetchRequest, From: r.self, Group: group, Offset: from, EndOffset: end, BytesMax: bytesMax,
		PurgeGeneration: epoch}
	reply := fetchReply(req, pn.plane.serveFetch(req, w.frameMax), peer)
	return fetchedRecordsOf(reply), nil
}
