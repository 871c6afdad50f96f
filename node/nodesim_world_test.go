package node

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/vfs"
)

// The whole-node deterministic simulator, first slice (issue 13 point 1):
// the real partition plane of N nodes (shards, consensus groups, prepare
// WALs, superblock logs, segment files, dedup windows, offset
// reservations, state transfer, leadership alignment and resting) in one
// goroutine. Each node's files live on its own vfs.Mem; replica messages
// go through the real codec over a simulated network with latency, loss
// and partitions; time is virtual. Shards run inline (partitionShard.inline):
// the simulator pumps their queues, ticks them every 10 ms of virtual time
// and finishes their durable writes after a drawn disk latency. Not yet
// simulated: the metadata group and its loop, client sessions (the
// workload proposes to the shards directly, as the send path does), the
// background jobs.

// simScenario is what a seed draws: the cluster, the topic and the faults.
type simScenario struct {
	nodes         int
	persisted     bool // topic durability (and consumer offsets) persisted
	segmentBytes  uint64
	journalSlots  uint32
	queueDepth    uint32
	latencyMinUs  uint64
	latencyMaxUs  uint64
	dropRate      float64
	writeDoneRate float64 // chance per step that a pending durable write reports back
	crashEvery    uint64  // mean steps between crashes (0: none)
	powerLoss     float64 // share of crashes that are power losses
	partitionRate float64 // chance per step that a network partition starts
	alignRate     float64 // chance per step that the metadata primary moves
	syncFailRate  float64 // Mem fsync failure chance
	noSpaceRate   float64 // Mem chance that a write finds the disk full (ENOSPC)
	bitRotRate    float64 // chance per step that a stored byte of a segment file flips
	orderedCrash  bool    // unsynced writes survive as an ordered prefix
	// Retention (the job every simulated second): the topic's size bound
	// and message expiry (0: none).
	maxTopicBytes uint64
	expiryMicros  uint64
	purgeRate     float64 // chance per step that metadata purges the topic
	recreateRate  float64 // chance per step that metadata deletes the topic and creates it again
}

func drawScenario(rng *rand.Rand) simScenario {
	sc := simScenario{
		nodes:         3,
		persisted:     rng.IntN(2) == 0,
		segmentBytes:  uint64(4096 << rng.IntN(4)),
		journalSlots:  uint32(32 << rng.IntN(2)),
		queueDepth:    uint32(4 << rng.IntN(2)),
		latencyMinUs:  100,
		latencyMaxUs:  uint64(500 + rng.IntN(5000)),
		dropRate:      []float64{0, 0.01, 0.05}[rng.IntN(3)],
		writeDoneRate: []float64{0.2, 0.5, 1}[rng.IntN(3)],
		crashEvery:    uint64([]int{0, 3000, 8000}[rng.IntN(3)]),
		powerLoss:     []float64{0, 0.5}[rng.IntN(2)],
		partitionRate: []float64{0, 0.0005}[rng.IntN(2)],
		alignRate:     []float64{0, 0.0002, 0.002}[rng.IntN(3)],
		orderedCrash:  rng.IntN(2) == 0,
	}
	if rng.IntN(4) == 0 {
		sc.nodes = 5
	}
	if rng.IntN(4) == 0 {
		sc.syncFailRate = 0.0005
	}
	switch rng.IntN(4) {
	case 0:
		sc.maxTopicBytes = uint64(64<<10) << rng.IntN(3)
	case 1:
		sc.expiryMicros = uint64(5+rng.IntN(30)) * 1_000_000
	}
	return sc
}

// simFrame is one replica frame in flight.
type simFrame struct {
	at       uint64 // virtual µs of delivery
	seq      uint64
	from, to uint8
	frame    []byte
}

type simFrames []simFrame

func (q simFrames) Len() int { return len(q) }
func (q simFrames) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simFrames) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simFrames) Push(x any)   { *q = append(*q, x.(simFrame)) }
func (q *simFrames) Pop() any {
	old := *q
	f := old[len(old)-1]
	*q = old[:len(old)-1]
	return f
}

// simLinks is the frames in flight between simulated nodes (the whole-node
// and the metadata simulators): delivered by time, then in send order,
// with a bound per directed pair.
type simLinks struct {
	net      simFrames
	seq      uint64
	inFlight map[[2]uint8]int
}

// full: the pair's queue is at its bound.
func (l *simLinks) full(from, to uint8) bool {
	return l.inFlight[[2]uint8{from, to}] >= simQueuePerPair
}

// push queues a frame for delivery at virtual µs at.
func (l *simLinks) push(at uint64, from, to uint8, frame []byte) {
	if l.inFlight == nil {
		l.inFlight = map[[2]uint8]int{}
	}
	l.inFlight[[2]uint8{from, to}]++
	l.seq++
	heap.Push(&l.net, simFrame{at: at, seq: l.seq, from: from, to: to, frame: frame})
}

// due takes the next frame due by now, if any.
func (l *simLinks) due(now uint64) (simFrame, bool) {
	if len(l.net) == 0 || l.net[0].at > now {
		return simFrame{}, false
	}
	f := heap.Pop(&l.net).(simFrame)
	l.inFlight[[2]uint8{f.from, f.to}]--
	return f, true
}

// simNode is one node: its disk survives crashes, its plane does not.
type simNode struct {
	id    uint8
	mem   *vfs.Mem
	dir   string
	plane *partitionPlane
	entry *partitionEntry
	up    bool
	boots int
	// restartAt: virtual µs when a crashed node boots again.
	restartAt uint64
	// fencedSince: when the node's group was first seen fenced (0: not).
	fencedSince uint64
	// reopenWanted: a failed fsync fenced this group, or a read or the
	// scrubber found damage in its log; the world reopens it at the end of
	// the step (the plane's reopen, done inline).
	reopenWanted *partitionEntry
	scrub        scrubState  // the node's scrub job (every simulated second)
	peers        *peerReturn // the driver's watch of its peers' connections
	lastState    string      // debugStates
	// wiped: the node's data was wiped; its next boot finds its metadata
	// storage lost, as the node decides from its peers (storage_lost.go).
	wiped bool
	// dying: the process dies after the file operations vfs.Mem.KillAfter
	// allows it (inside a write, which keeps a prefix of whole pages, or
	// between a WAL write and its superblock record), at the end of that
	// step, or at dyingUntil if it did not use them up by then; it runs
	// until then.
	dying      bool
	dyingUntil uint64
}

// simWorld is one seed's run.
type simWorld struct {
	seed uint64
	rng  *rand.Rand
	// deathRng draws which process crashes land inside a write, apart
	// from rng so that the other faults of a seed stay where they were.
	deathRng *rand.Rand
	rotRng   *rand.Rand // bit rot: whether a seed has it, and where it lands
	purgeRng *rand.Rand // purges: whether a seed has them, and when
	// purgeWanted: the partition's purge generation in (simulated) metadata.
	purgeWanted uint64
	recreateRng *rand.Rand // topic re-creations: whether a seed has them, and when
	// revision: the partition's incarnation in (simulated) metadata (its
	// CreatedRevision; a re-created topic has a new one).
	revision   uint64
	sc         simScenario
	now        uint64 // virtual µs
	step       uint64
	log        *slog.Logger
	codec      *bus.Codec
	clusterCfg config.ClusterConfig
	frameMax   uint64 // record bytes one fetch reply carries
	topic      metadata.Topic
	key        partitionKey
	nodes      []*simNode
	links      simLinks
	cut        [][]bool // cut[a][b]: frames from a to b are lost
	healAt     uint64   // virtual µs when the current partition heals (0: none)
	alignTo    uint8    // the simulated metadata primary (metaView % nodes)
	metaView   uint32   // the simulated metadata group's view
	// metaMoveAt: when the simulated metadata group elects a new primary
	// after losing its own (0: not pending).
	metaMoveAt uint64
	faults     bool // faults may start (off for the final heal)
	clients    []*simClient
	ledger     *simLedger
	stats      simStats
	trace      traceHash
	failure    error
	// broken: the nodes' deliberate bugs (zero: none). keepGoing: a
	// checker's complaint is kept in caught (at most caughtMax) and the
	// run goes on, so that a test sees every checker that fires.
	broken    partitionBreakage
	keepGoing bool
	caught    []error
	// beyondBudget: more replicas than the group tolerates were
	// compromised at once (noteCompromised).
	beyondBudget bool
}

// caughtMax bounds the complaints a keepGoing run keeps.
const caughtMax = 256

// simStats counts what a run did.
type simStats struct {
	Steps, Ticks, Crashes, PowerLosses, Partitions, Aligns, FramesSent, FramesDropped uint64
	Acked, Ambiguous, Refused, Polls, PolledMessages, OffsetStores                    uint64
	SyncFailures, BootFailures, Wipes, QuorumLost, Reopens, WALDamages                int
	// BeyondBudget: runs in which more replicas than the group tolerates
	// were compromised at once (simWorld.noteCompromised).
	BeyondBudget int
	// OnlyCopyRotted: runs that stalled on damage no replica could
	// repair: rot damaged the last intact copy of a range.
	OnlyCopyRotted int
	// StalledBeyondBudget: runs that did not converge after the group went
	// beyond its budget (BeyondBudget): ops known committed may be gone from
	// every replica, and the merge waits for them (finding 32, M10).
	StalledBeyondBudget int
	NoSpace             int // writes refused: disk full
	Purges              int // purge generations metadata asked for
	Recreates           int // topic deletions and re-creations
	// BitRot: stored bytes of segment files flipped; DamageFound: damaged
	// places a poll or the scrubber found (each repaired from a peer, or
	// the partition reopened when no copy fits).
	BitRot, DamageFound int
	// MidWriteDeaths: process crashes that landed between two of the
	// node's file operations of one step (simNode.dying).
	MidWriteDeaths int
}

const (
	simStepMicros   = 1000 // one step is 1 ms of virtual time
	simTickSteps    = 10   // a tick every 10 steps
	simStartMicros  = 1_700_000_000_000_000
	simQueuePerPair = 1024
)

func newSimWorld(seed uint64) (*simWorld, error) {
	return newBrokenSimWorld(seed, partitionBreakage{})
}

// newBrokenSimWorld is newSimWorld on nodes with deliberate bugs
// (partition_broken.go), for the checkers' own tests.
func newBrokenSimWorld(seed uint64, broken partitionBreakage) (*simWorld, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sc := drawScenario(rng)
	// Full disks come from a stream of their own, so every other seed
	// keeps the scenario and trace it had before they were simulated.
	if rand.New(rand.NewPCG(seed^0x6e6f7370616365, seed)).IntN(4) == 0 {
		sc.noSpaceRate = 0.0005
	}
	// So does bit rot (since 2026-12-03), with its draws.
	rotRng := rand.New(rand.NewPCG(seed^0x626974726f74, seed))
	if rotRng.IntN(4) == 0 {
		sc.bitRotRate = 0.0001
	}
	// And purges (since 2026-12-03): a third of the seeds, about one every
	// 20 s of virtual time.
	purgeRng := rand.New(rand.NewPCG(seed^0x7075726765, seed))
	if purgeRng.IntN(3) == 0 {
		sc.purgeRate = 0.00005
	}
	// And topic re-creations: a quarter of the seeds, about one every 30 s.
	recreateRng := rand.New(rand.NewPCG(seed^0x7265637265617465, seed))
	if recreateRng.IntN(4) == 0 {
		sc.recreateRate = 1.0 / 30_000
	}
	defaults, err := config.Defaults()
	if err != nil {
		return nil, err
	}
	w := &simWorld{
		seed: seed, rng: rng, sc: sc, now: simStartMicros,
		deathRng:    rand.New(rand.NewPCG(seed^0x6d69647772697465, seed)),
		rotRng:      rotRng,
		purgeRng:    purgeRng,
		recreateRng: recreateRng,
		revision:    7,
		broken:      broken,
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		clusterCfg:  defaults.Cluster,
		frameMax:    bus.FetchRecordsMax(defaults.MessageBus.MaxMessageSize.Bytes()),
		key:         partitionKey{1, 1, 0},
		faults:      true,
	}
	w.clusterCfg.Name = "nodesim"
	if *nodeSimDebug {
		w.log = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	w.codec = bus.NewCodec(bus.ClusterID(w.clusterCfg.Name))
	durability := metadata.DurabilityReplicated
	if sc.persisted {
		durability = metadata.DurabilityPersisted
	}
	w.topic = metadata.Topic{Options: metadata.TopicOptions{SegmentSize: sc.segmentBytes,
		Durability: durability, ConsumerOffsetDurability: durability},
		MaxTopicSize: metadata.Never, MessageExpiry: metadata.Never}
	if sc.maxTopicBytes > 0 {
		w.topic.MaxTopicSize = sc.maxTopicBytes
	}
	if sc.expiryMicros > 0 {
		w.topic.MessageExpiry = sc.expiryMicros
	}
	w.cut = make([][]bool, sc.nodes)
	for i := range w.cut {
		w.cut[i] = make([]bool, sc.nodes)
	}
	for i := 0; i < sc.nodes; i++ {
		mem := vfs.NewMem(seed*31 + uint64(i))
		if sc.orderedCrash {
			mem.SetCrashModel(vfs.CrashModel{Ordered: true, Torn: 0.5})
		}
		n := &simNode{id: uint8(i), mem: mem, dir: fmt.Sprintf("/node%d", i)}
		if err := simWriteBootID(mem, 1); err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, n)
	}
	for _, n := range w.nodes {
		if err := w.boot(n); err != nil {
			return nil, err
		}
	}
	// Faulty fsyncs only after every node's first boot wrote its files.
	if sc.syncFailRate > 0 || sc.noSpaceRate > 0 {
		for _, n := range w.nodes {
			n.mem.SetFaults(w.diskFaults())
		}
	}
	return w, nil
}

// diskFaults is what the nodes' disks inject: the seed's faults, none
// after the heal.
func (w *simWorld) diskFaults() vfs.Faults {
	if !w.faults {
		return vfs.Faults{}
	}
	return vfs.Faults{SyncFail: w.sc.syncFailRate, NoSpace: w.sc.noSpaceRate}
}

func simWriteBootID(mem *vfs.Mem, n int) error {
	if err := mem.MkdirAll(filepath.Dir(vfs.BootIDPath), 0o755); err != nil {
		return err
	}
	return vfs.WriteFile(mem, vfs.BootIDPath, []byte(fmt.Sprintf("00000000-0000-0000-0000-%012d\n", n)), 0o444)
}

// boot starts a node's partition plane on its disk, as the node does: the
// boot record first (a power loss marks the groups amnesiac), then the
// superblock log, then the partition.
func (w *simWorld) boot(n *simNode) error {
	cfg := partitionGroupConfig{prepareQueueDepth: w.sc.queueDepth, journalSlots: w.sc.journalSlots, broken: w.broken}
	p := newPartitionPlane(w.log, n.dir, 1, cfg, topology{clustered: true, self: n.id, count: uint8(w.sc.nodes)}, w.clusterCfg)
	p.useFS(n.mem)
	p.random = w.rng.Uint64
	p.reopenInline = func(e *partitionEntry) { n.reopenWanted = e }
	p.storageLost = n.wiped
	// Each incarnation its own descriptor cache: a crashed plane's files
	// must never be touched (synced on eviction) by the next one.
	p.files = partitions.NewFileCache(partitions.OpenFilesMin*4, w.log)
	if _, err := startBoot(n.mem, n.dir, p.root, w.log); err != nil {
		return fmt.Errorf("node %d boot record: %w", n.id, err)
	}
	if _, err := p.openSuperblockLog(n.dir); err != nil {
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	sh := p.shards[0]
	sh.inline = true
	sh.clock = simClock{w}
	sh.records = simRecords{w: w, self: n.id}
	sh.alignTo = func() (uint8, bool) { return w.alignTo, true }
	sh.connected = func(r uint8) bool { return w.connected(n.id, r) }
	sh.restAfterTicks = 3 * clampTicks(w.clusterCfg.Ticks().CommitBroadcastIntervalTicks)
	sh.restHeartbeatTicks = restHeartbeatTicksOf(w.clusterCfg.Ticks())
	sh.purged = func(e *partitionEntry, generation, op uint64) { w.purgeApplied(n, e, generation, op) }
	p.peers.set(&simBus{w: w, from: n.id}, n.id)
	n.peers = newPeerReturn(func(r uint8) bool { return w.connected(n.id, r) }, n.id, w.sc.nodes, p.wakePartitions)
	n.plane = p
	n.up = true
	e := p.open(w.key, w.desired(n.boots == 0))
	n.boots++
	n.entry = e
	w.debugf("boot node %d (boot %d)", n.id, n.boots)
	n.fencedSince, n.reopenWanted, n.scrub = 0, nil, scrubState{}
	if e.log != nil && e.group != nil {
		n.wiped = false // its groups' storage.lost markers carry it from here
	}
	if e.log == nil || e.group == nil {
		return fmt.Errorf("node %d (boot %d): partition did not open: %v", n.id, n.boots, e.quarantine)
	}
	p.syncWatermarks(e, w.desired(false).part) // as the boot's reconcile does (afterOpen)
	w.noteCompromised()
	return nil
}

// noteCompromised (after a boot) records when more replicas than the
// group tolerates are compromised at once: storage lost (a damaged WAL set
// aside, a wipe) or unsynced writes lost (amnesiac, a power loss). Ops
// only they held may then be gone, and an election among them (the only
// way back without an operator) may drop acknowledged data: the run's
// final check no longer asks for it (finding 20), the rest still holds.
func (w *simWorld) noteCompromised() {
	compromised := 0
	for _, n := range w.nodes {
		if n.up && n.entry != nil && n.entry.group != nil && (n.entry.storageLost || n.stillAmnesiac()) {
			compromised++
		}
	}
	if compromised > (len(w.nodes)-1)/2 && !w.beyondBudget {
		w.beyondBudget = true
		w.stats.BeyondBudget++
		w.debugf("%d of %d replicas compromised at once: beyond the group's budget", compromised, len(w.nodes))
	}
}

// desired is the simulated partition as metadata describes it; live: it
// is being created now (a node's first boot).
func (w *simWorld) desired(live bool) desiredPartition {
	return desiredPartition{topic: w.topic, part: metadata.Partition{CreatedRevision: w.revision, PurgeGeneration: w.purgeWanted}, live: live}
}

// crash stops a node without any orderly step: its plane is dropped, its
// writes not finished. A power loss also loses (or tears) what the disk
// had not synced and changes the machine's boot id.
func (w *simWorld) crash(n *simNode, powerLoss bool) {
	if n.dying {
		// Stopped another way (a fence the operator restarts, a failed
		// reopen) before its armed death: the cut must not carry into the
		// next boot (seed 85: a boot found its disk "powered off").
		n.dying = false
		if n.mem.PoweredOff() {
			w.stats.MidWriteDeaths++
		}
		n.mem.ProcessDied()
	}
	n.up, n.plane, n.entry = false, nil, nil
	w.stats.Crashes++
	if powerLoss {
		w.stats.PowerLosses++
		n.mem.Crash()
		// The kernel's boot id, not the node's write: no injected fault.
		n.mem.SetFaults(vfs.Faults{})
		if err := simWriteBootID(n.mem, 1+int(w.stats.Crashes)); err != nil {
			w.fail(fmt.Errorf("node %d: write boot id: %w", n.id, err))
		}
		n.mem.SetFaults(w.diskFaults())
	}
	w.trace.add("crash", uint64(n.id), b2u(powerLoss))
	w.debugf("crash node %d power=%v", n.id, powerLoss)
	if w.faultyDisks() && w.rng.IntN(20) == 0 {
		w.damageWAL(n)
	}
}

// damageWAL flips a byte of one of the crashed node's prepare WAL files
// (bit rot): its restart finds the WAL damaged, sets it aside and rejoins
// with StorageLost (no vote until the view's primary answers, and no nack
// until it holds the view's log again).
func (w *simWorld) damageWAL(n *simNode) {
	f, _, ok := w.flipRandomByte(n, filepath.Join(partitionWALDir, "*"), w.rng)
	if !ok {
		return
	}
	w.stats.WALDamages++
	w.trace.add("wal-damage", uint64(n.id))
	w.debugf("damage node %d WAL %s", n.id, f)
}

// flipRandomByte flips a random stored byte of a random file matching
// pattern in node n's partition directory, drawing from rng; ok is false
// when there is none (or the flip failed, which fails the run).
func (w *simWorld) flipRandomByte(n *simNode, pattern string, rng *rand.Rand) (file string, at int64, ok bool) {
	dirs, err := partitionDirsUnder(n.mem, filepath.Join(n.dir, "streams"))
	if err != nil || len(dirs) == 0 {
		return "", 0, false
	}
	files, err := vfs.Glob(n.mem, filepath.Join(dirs[0], pattern))
	if err != nil || len(files) == 0 {
		return "", 0, false
	}
	file = files[rng.IntN(len(files))]
	fi, err := n.mem.Stat(file)
	if err != nil || fi.Size() == 0 {
		return "", 0, false
	}
	at = rng.Int64N(fi.Size())
	if err := n.mem.FlipByte(file, at); err != nil {
		w.fail(fmt.Errorf("node %d: flip a byte of %s: %w", n.id, file, err))
		return "", 0, false
	}
	return file, at, true
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (w *simWorld) fail(err error) {
	err = fmt.Errorf("step %d (virtual %s): %w", w.step, time.Duration(w.now-simStartMicros)*time.Microsecond, err)
	if w.keepGoing {
		if len(w.caught) < caughtMax {
			w.caught = append(w.caught, err)
		}
		return
	}
	if w.failure == nil {
		w.failure = err
	}
}

func (w *simWorld) debugf(format string, args ...any) {
	if *nodeSimDebug {
		fmt.Printf("%8d %s\n", w.step, fmt.Sprintf(format, args...))
	}
}

// moveMetadataPrimary simulates a metadata view change to a view led by
// to: every up node's plane hears of it as from its metadata driver
// (resting partition groups wake; those led by the deposed node suspect
// it), and leadership alignment then follows the new primary.
func (w *simWorld) moveMetadataPrimary(to uint8) {
	n := uint32(len(w.nodes))
	old := w.metaView
	next := old + 1
	for next%n != uint32(to) {
		next++
	}
	w.metaView, w.alignTo, w.metaMoveAt = next, to, 0
	w.stats.Aligns++
	for _, nd := range w.nodes {
		if !nd.up {
			continue
		}
		nd.plane.metadataViewChanged(groupStatus{view: old, status: statusNormal}, groupStatus{view: next, status: consensus.StatusViewChange})
		nd.plane.metadataViewChanged(groupStatus{view: next, status: consensus.StatusViewChange}, groupStatus{view: next, status: statusNormal})
	}
	w.trace.add("metadata-view", uint64(next))
	w.debugf("metadata view %d: primary node %d", next, to)
}

// connected: whether from's frames reach to now.
func (w *simWorld) connected(from, to uint8) bool {
	if int(to) >= len(w.nodes) || from == to {
		return false
	}
	return w.nodes[to].up && !w.cut[from][to]
}

// send queues a frame from one node to another with a drawn latency.
func (w *simWorld) send(from, to uint8, frame []byte) {
	w.stats.FramesSent++
	if !w.connected(from, to) || w.links.full(from, to) || w.rng.Float64() < w.sc.dropRate {
		w.stats.FramesDropped++
		return
	}
	lat := w.sc.latencyMinUs + w.rng.Uint64N(w.sc.latencyMaxUs-w.sc.latencyMinUs+1)
	w.links.push(w.now+lat, from, to, frame)
}

// deliverDue hands every frame due by now to its node's shard.
func (w *simWorld) deliverDue() {
	for {
		f, ok := w.links.due(w.now)
		if !ok {
			return
		}
		if !w.connected(f.from, f.to) {
			w.stats.FramesDropped++
			continue
		}
		m, err := w.codec.Decode(f.frame)
		if err != nil {
			w.fail(fmt.Errorf("frame %d->%d does not decode: %w", f.from, f.to, err))
			continue
		}
		m.To = f.to
		n := w.nodes[f.to]
		if e := n.plane.entryByGroup(m.Group); e != nil && e.log != nil {
			e.shard.deliver(e, m)
		}
		op := uint64(0)
		if m.Prepare != nil {
			op = m.Prepare.Header.Op
		}
		w.trace.add("deliver", uint64(f.from)<<8|uint64(f.to), uint64(m.Kind), op)
	}
}

// simClock is the virtual clock of every inline shard.
type simClock struct{ w *simWorld }

func (c simClock) NowMicros() uint64 { return c.w.now }
func (c simClock) NewTicker(time.Duration) loopTicker {
	panic("an inline shard has no ticker: the simulator ticks it")
}

// simBus is one node's end of the simulated network (the real codec).
type simBus struct {
	w    *simWorld
	from uint8
}

var _ bus.Bus = (*simBus)(nil)

func (b *simBus) Send(to uint8, m *consensus.Message) {
	frame, err := b.w.codec.Encode(nil, m)
	if err != nil {
		b.w.fail(fmt.Errorf("node %d: encode %v: %w", b.from, m.Kind, err))
		return
	}
	b.w.send(b.from, to, frame)
}

func (b *simBus) SendShared(to []uint8, m *consensus.Message) {
	for _, t := range to {
		b.Send(t, m)
	}
}
func (b *simBus) SendForward(uint8, *bus.Forward) {}
func (b *simBus) SendFetch(uint8, *bus.Fetch)     {}
func (b *simBus) Connected(to uint8) bool         { return b.w.connected(b.from, to) }
func (b *simBus) Stats() bus.Stats                { return bus.Stats{} }
func (b *simBus) Close() error                    { return nil }

// simRecords serves a state transfer's fetches from the peer's plane at
// once (the same serving code as the bus's fetch handler), when the
// network joins both ways.
type simRecords struct {
	w    *simWorld
	self uint8
}

func (r simRecords) fetchRecords(_ context.Context, peer uint8, group, epoch, from, end uint64, bytesMax uint32) (fetchedRecords, error) {
	w := r.w
	if !w.connected(r.self, peer) || !w.connected(peer, r.self) {
		return fetchedRecords{}, errTransferNoPeer
	}
	req := bus.Fetch{Kind: bus.FetchRequest, From: r.self, Group: group, Offset: from, EndOffset: end, BytesMax: bytesMax,
		PurgeGeneration: epoch}
	reply := fetchReply(req, w.nodes[peer].plane.serveFetch(req, w.frameMax), peer)
	w.trace.add("fetch", uint64(r.self)<<8|uint64(peer), from, reply.EndOffset)
	return fetchedRecordsOf(reply), nil
}

// pump runs every up node's shard over what is queued, until quiet.
func (w *simWorld) pumpAll() {
	for _, n := range w.nodes {
		if n.up {
			w.guard(n, n.plane.shards[0].pump)
		}
	}
}

// guard runs one node's work. A panic fails the seed, as any would; in a
// keepGoing run (a broken build's test) it is a complaint, and the node
// crashes as its process would, to boot again a second later.
func (w *simWorld) guard(n *simNode, work func()) {
	if w.keepGoing {
		defer func() {
			if r := recover(); r != nil {
				w.fail(fmt.Errorf("node %d panicked: %v", n.id, r))
				w.crash(n, false)
				n.restartAt = w.now + 1_000_000
			}
		}()
	}
	work()
}

// finishWrites reports back each pending durable write with the
// scenario's chance (a disk's latency).
func (w *simWorld) finishWrites() {
	for _, n := range w.nodes {
		if !n.up {
			continue
		}
		sh := n.plane.shards[0]
		for n.up && len(sh.inlineDone) > 0 && w.rng.Float64() < w.sc.writeDoneRate {
			w.guard(n, func() { sh.finishInlineWrite() })
			w.trace.add("written", uint64(n.id))
		}
	}
}

func (w *simWorld) tick() {
	w.stats.Ticks++
	for _, n := range w.nodes {
		if n.up {
			w.guard(n, n.plane.shards[0].onTick)
			n.peers.check() // the driver's tick (peer_return.go)
		}
	}
}
