package sim

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// Scenario is everything a seed decides about a run before it starts.
type Scenario struct {
	Seed     uint64
	Replicas int // 1, 2, 3 or 5

	FaultTicks       int // faulty phase length
	LivenessTicks    int // after heal: every client must commit a new request within this
	ConvergenceTicks int // then: all replicas must reach the same commit within this

	Network NetworkOptions

	// Faults.
	CrashPerTick          float64 // per tick: crash one up node between events
	CrashPerReady         float64 // per Ready: crash the node while it carries it out
	DownTicksMean         float64
	MaxDown               int    // nodes down at once
	FaultyStorage         []bool // per node: crash mid-persist keeps a prefix, may tear the last entry
	ClientDropProbability float64
	// HandoverPerTick: per tick of the faulty phase, one node's primaries
	// hand their group over to another replica (HandOver). Only the
	// "handover" profile sets it, so the default sweep's draws are unchanged.
	HandoverPerTick float64
	// HoldReadyChance: per Ready, the driver persists it and holds the
	// rest (send, apply, reply, Advance) for 1..HoldReadyTicksMax ticks
	// while the replica keeps being ticked, stepped and proposed to: an
	// asynchronous persistence worker (issue 9 point 3). Only the "async"
	// profile sets it, so the default sweep's draws are unchanged.
	HoldReadyChance   float64
	HoldReadyTicksMax int
	// SkipQuietTicks: a replica is ticked only when its next timer is due
	// (consensus NextTimerTick, then AdvanceTicks for the ticks it owes),
	// and brought up to date before anything else is done to it, as a
	// node with thousands of groups does. Only the "skip" profile sets it.
	SkipQuietTicks bool
	// Power loss (`durability = replicated`; only the "powerloss" profile
	// sets these, so the default sweep's draws are unchanged): journal
	// records are synced every SyncEveryTicks (per node, at its own
	// phase); PowerLossPerTick: one node of PowerLossNodes loses its page
	// cache and restarts amnesiac; RackPowerLossPerTick: every node at
	// once; RackPowerLossAtHeal: every node loses power just before the
	// heal (the heal's liveness bound then covers the rack election).
	SyncEveryTicks       int
	PowerLossPerTick     float64
	PowerLossNodes       []bool
	RackPowerLossPerTick float64
	RackPowerLossAtHeal  bool
	// Lost storage (only the "storagelost" profiles set these,
	// storagelost.go): a crash also loses the node's storage with
	// StorageLossPerCrash, and of those losses StorageWipeShare wipe the
	// node (every group, superblock and snapshot too); the others set
	// aside the journal of one or both groups (a partition group may lose
	// its checkpoint's data too). A loss that would leave more than f
	// replicas of a group lost at once is not drawn, unless
	// StorageLossUnbounded.
	StorageLossPerCrash  float64
	StorageWipeShare     float64
	StorageLossUnbounded bool

	// Workload.
	ClientsPerGroup    int
	ThinkTicksMax      int
	ClientTimeoutTicks int

	// Replica configuration.
	ClientTableMax           uint32
	JournalSlots             uint32
	PrepareQueueDepth        uint32
	CheckpointEveryOps       uint64 // 0: never checkpoint
	TestingReplicationQuorum uint8
	Timing                   Timing
}

// Timing is the replicas' timer configuration, in ticks.
type Timing struct {
	PrepareRetransmit, CommitBroadcast, HeartbeatTimeout     uint32
	ViewChangeRetransmit, ViewChangeStatus, RequestStartView uint32
	ViewProbeAttemptsMax, RepairRetry, RepairGapDebounce     uint32
	RepairChunkMax                                           uint32
}

// defaultTiming is the documented defaults (spec §3.3).
var defaultTiming = Timing{
	PrepareRetransmit: 25, CommitBroadcast: 50, HeartbeatTimeout: 500,
	ViewChangeRetransmit: 50, ViewChangeStatus: 500, RequestStartView: 100,
	ViewProbeAttemptsMax: 5, RepairRetry: 100, RepairGapDebounce: 100, RepairChunkMax: 128,
}

// String is the one-line summary printed with a run.
func (s Scenario) String() string {
	faulty := 0
	for _, f := range s.FaultyStorage {
		if f {
			faulty++
		}
	}
	return fmt.Sprintf("n=%d fault_ticks=%d clients=%d journal_slots=%d depth=%d checkpoint_every=%d client_table=%d drop=%.3f dup=%.3f latency=%d+%d partition_p=%.4f clog_p=%.4f filter_p=%.4f crash_tick_p=%.5f crash_ready_p=%.4f max_down=%d faulty_storage=%d timing=%v",
		s.Replicas, s.FaultTicks, s.ClientsPerGroup, s.JournalSlots, s.PrepareQueueDepth, s.CheckpointEveryOps,
		s.ClientTableMax, s.Network.DropProbability, s.Network.DuplicateProbability, s.Network.LatencyMinTicks,
		s.Network.LatencyMeanTicks, s.Network.PartitionProbability, s.Network.ClogProbability, s.Network.FilterProbability, s.CrashPerTick,
		s.CrashPerReady, s.MaxDown, faulty, s.Timing) + s.powerLossString() + s.storageLossString()
}

func (s Scenario) storageLossString() string {
	if s.StorageLossPerCrash == 0 {
		return ""
	}
	return fmt.Sprintf(" storage_loss_p=%.2f wipe_share=%.2f unbounded=%v", s.StorageLossPerCrash, s.StorageWipeShare, s.StorageLossUnbounded)
}

func (s Scenario) powerLossString() string {
	if s.SyncEveryTicks == 0 {
		return ""
	}
	nodes := 0
	for _, p := range s.PowerLossNodes {
		if p {
			nodes++
		}
	}
	return fmt.Sprintf(" sync_every=%d power_loss_p=%.4f power_loss_nodes=%d rack_p=%.4f rack_at_heal=%v",
		s.SyncEveryTicks, s.PowerLossPerTick, nodes, s.RackPowerLossPerTick, s.RackPowerLossAtHeal)
}

// NewScenario derives a randomised scenario from seed. The draws happen
// in a fixed order so the same seed always yields the same scenario.
func NewScenario(seed uint64) Scenario {
	g := newRNG(seed ^ 0x5ce7a410)
	s := Scenario{Seed: seed}
	s.Replicas = []int{1, 2, 3, 3, 5, 5}[g.intn(6)]
	f := (s.Replicas - 1) / 2

	s.FaultTicks = g.between(1500, 6000)
	s.LivenessTicks = 3000
	s.ConvergenceTicks = 2000

	quiet := g.chance(0.15) // some seeds run an almost clean network
	s.Network = NetworkOptions{
		LatencyMinTicks:         g.between(1, 2),
		LatencyMeanTicks:        g.between(1, 6),
		LinkCapacityMax:         g.between(32, 256),
		PartitionStabilityTicks: g.between(50, 800),
		AsymmetricProbability:   0.3,
		ClogMeanTicks:           float64(g.between(20, 400)),
		FilterMeanTicks:         float64(g.between(20, 600)),
	}
	if !quiet {
		s.Network.DropProbability = float64(g.intn(10)) / 100
		s.Network.DuplicateProbability = float64(g.intn(5)) / 100
		s.Network.ReorderProbability = float64(g.intn(10)) / 100
		s.Network.PartitionProbability = float64(g.intn(20)) / 10000
		s.Network.UnpartitionProbability = float64(1+g.intn(20)) / 1000
		s.Network.ClogProbability = float64(g.intn(10)) / 10000
		s.Network.FilterProbability = float64(g.intn(10)) / 10000
	}

	if !quiet || g.chance(0.5) {
		s.CrashPerTick = float64(g.intn(6)) / 10000
		s.CrashPerReady = float64(g.intn(6)) / 2000
		if g.chance(0.2) { // crash-heavy seeds
			s.CrashPerTick *= 5
			s.CrashPerReady *= 5
		}
	}
	s.DownTicksMean = float64(g.between(20, 1000))
	s.MaxDown = g.between(1, s.Replicas)
	// Storage faults stay on a minority so a quorum's durable state is
	// intact. n = 1 and 2 have no non-empty minority; a torn unsynced tail
	// only loses unacknowledged writes, so one such node is allowed there
	// to exercise solo recovery.
	faultyMax := f
	if s.Replicas <= 2 {
		faultyMax = 1
	}
	s.FaultyStorage = make([]bool, s.Replicas)
	for _, i := range g.r.Perm(s.Replicas)[:g.between(0, faultyMax)] {
		s.FaultyStorage[i] = true
	}
	s.ClientDropProbability = s.Network.DropProbability / 2

	s.ClientsPerGroup = g.between(1, 4)
	s.ThinkTicksMax = []int{0, 5, 20, 100}[g.intn(4)]
	s.ClientTimeoutTicks = g.between(100, 400)

	s.ClientTableMax = uint32(s.ClientsPerGroup + g.between(1, 8))
	if g.chance(0.1) {
		s.ClientTableMax = uint32(max(2, s.ClientsPerGroup-1)) // capacity eviction
	}
	s.PrepareQueueDepth = []uint32{1, 4, 32}[g.intn(3)]
	s.JournalSlots = max([]uint32{16, 64, 256, 1024}[g.intn(4)], 2*s.PrepareQueueDepth) // core rule: slots >= 2 x depth
	s.CheckpointEveryOps = []uint64{0, 8, 32, 100}[g.intn(4)]
	if s.CheckpointEveryOps == 0 && s.JournalSlots < 256 {
		s.CheckpointEveryOps = uint64(s.JournalSlots / 2) // a small journal needs checkpoints to release slots
	}
	// Drawn last so adding it kept every earlier draw (and seed) intact.
	s.Timing = defaultTiming
	if g.chance(0.3) { // tight timers: races between timeouts and traffic
		t := &s.Timing
		t.PrepareRetransmit = uint32(g.between(3, 25))
		t.CommitBroadcast = uint32(g.between(5, 50))
		t.HeartbeatTimeout = t.CommitBroadcast * uint32(g.between(3, 10))
		t.ViewChangeRetransmit = uint32(g.between(5, 50))
		t.ViewChangeStatus = uint32(g.between(50, 500))
		t.RequestStartView = uint32(g.between(10, 100))
		t.ViewProbeAttemptsMax = uint32(g.between(1, 5))
		t.RepairRetry = uint32(g.between(10, 100))
		t.RepairGapDebounce = uint32(g.between(1, 100))
		t.RepairChunkMax = []uint32{1, 4, 16, 128}[g.intn(4)]
	}
	return s
}

// Profiles reshape every seed's scenario for a targeted hunt; the default
// sweep uses none. A failing seed found under a profile reproduces only
// with the same profile (the repro line names it).
var Profiles = map[string]func(*Scenario){
	// handover: n ∈ {2, 3, 5}, orderly hand-overs of leadership (leadership
	// alignment) and backups suspecting their primary (resting groups)
	// among crashes of at most f nodes at once and partitions;
	// repair chunks of at least 4 (whole-cluster crashes with one-op repair
	// chunks are the crashy profile's).
	"handover": func(s *Scenario) {
		s.Replicas = []int{2, 3, 5}[s.Seed%3]
		s.MaxDown = max((s.Replicas-1)/2, 1)
		s.FaultyStorage = make([]bool, s.Replicas) // sized for the new n
		s.HandoverPerTick = 0.01
		s.CrashPerTick = max(s.CrashPerTick, 0.0005)
		s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
	},
	// async: the handover profile's cluster sizes and crash bound, with
	// Readys held between their persist and their Advance (a replica is
	// fed in between), as an asynchronous persistence worker would.
	"async": func(s *Scenario) {
		s.Replicas = []int{2, 3, 5}[s.Seed%3]
		s.MaxDown = max((s.Replicas-1)/2, 1)
		s.FaultyStorage = make([]bool, s.Replicas)
		s.CrashPerTick = max(s.CrashPerTick, 0.0005)
		s.HoldReadyChance = 0.3
		s.HoldReadyTicksMax = 8
		s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
	},
	// skip: the handover profile with quiet ticks skipped (AdvanceTicks
	// when a timer is due or before anything else reaches the replica).
	"skip": func(s *Scenario) {
		s.Replicas = []int{2, 3, 5}[s.Seed%3]
		s.MaxDown = max((s.Replicas-1)/2, 1)
		s.FaultyStorage = make([]bool, s.Replicas)
		s.HandoverPerTick = 0.01
		s.CrashPerTick = max(s.CrashPerTick, 0.0005)
		s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
		s.SkipQuietTicks = true
	},
	// powerloss: `durability = replicated`: entries reach the page cache
	// when written and the disk every 5..100 ticks; power losses of up to
	// Q_repl - 1 fixed nodes (f for n = 3, 5; one node for n = 2), which
	// lose their unsynced entries and restart amnesiac; in half the seeds
	// rack power losses of every node at once (and in a quarter one just
	// before the heal). Ordinary crashes of at most f nodes keep the page
	// cache. No torn writes: the faulty-storage model is the crashy
	// profile's.
	"powerloss": powerLoss,
	// powerloss-harsh: n = 3, no rack power losses (every committed op
	// must survive), node 0 power-cycled often with syncs every 200 ticks,
	// ordinary crashes of any number of nodes, frequent partitions.
	"powerloss-harsh": func(s *Scenario) {
		powerLoss(s)
		s.Replicas = 3
		s.FaultyStorage = make([]bool, 3)
		s.PowerLossNodes = []bool{true, false, false}
		s.RackPowerLossPerTick, s.RackPowerLossAtHeal = 0, false
		s.MaxDown = 3
		s.SyncEveryTicks = 200
		s.PowerLossPerTick = 0.003
		s.CrashPerTick = 0.003
		s.DownTicksMean = 200
		s.Network.PartitionProbability = 0.005
		s.Network.UnpartitionProbability = 0.01
	},
	// storagelost: n ∈ {3, 5}, crashes of at most f nodes at once, a
	// share of which also lose the node's storage (storagelost.go): the
	// journal set aside, a partition's checkpoint data gone, or the node
	// wiped; its replicas restart with Restored.StorageLost. At most f
	// replicas of a group are lost at once, except in one seed in eight.
	"storagelost": storageLost,
	// storagelost-harsh: n = 3, frequent crashes of one node at a time,
	// most of which lose storage, frequent partitions and clogs.
	"storagelost-harsh": func(s *Scenario) {
		storageLost(s)
		s.Replicas = 3
		s.MaxDown = 1
		s.FaultyStorage = make([]bool, 3)
		s.CrashPerTick = 0.003
		s.StorageLossPerCrash = 0.7
		s.StorageLossUnbounded = false
		s.DownTicksMean = 100
		s.Network.PartitionProbability = 0.005
		s.Network.UnpartitionProbability = 0.01
		s.Network.ClogProbability = max(s.Network.ClogProbability, 0.002)
	},
	// storagelost-rack: the storagelost profile under `durability =
	// replicated` (syncs every 5..100 ticks) with rack power losses of
	// every node at once (and in half the seeds one just before the
	// heal): a rack election must count the votes of replicas whose
	// storage was lost, or it waits for them forever.
	"storagelost-rack": func(s *Scenario) {
		storageLost(s)
		h := s.Seed * 0x9e3779b97f4a7c15
		s.SyncEveryTicks = 5 + int(h>>8%96)
		s.PowerLossNodes = make([]bool, s.Replicas)
		s.RackPowerLossPerTick = 0.0002
		s.RackPowerLossAtHeal = h>>33%2 == 0
	},
	// crashy: n ∈ {2, 3, 5}, frequent crashes of any number of nodes, one
	// faulty-storage node, frequent partitions; repair chunks of at least 4.
	"crashy": func(s *Scenario) {
		s.Replicas = []int{2, 3, 5}[s.Seed%3]
		s.CrashPerTick = 0.002
		s.CrashPerReady = 0.01
		s.MaxDown = s.Replicas
		s.Network.PartitionProbability = 0.003
		s.Network.UnpartitionProbability = 0.01
		s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
		s.FaultyStorage = make([]bool, s.Replicas)
		s.FaultyStorage[int(s.Seed%uint64(s.Replicas))] = true
	},
}

// powerLoss is the "powerloss" profile (see Profiles).
func powerLoss(s *Scenario) {
	s.Replicas = []int{2, 3, 5}[s.Seed%3]
	s.MaxDown = max((s.Replicas-1)/2, 1)
	s.FaultyStorage = make([]bool, s.Replicas)
	s.CrashPerTick = max(s.CrashPerTick, 0.0003)
	s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
	h := s.Seed * 0x9e3779b97f4a7c15 // draws of their own: the scenario's stay as they were
	s.SyncEveryTicks = 5 + int(h>>8%96)
	s.PowerLossPerTick = 0.0004
	s.PowerLossNodes = make([]bool, s.Replicas)
	for k := 0; k < consensus.ReplicationQuorum(s.Replicas)-1; k++ {
		s.PowerLossNodes[(int(h>>20%5)+k)%s.Replicas] = true
	}
	if h>>32%2 == 0 {
		s.RackPowerLossPerTick = 0.0002
		s.RackPowerLossAtHeal = h>>33%2 == 0
	}
}

// storageLost is the "storagelost" profile (see Profiles).
func storageLost(s *Scenario) {
	s.Replicas = []int{3, 5}[s.Seed%2]
	s.MaxDown = (s.Replicas - 1) / 2
	s.FaultyStorage = make([]bool, s.Replicas)
	s.CrashPerTick = max(s.CrashPerTick, 0.0015)
	s.Timing.RepairChunkMax = max(s.Timing.RepairChunkMax, 4)
	h := s.Seed * 0x9e3779b97f4a7c15 // draws of their own: the scenario's stay as they were
	s.StorageLossPerCrash = 0.5
	s.StorageWipeShare = 0.25
	s.StorageLossUnbounded = h>>40%8 == 0
}
