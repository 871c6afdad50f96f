package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/vfs"
)

// The metadata simulator (issue 13 point 1, second slice): the real
// metadata plane of N nodes in one goroutine. Each node runs the real
// driver (inline: the simulator steps, ticks and proposes to it), the real
// metadata storage (WAL, superblock, snapshots) on its own vfs.Mem and the
// real state machine (Node.applyCommitted). Replica messages go through the
// real codec over a simulated network with latency, loss and partitions;
// time is virtual. Clients register sessions and propose stream, topic,
// user and consumer-group commands with stable identities, retrying an
// ambiguous outcome under the same request number. In half the seeds the
// nodes run their partition planes too, with producers and readers of
// messages (metasim_partitions_test.go, metasim_messages_test.go). Not
// simulated here: the bus's status fetch of the settle (the simulator
// reads the peers' positions), forwarding from backups (clients propose
// to the node they take for the primary).

// metaSimScenario is what a seed draws.
type metaSimScenario struct {
	nodes         int
	latencyMinUs  uint64
	latencyMaxUs  uint64
	dropRate      float64
	crashEvery    uint64  // mean steps between crashes (0: none)
	powerLoss     float64 // share of crashes that are power losses
	partitionRate float64 // chance per step that a network partition starts
	syncFailRate  float64 // Mem fsync failure chance
	noSpaceRate   float64 // Mem chance that a write finds the disk full
	orderedCrash  bool    // unsynced writes survive as an ordered prefix
	clients       int
	proposeRate   float64 // chance per step that an idle client proposes
	journalSlots  uint32  // small journals checkpoint (and transfer state) often
	// wedgedTimeout: superblock_wedged_fatal_timeout, after which a node
	// whose metadata storage keeps failing (a poisoned WAL does until the
	// restart rescans it) exits with status 4, to be restarted.
	wedgedTimeout time.Duration
	wipeShare     float64 // share of crashes that replace the node's disk (when allowed)
	rotShare      float64 // share of crashes after which a byte of the node's metadata WAL flips (when allowed)
	// partitions: the nodes run their partition planes too
	// (metasim_partitions_test.go).
	partitions bool
}

func drawMetaScenario(rng *rand.Rand) metaSimScenario {
	sc := metaSimScenario{
		nodes:         3,
		latencyMinUs:  100,
		latencyMaxUs:  uint64(500 + rng.IntN(5000)),
		dropRate:      []float64{0, 0.01, 0.05}[rng.IntN(3)],
		crashEvery:    uint64([]int{0, 2000, 6000}[rng.IntN(3)]),
		powerLoss:     []float64{0, 0.5}[rng.IntN(2)],
		partitionRate: []float64{0, 0.0005, 0.002}[rng.IntN(3)],
		orderedCrash:  rng.IntN(2) == 0,
		clients:       1 + rng.IntN(4),
		proposeRate:   []float64{0.01, 0.05, 0.2}[rng.IntN(3)],
		journalSlots:  uint32(64 << rng.IntN(3)),
		wedgedTimeout: []time.Duration{5 * time.Second, 20 * time.Second}[rng.IntN(2)],
	}
	if rng.IntN(4) == 0 {
		sc.nodes = 5
	}
	if rng.IntN(4) == 0 {
		sc.syncFailRate = 0.0005
	}
	if rng.IntN(4) == 0 {
		sc.noSpaceRate = 0.0005
	}
	return sc
}

// metaSimNode is one node: its disk survives crashes, its loop does not.
type metaSimNode struct {
	id     uint8
	mem    *vfs.Mem
	dir    string
	node   *Node
	driver *driver
	store  *metaStorage
	up     bool
	boots  int
	// restartAt: virtual µs when a crashed node boots again.
	restartAt uint64
	// lastApplied: the op this incarnation applied last (its snapshot's
	// at boot); every apply must be the next op.
	lastApplied uint64
	// plane, reopenWanted, peerReturn: the partition plane of a
	// partitions seed (metasim_partitions_test.go).
	plane        *partitionPlane
	reopenWanted []*partitionEntry
	peerReturn   *peerReturn
	// streamsCache: the node's streams and partition keys at one state
	// revision (streamsOf); the workload asks for them every step.
	streamsCache metaSimStreamsCache
}

type metaSimStreamsCache struct {
	state    *metadata.State
	revision uint64
	streams  []metadata.Stream
	keys     []partitionKey
}

// streamsOf returns the node's streams (sorted by id) and its partition
// keys (sorted), recomputed only when its state or revision changed: a
// committed change bumps the revision, a snapshot install sets it, and a
// boot makes a new State. Callers must not modify what it returns.
func (n *metaSimNode) streamsOf() ([]metadata.Stream, []partitionKey) {
	st := n.node.state
	rev := st.Revision()
	c := &n.streamsCache
	if c.state != st || c.revision != rev || c.streams == nil {
		c.state, c.revision = st, rev
		c.streams = st.Streams()
		c.keys = c.keys[:0:0]
		for _, s := range c.streams {
			for _, t := range s.Topics {
				for _, part := range t.Partitions {
					c.keys = append(c.keys, partitionKey{s.ID, t.ID, part.ID})
				}
			}
		}
		sort.Slice(c.keys, func(i, j int) bool { return c.keys[i].compare(c.keys[j]) < 0 })
	}
	return c.streams, c.keys
}

// metaSimCommitted is the first apply of one op anywhere: every other
// apply of that op, on any replica, must match it.
type metaSimCommitted struct {
	prepare consensus.Prepare
	reply   []byte
	by      uint8
}

// metaSimStats counts what a run did.
type metaSimStats struct {
	Steps, Ticks, Crashes, PowerLosses, Partitions, FramesSent, FramesDropped uint64
	Proposals, Committed, Retries, Ambiguous, Evictions, Registers            uint64
	Applies, Installs, Checkpoints                                            uint64
	FencedSteps, Wedged, WALsSetAside, Wipes, LostRejoins, BitRot, Reopens    uint64
	PrimaryGone                                                               uint64 // backups that suspected a primary whose connection dropped
	// PartitionOpens: partitions opened by the planes (partitions seeds);
	// PartitionsAtEnd: partitions metadata holds after the heal.
	PartitionOpens, PartitionsAtEnd uint64
	// BeyondBudget: partition groups more of whose replicas than they
	// tolerate were compromised at once; StalledBeyondBudget: runs that
	// did not settle only because such groups could not.
	BeyondBudget, StalledBeyondBudget uint64
	// Messages: the producers and readers of a partitions seed
	// (metasim_messages_test.go).
	Messages metaSimMessageStats
}

// metaSimWorld is one seed's run.
type metaSimWorld struct {
	seed     uint64
	rng      *rand.Rand
	sc       metaSimScenario
	now      uint64
	step     uint64
	log      *slog.Logger
	codec    *bus.Codec
	cfg      *config.Config
	identity func(self uint8) journal.Identity
	nodes    []*metaSimNode
	links    simLinks
	frameMax uint64 // record bytes one fetch reply carries
	cut      [][]bool
	healAt   uint64
	faults   bool
	clients  []*metaSimClient
	// committed: op → its first apply; appliedAt: (client, request) → op.
	committed map[uint64]metaSimCommitted
	appliedAt map[[3]uint64]uint64
	// streams, users: names the workload knows were created (acknowledged).
	streams, users []string
	names          uint64
	stats          metaSimStats
	trace          traceHash
	failure        error
	broken         metaSimBreakage
	rotRng         *rand.Rand // where bit rot lands
	keepGoing      bool
	caught         []error
	// msgs: the message workload and its ledger (partitions seeds).
	msgs *metaSimMessages
	// beyondBudget: partition groups (group id, revision) of which more
	// replicas than they tolerate were compromised at once.
	beyondBudget map[[2]uint64]bool
}

// metaSimRootPassword: every simulated cluster's root credentials; the
// hash is computed once (argon2id is slow) and reused for created users.
const metaSimRootPassword = "iggy-sim"

var metaSimRootHash = sync.OnceValues(func() (string, error) {
	return metadata.RootPasswordHash(metaSimClusterName, "iggy", metaSimRootPassword)
})

const metaSimClusterName = "metasim"

// metaSimBreakage: the deliberate bugs of a broken build's run (zero: none).
type metaSimBreakage struct {
	meta metadataBreakage
	part partitionBreakage
}

// metaScenarioOf draws seed's scenario. Wiped disks, partition planes and
// bit rot come from streams of their own, so other seeds kept their
// scenario and trace when each was added; rotRng goes on drawing the rot.
func metaScenarioOf(seed uint64) (sc metaSimScenario, rng, rotRng *rand.Rand) {
	rng = rand.New(rand.NewPCG(seed, seed^0x6d65746173696d))
	sc = drawMetaScenario(rng)
	if rand.New(rand.NewPCG(seed^0x77697065, seed)).IntN(3) == 0 {
		sc.wipeShare = 0.2
	}
	if rand.New(rand.NewPCG(seed^0x706c616e6573, seed)).IntN(2) == 0 {
		sc.partitions = true
	}
	rotRng = rand.New(rand.NewPCG(seed^0x6d657461726f74, seed))
	if rotRng.IntN(4) == 0 {
		sc.rotShare = 0.2
	}
	return sc, rng, rotRng
}

// everyFaultKind: the scenario crashes nodes, damages storage (fsync
// failures, full disks, flipped bytes or replaced disks) and disturbs the
// network (lost frames or partitions).
func (sc metaSimScenario) everyFaultKind() bool {
	crash := sc.crashEvery > 0
	storage := sc.syncFailRate > 0 || sc.noSpaceRate > 0 || sc.rotShare > 0 || sc.wipeShare > 0
	network := sc.dropRate > 0 || sc.partitionRate > 0
	return crash && storage && network
}

func newMetaSimWorld(seed uint64, broken metaSimBreakage) (*metaSimWorld, error) {
	sc, rng, rotRng := metaScenarioOf(seed)
	cfg, err := config.Defaults()
	if err != nil {
		return nil, err
	}
	cfg.Cluster.Name = metaSimClusterName
	cfg.Metadata.JournalSlots = uint64(sc.journalSlots)
	// One superblock_wedged_fatal_timeout for the metadata driver and the
	// partition shards, as a node's configuration gives both.
	cfg.Cluster.SuperblockWedgedFatalTimeout.Duration = sc.wedgedTimeout
	w := &metaSimWorld{
		seed: seed, rng: rng, sc: sc, now: simStartMicros,
		log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		codec:        bus.NewCodec(bus.ClusterID(metaSimClusterName)),
		frameMax:     bus.FetchRecordsMax(cfg.MessageBus.MaxMessageSize.Bytes()),
		cfg:          cfg,
		faults:       true,
		committed:    map[uint64]metaSimCommitted{},
		appliedAt:    map[[3]uint64]uint64{},
		broken:       broken,
		rotRng:       rotRng,
		beyondBudget: map[[2]uint64]bool{},
	}
	if *nodeSimDebug {
		w.log = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	w.identity = func(self uint8) journal.Identity {
		return journal.Identity{ReplicaID: self, ReplicaCount: uint8(sc.nodes), Cluster: bus.ClusterID(metaSimClusterName)}
	}
	w.cut = make([][]bool, sc.nodes)
	for i := range w.cut {
		w.cut[i] = make([]bool, sc.nodes)
	}
	for i := 0; i < sc.nodes; i++ {
		mem := vfs.NewMem(seed*37 + uint64(i))
		if sc.orderedCrash {
			mem.SetCrashModel(vfs.CrashModel{Ordered: true, Torn: 0.5})
		}
		if err := simWriteBootID(mem, 1); err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, &metaSimNode{id: uint8(i), mem: mem, dir: fmt.Sprintf("/node%d", i)})
	}
	for _, n := range w.nodes {
		if err := w.boot(n); err != nil {
			return nil, err
		}
	}
	for _, n := range w.nodes { // faulty disks once every first boot wrote its files
		n.mem.SetFaults(w.diskFaults())
	}
	for i := 0; i < sc.clients; i++ {
		w.clients = append(w.clients, &metaSimClient{
			id: consensus.Uint128{Lo: w.rng.Uint64() | 1, Hi: w.rng.Uint64() &^ (1 << 63)}, target: uint8(w.rng.IntN(sc.nodes))})
	}
	if sc.partitions {
		w.newProducers()
	}
	return w, nil
}

func (w *metaSimWorld) diskFaults() vfs.Faults {
	if !w.faults {
		return vfs.Faults{}
	}
	return vfs.Faults{SyncFail: w.sc.syncFailRate, NoSpace: w.sc.noSpaceRate}
}

// boot opens a node's metadata storage and recovers its group and state,
// as Run does (minus the settle of empty storage: a seed's first boot is
// a new cluster's, and storage is never lost here).
func (w *metaSimWorld) boot(n *metaSimNode) error {
	topo := topology{clustered: true, self: n.id, count: uint8(w.sc.nodes)}
	nd := &Node{cfg: w.cfg, log: w.log, topo: topo, random: w.rng.Uint64, metaBroken: w.broken.meta, fsys: n.mem, dataDir: n.dir}
	store, rec, setAside, err := openMetaStorageSettingAside(n.mem, n.dir, w.identity(n.id), true, w.now, w.log)
	if err != nil {
		return fmt.Errorf("node %d (boot %d): open metadata storage: %w", n.id, n.boots+1, err)
	}
	if setAside {
		w.stats.WALsSetAside++
		w.trace.add("wal-set-aside", uint64(n.id))
		w.debugf("node %d: damaged metadata WAL set aside", n.id)
	}
	settled, _, err := readMetadataSettle(n.mem, n.dir)
	if err != nil {
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	rec.storageLost = settled == metadataLost
	var group *consensus.Replica
	if rec.snapshot == nil {
		if len(rec.entries) > 0 {
			return fmt.Errorf("node %d: %w", n.id, errJournalWithoutSnapshot)
		}
		if n.boots > 0 {
			// Empty storage after the cluster's first boot (a wiped disk):
			// as Run does, unsettled until the peers tell (storage_lost.go).
			if err := writeMetadataSettle(n.mem, n.dir, metadataUnsettled); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			settled = metadataUnsettled
		}
		hash, err := metaSimRootHash()
		if err != nil {
			return err
		}
		nd.state = metadata.NewState()
		if err := nd.state.SeedRoot("iggy", hash); err != nil {
			return err
		}
		if group, err = consensus.New(nd.groupConfig(n.id)); err != nil {
			return err
		}
		if err := nd.writeBootCheckpoint(store); err != nil {
			// A first boot's write failed (a faulty disk): boot again later.
			return fmt.Errorf("node %d: %w", n.id, err)
		}
	} else {
		g, state, err := nd.recover(rec, Options{ReplicaID: n.id})
		if err != nil {
			return fmt.Errorf("node %d (boot %d): %w", n.id, n.boots+1, err)
		}
		group, nd.state = g, state
	}
	n.lastApplied = 0
	if rec.snapshot != nil {
		n.lastApplied = rec.snapshot.Op
	}
	appliedOp, _ := nd.state.LastApplied()
	d := newDriver(w.log, group, store, &metaSimApplier{w: w, n: n, node: nd}, appliedOp)
	d.clock = metaSimClock{w}
	d.fence.timeout = w.sc.wedgedTimeout
	if rec.storageLost {
		d.rejoined = nd.metadataRejoined
	}
	sb := &metaSimBus{w: w, from: n.id}
	d.peers = sb
	nd.bus = sb
	// As Run wires it: a backup suspects a primary whose connection
	// dropped (here: the primary down or cut off from it).
	d.primaryGone = newPrimaryWatch(func(r uint8) bool { return w.connected(n.id, r) }, w.sc.nodes,
		w.cfg.Cluster.HeartbeatTimeout.Duration)
	nd.driver = d
	if settled == metadataUnsettled {
		switch w.peersTell(n) {
		case peersUndecided:
			// settleFreshStorage would keep asking: the node waits, its
			// group not running; the simulator boots it again shortly.
			w.debugf("node %d: empty metadata storage, peers undecided", n.id)
			n.restartAt = w.now + 200_000
			return nil
		case peersHaveHistory:
			g, err := nd.rejoinLostStorage()
			if err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			d.group = g
			w.stats.LostRejoins++
			w.trace.add("rejoin-lost", uint64(n.id))
			w.debugf("node %d: storage lost, rejoining Recovering", n.id)
		case peersFresh:
			if err := writeMetadataSettle(n.mem, n.dir, metadataSettled); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			d.newborn = true
		}
	}
	if w.sc.partitions {
		partitionsLost, err := partitionsLostMarked(n.mem, n.dir)
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		if err := w.bootPlane(n, nd, d, rec.storageLost || d.rejoined != nil || partitionsLost); err != nil {
			return err
		}
	}
	n.node, n.driver, n.store, n.up = nd, d, store, true
	n.boots++
	w.trace.add("boot", uint64(n.id), uint64(n.boots))
	w.debugf("boot node %d (boot %d) snapshot op %d, journal to op %d", n.id, n.boots, n.lastApplied, group.Op())
	w.guard(n, func() { w.ready(n) }) // the recovered journal tail, before anything is served
	return nil
}

// peersTell is what a round of settleFreshStorage learns from the peers
// reachable both ways (settleVerdict on peerHasHistory).
func (w *metaSimWorld) peersTell(n *metaSimNode) peersVerdict {
	fresh, histories := 0, 0
	for _, p := range w.nodes {
		if p == n || !p.up || w.cut[n.id][p.id] || w.cut[p.id][n.id] { // n itself is not up yet
			continue
		}
		if peerHasHistory(p.driver.position()) {
			histories++
		} else {
			fresh++
		}
	}
	return settleVerdict(histories, fresh, consensus.ViewChangeQuorum(len(w.nodes))-1)
}

// wipeAllowed: a node's disk may be replaced only while every other node
// is up, normal and not itself rejoining after lost storage, with every
// partition group open and none storage-lost or amnesiac (as the
// whole-node simulator's othersIntact: seed 11509 wiped a node while
// another had not yet reopened a group that was amnesiac after a power
// loss, and the group's last committed op went with both). Lost storage on more replicas than the group tolerates may
// lose acknowledged ops, which no protocol prevents.
func (w *metaSimWorld) wipeAllowed(n *metaSimNode) bool {
	for _, o := range w.nodes {
		if o == n {
			continue
		}
		if !o.up || o.driver.group.Status() != statusNormal {
			return false
		}
		if s, _, err := readMetadataSettle(o.mem, o.dir); err != nil || s != metadataSettled {
			return false
		}
		if !w.partitionsIntact(o) {
			return false
		}
	}
	return true
}

// partitionsIntact: node o (up) runs no partition plane, or has opened
// every partition its metadata holds, none storage-lost or amnesiac.
func (w *metaSimWorld) partitionsIntact(o *metaSimNode) bool {
	if o.plane == nil {
		return true
	}
	if !o.plane.gateOpen.Load() {
		return false
	}
	for k := range w.desiredPartitions(o) {
		e := o.plane.entry(k)
		if e == nil || e.log == nil || e.storageLost || e.group == nil || e.group.StorageLost() {
			return false
		}
		if a, ok := e.group.(interface{ Amnesiac() bool }); ok && a.Amnesiac() {
			return false
		}
	}
	return true
}

// othersIntact: every node but n is up with its partitions intact. Under
// `replicated` an acknowledgement survives the power loss of fewer nodes
// than a quorum (docs/durability.md): a partitions seed loses one node's
// power at a time, as the whole-node simulator does, so that groups go
// beyond their budget only rarely (noteCompromised).
func (w *metaSimWorld) othersIntact(n *metaSimNode) bool {
	for _, o := range w.nodes {
		if o != n && (!o.up || !w.partitionsIntact(o)) {
			return false
		}
	}
	return true
}

// wipe replaces a crashed node's disk with an empty one.
func (w *metaSimWorld) wipe(n *metaSimNode) {
	n.mem = vfs.NewMem(w.seed*37 + uint64(n.id) + 1000*uint64(w.stats.Wipes+1))
	if w.sc.orderedCrash {
		n.mem.SetCrashModel(vfs.CrashModel{Ordered: true, Torn: 0.5})
	}
	if err := simWriteBootID(n.mem, 1000+int(w.stats.Wipes)); err != nil {
		w.fail(fmt.Errorf("node %d: write boot id: %w", n.id, err))
	}
	n.mem.SetFaults(w.diskFaults())
	w.stats.Wipes++
	w.trace.add("wipe", uint64(n.id))
	w.debugf("wipe node %d", n.id)
}

// rot flips a random stored byte of one of a crashed node's metadata
// files (bit rot): a WAL segment (its restart sets the WAL aside and
// rejoins as storage lost), a superblock copy (the other stands in when it
// is provably newer, else the directory goes aside) or the snapshot (the
// directory goes aside and the node settles as on a replaced disk;
// storage_damaged.go).
func (w *metaSimWorld) rot(n *metaSimNode) {
	var segs []string
	for _, pattern := range []string{"journal-*.wal", "superblock*", "snapshot.bin"} {
		found, err := vfs.Glob(n.mem, n.dir+"/metadata/"+pattern)
		if err != nil {
			return
		}
		segs = append(segs, found...)
	}
	if len(segs) == 0 {
		return
	}
	f := segs[w.rotRng.IntN(len(segs))]
	fi, err := n.mem.Stat(f)
	if err != nil || fi.Size() == 0 {
		return
	}
	at := w.rotRng.Int64N(fi.Size())
	if err := n.mem.FlipByte(f, at); err != nil {
		w.fail(fmt.Errorf("node %d: flip a byte of %s: %w", n.id, f, err))
		return
	}
	w.stats.BitRot++
	w.trace.add("rot", uint64(n.id), uint64(at))
	w.debugf("rot node %d %s byte %d", n.id, f, at)
}

// crash drops a node's loop without any orderly step. A power loss also
// loses (or tears) what its disk had not synced.
func (w *metaSimWorld) crash(n *metaSimNode, powerLoss bool) {
	n.up, n.node, n.driver, n.store, n.plane, n.reopenWanted = false, nil, nil, nil, nil, nil
	w.stats.Crashes++
	n.restartAt = w.now + 200_000 + w.rng.Uint64N(2_000_000)
	if powerLoss {
		w.stats.PowerLosses++
		n.mem.Crash()
		n.mem.SetFaults(vfs.Faults{}) // the kernel's boot id, not the node's write
		if err := simWriteBootID(n.mem, 1+int(w.stats.Crashes)); err != nil {
			w.fail(fmt.Errorf("node %d: write boot id: %w", n.id, err))
		}
		n.mem.SetFaults(w.diskFaults())
	} else {
		n.mem.ProcessDied()
	}
	w.trace.add("crash", uint64(n.id), b2u(powerLoss))
	w.debugf("crash node %d power=%v", n.id, powerLoss)
}

// ready carries out the node's pending Readys (driver.processReady). A
// fence that outlived superblock_wedged_fatal_timeout stops the process
// (exit status 4); it is restarted a second later, as a supervisor would.
func (w *metaSimWorld) ready(n *metaSimNode) {
	err := n.driver.processReady()
	var wedged *wedgedError
	switch {
	case err == nil:
	case errors.As(err, &wedged):
		w.stats.Wedged++
		w.debugf("node %d exits: %v", n.id, err)
		w.crash(n, false)
		n.restartAt = w.now + 1_000_000
	default:
		w.fail(fmt.Errorf("node %d: metadata driver stopped: %w", n.id, err))
	}
}

// guard runs one node's work; a panic fails the seed (a complaint in a
// keepGoing run, and the node crashes as its process would).
func (w *metaSimWorld) guard(n *metaSimNode, work func()) {
	defer func() {
		if r := recover(); r != nil {
			w.fail(fmt.Errorf("node %d panicked: %v", n.id, r))
			if n.up {
				w.crash(n, false)
			}
		}
	}()
	work()
}

func (w *metaSimWorld) fail(err error) {
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

func (w *metaSimWorld) debugf(format string, args ...any) {
	if *nodeSimDebug {
		fmt.Printf("%8d %s\n", w.step, fmt.Sprintf(format, args...))
	}
}

// connected: whether from's frames reach to now.
func (w *metaSimWorld) connected(from, to uint8) bool {
	if int(to) >= len(w.nodes) || from == to {
		return false
	}
	return w.nodes[to].up && !w.cut[from][to]
}

// send queues a frame with a drawn latency (or drops it).
func (w *metaSimWorld) send(from, to uint8, frame []byte) {
	w.stats.FramesSent++
	if !w.connected(from, to) || w.links.full(from, to) || (w.faults && w.rng.Float64() < w.sc.dropRate) {
		w.stats.FramesDropped++
		return
	}
	lat := w.sc.latencyMinUs + w.rng.Uint64N(w.sc.latencyMaxUs-w.sc.latencyMinUs+1)
	w.links.push(w.now+lat, from, to, frame)
}

// deliverDue steps every frame due by now into its node's group.
func (w *metaSimWorld) deliverDue() {
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
		if m.Group != metadataGroupID {
			w.deliverPartitionFrame(n, m)
			continue
		}
		w.guard(n, func() {
			n.driver.step(m)
			w.ready(n)
		})
		w.trace.add("deliver", uint64(f.from)<<8|uint64(f.to), uint64(m.Kind))
	}
}

// metaSimClock is the drivers' virtual clock.
type metaSimClock struct{ w *metaSimWorld }

func (c metaSimClock) NowMicros() uint64 { return c.w.now }
func (c metaSimClock) NewTicker(time.Duration) loopTicker {
	panic("an inline driver has no ticker: the simulator ticks it")
}

// metaSimBus is one node's end of the simulated network (the real codec).
type metaSimBus struct {
	w    *metaSimWorld
	from uint8
}

func (b *metaSimBus) Send(to uint8, m *consensus.Message) {
	frame, err := b.w.codec.Encode(nil, m)
	if err != nil {
		b.w.fail(fmt.Errorf("node %d: encode %v: %w", b.from, m.Kind, err))
		return
	}
	b.w.send(b.from, to, frame)
}

func (b *metaSimBus) SendShared(to []uint8, m *consensus.Message) {
	for _, t := range to {
		b.Send(t, m)
	}
}

var _ bus.Bus = (*metaSimBus)(nil)

func (b *metaSimBus) SendForward(uint8, *bus.Forward) {}
func (b *metaSimBus) SendFetch(uint8, *bus.Fetch)     {}
func (b *metaSimBus) Connected(to uint8) bool         { return b.w.connected(b.from, to) }
func (b *metaSimBus) Stats() bus.Stats                { return bus.Stats{} }
func (b *metaSimBus) Close() error                    { return nil }
