package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/lodestream/lodestream/consensus"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
	"github.com/zeebo/xxh3"
)

// The partition plane: one consensus group and one partitions.Log per
// partition, driven by a small fixed pool of shard loops (partition_shard.go).
// The metadata apply step tells the plane what changed (reconcile); the
// connection goroutines admit sends and offset writes (partition_send.go,
// partition_offsets.go) and serve polls straight from the logs
// (partition_read.go).

// partitionKey names a partition by its numeric ids.
type partitionKey struct{ stream, topic, partition uint32 }

// groupID packs the partition namespace (server-design §1.1):
// stream<<32 | topic<<20 | partition.
func (k partitionKey) groupID() uint64 {
	return uint64(k.stream&0xFFFFF)<<32 | uint64(k.topic&0xFFF)<<20 | uint64(k.partition&0xFFFFF)
}

// incarnationTagBits of a partition's metadata revision go into the free
// bits 52..62 of its consensus group id, above the namespace. Ids are
// reused (lowest free), so a deleted and re-created partition has the same
// namespace; the tag keeps a straggler message of the old incarnation's
// group from reaching the new one (both incarnations' revisions would have
// to agree modulo 2048). Ours: server-design §1.1 leaves those bits zero.
const incarnationTagBits = 11

// partitionGroupID is the consensus group id of one incarnation of a partition.
func partitionGroupID(k partitionKey, revision uint64) uint64 {
	return k.groupID() | (revision&(1<<incarnationTagBits-1))<<52
}

// groupID is the entry's consensus group id (namespace and incarnation tag).
func (e *partitionEntry) groupID() uint64 { return partitionGroupID(e.key, e.revision) }

type topicKey struct{ stream, topic uint32 }

// partitionEntry is one served (or quarantined) partition.
type partitionEntry struct {
	// What the shard's 10 ms tick reads of every awake group, first and
	// together: with thousands of groups awake the tick is bound by cache
	// misses on these lines (partition_awake.go). Owned by the shard
	// goroutine, except the published atomics.
	group partitionGroup
	fence partitionFence // storage failed (partition_fence.go)
	// primary is published by the shard: this replica leads the group.
	primary atomic.Bool
	// Published by the shard with primary, for metrics.
	pubNormal                  atomic.Bool
	pubView                    atomic.Uint32
	pubCommitMin, pubCommitMax atomic.Uint64
	// Resting (partition_rest.go).
	resting bool
	// awakeAt: the entry's index in its shard's awake list (partition_awake.go).
	awakeAt int
	// inTouched: the entry is in its shard's touched list.
	inTouched    bool
	quietTicks   uint32
	lastProgress restProgress
	heardView    uint32               // 1 + the view in which the primary was last heard from (0: never)
	restSeq      uint32               // counts the group's rests (partition_rest_heartbeat.go)
	inflight     int                  // proposals handed to the group and not yet answered
	backlog      []*partitionProposal // held while inflight is at the group's window
	// writing: a durable write of the group's Ready runs off the loop
	// (partition_writer.go); its Ready, WAL and superblock wait for it.
	writing bool
	// barrier: the answers of the group's last Ready, held until its log's
	// sync (a single node's persisted topic, partition_barrier.go).
	barrier  *segmentBarrier
	transfer *partitionTransfer
	// Skipped quiet ticks (partition_ticks.go), in shard ticks: the group's
	// tick count is current up to tickedAt; it must run at timerAt.
	tickedAt, timerAt uint64

	key      partitionKey
	revision uint64 // metadata CreatedRevision: a re-created partition is a new entry
	dir      string
	log      partitionStore // nil when quarantined
	// quarantine is the error that keeps this partition out of service.
	quarantine error
	persisted  bool // topic durability = persisted: sync before replying
	// offsetsPersisted: consumer_offset_durability = persisted (a
	// durability class of its own, partition_wal.go barrierNeeded).
	offsetsPersisted bool
	shard            *partitionShard

	// Owned by reconcile (under reconcileMu): the watermarks last handed to
	// the shard, so unrelated metadata changes cost no shard round trip.
	seenPurge, seenDeletedUpTo uint64
	seenSet                    bool

	// Owned by the shard goroutine.
	appliedOp uint64 // last op applied to the log
	// appliedNext is where the log ends as of appliedOp: the base offset
	// the next committed batch must carry to be appended. It equals the
	// log's NextOffset except while a restarted replica applies again the
	// ops above its checkpoint, whose batches its log may already hold;
	// every apply decision reads it, never the log's end, so a replayed op
	// is decided as it was the first time (whole-node simulator: a batch
	// refused as stamped for another place was appended on a replay, when
	// the log's end had moved past the batches after it).
	appliedNext uint64
	// stalledResults: the outcomes of the ops a Ready applied before it
	// stalled on a later one (partitionEntry.apply); the retry of that
	// Ready answers them from here instead of applying them twice.
	stalledResults map[uint64]partitionOutcome
	// inlineSends (cluster, loop): message prepares the WAL holds with
	// their bodies whose batches the log does not hold yet, in op order;
	// the next write stages them ahead of its own (partition_stage.go).
	inlineSends []consensus.Prepare
	// offsetsAppliedOp: the consumer offsets already reflect every op up to
	// it (a restart whose log ended below its checkpoint's frontier kept
	// that checkpoint's offsets, partition_vsr.go). Stores and deletes at
	// or below it are not applied again, nor the offsets of an older
	// checkpoint a transfer installs: a replica's offsets never go back
	// (whole-node simulator, bit rot on seed 3038).
	offsetsAppliedOp uint64
	// Cluster mode: the group's superblock, the checkpoint it records
	// (op and the log's next offset then), a running state transfer.
	superblock         *journal.Superblock
	wal                *journal.PrepareLog // the group's prepare WAL (partition_wal.go)
	walReclaimed       uint64              // the checkpoint op the WAL was last reclaimed to
	walBytes           uint64              // the WAL's size after its last completed write
	checkpointOp       uint64
	checkpointFrontier uint64
	checkpointDedup    []byte // the dedup table at checkpointOp, encoded
	// checkpointDedupDirty: the table changed since dedup.table was written.
	checkpointDedupDirty bool
	// The consumer offsets as of checkpointOp, to be written to
	// checkpoint.offsets (dirty), and the ones last written there
	// (partition_cp_offsets.go).
	checkpointOffsets, writtenOffsets []partitions.ConsumerOffsetEntry
	checkpointOffsetsDirty            bool
	// A checkpoint's log sync ahead of it (partition_presync.go): the one
	// out, the one synced and waiting to be handed over, a failure to fence
	// on, whether the next checkpoint syncs in its write instead (the last
	// sync ahead proved nothing), and the checkpoint op whose frontier was
	// synced ahead (its write skips the sync).
	presync, presyncDone *capturedCheckpoint
	presyncErr           error
	presyncBypass        bool
	logSyncedCheckpoint  uint64
	// filesReshaped counts what changed the files other than by appending
	// (a purge, a cut, a reservation, an installed snapshot, a fence): a
	// checkpoint captured before one is not handed over.
	filesReshaped uint64
	// offsetsFileWritten: checkpoint.offsets holds writtenOffsets. Until it
	// does, a checkpoint writes the file even when its offsets are none: a
	// restart from a checkpoint whose file is missing keeps the offsets
	// last applied, above the checkpoint.
	offsetsFileWritten bool
	// storageLost: the group restarted with storage.lost (partition_lost.go)
	// and has not rejoined since; durableLogView is the log_view of its
	// last durable superblock.
	storageLost    bool
	durableLogView uint32
	// checkpointReserved: the offset reservation as of checkpointOp, and
	// the one last written to checkpoint.reserved (partition_cpfiles.go).
	checkpointReserved, writtenReserved uint64
	dedup                               dedupTable
	reopening                           atomic.Bool  // damage found on a read: being reopened (reopenDamaged)
	repairing                           atomic.Bool  // a damaged batch is being repaired from a peer (repairDamaged)
	repairWarnedAt                      atomic.Int64 // unix ns of the last "not repaired yet" warning
	alignRetryAt                        time.Time    // no hand-over before (partition_align.go)
	// alignWait, alignLastAt, alignLastTarget: the back-off of the last
	// hand-over and when and to whom it went (alignBackoff).
	alignWait       time.Duration
	alignLastAt     time.Time
	alignLastTarget uint8
	// The primary's stamp (partition_stamp.go).
	stampValid     bool
	stampView      uint32
	stampNext      uint64
	stampTimestamp uint64
	// stampRoom: the bytes the active segment takes before the batches
	// stamped since the last re-sync fill it (partition_roll.go).
	stampRoom uint64
	// midReady: a Ready whose apply stopped after the op that filled the
	// segment, held until the roll is back (partition_roll.go).
	midReady *consensus.Ready
	// Offset reservations (partition_reserve.go): what the primary may
	// stamp below, the skip its view still owes, 1 + the view of the last
	// reservation op applied (0: none), and the adaptive chunk.
	stampReserved, stampSkipTo uint64
	reserveView                uint32
	reserveChunk, reserveAt    uint64
	// handoverUntil: the primary stamps nothing before this time (µs) while
	// its reservation settles for a hand-over (0: none).
	handoverUntil  uint64
	walQueuedBytes uint64 // their bodies' bytes not yet in the prepare WAL (partition_wal.go)
	lastTimestamp  uint64 // monotone append time (µs)
	marker         partitionMarker
	// What metadata wants of the files (partition_destructive.go), and
	// what this primary proposed of it in view watermarksView.
	wantPurge, wantDeletedUpTo uint64
	proposedPurge, proposedCut uint64
	// watermarksFromOp: the journal's head when this primary's view began;
	// it proposes a purge once it applied that far.
	watermarksFromOp uint64
	// erasedPurgeGeneration: the newest purge generation met among ops a
	// later purge erased (partition_purge_replay.go), this incarnation.
	erasedPurgeGeneration    uint64
	watermarksView           uint32
	appliedPurge, appliedCut atomic.Uint64 // the marker, published
	appliedPurgeOp           atomic.Uint64
	// purgeInFlight: the log is being purged and its marker not yet
	// recorded (or the purge failed half way and waits to be retried):
	// polls, consumer offset reads and fetches are refused meanwhile.
	purgeInFlight atomic.Bool
}

// partitionMarker is the small durable record of which metadata-driven
// changes a partition's files already reflect, so a restart neither re-purges
// nor misses a purge or a DeleteSegments watermark.
type partitionMarker struct {
	Revision        uint64
	PurgeGeneration uint64
	DeletedUpTo     uint64
	// OffsetsReserved: a cluster replica's applied offset reservation
	// (partition_reserve.go); 0 = none.
	OffsetsReserved uint64
	// PurgeOp: the op of the group's log that carried out PurgeGeneration
	// (a cluster replica; 0 = none or unknown). The ops below it were
	// erased by that purge: a restart or a transfer that applies them again
	// leaves the files alone (partition_purge_replay.go).
	PurgeOp uint64
}

// The marker file: [revision u64][purge generation u64][deleted up to u64]
// then, when an offset reservation was applied or a purge op is known,
// [offsets reserved u64], then, when a purge op is known, [purge op u64],
// then the XXH3-64 of what precedes it. Without either it is the 32-byte
// file of earlier builds.
const (
	markerFileName          = "partition.meta"
	markerFileBytes         = 32
	markerReservedFileBytes = 40
	markerPurgeOpFileBytes  = 48
)

func (m partitionMarker) encode() []byte {
	n := markerFileBytes
	switch {
	case m.PurgeOp != 0:
		n = markerPurgeOpFileBytes
	case m.OffsetsReserved != 0:
		n = markerReservedFileBytes
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b[0:], m.Revision)
	binary.LittleEndian.PutUint64(b[8:], m.PurgeGeneration)
	binary.LittleEndian.PutUint64(b[16:], m.DeletedUpTo)
	if n >= markerReservedFileBytes {
		binary.LittleEndian.PutUint64(b[24:], m.OffsetsReserved)
	}
	if n >= markerPurgeOpFileBytes {
		binary.LittleEndian.PutUint64(b[32:], m.PurgeOp)
	}
	binary.LittleEndian.PutUint64(b[n-8:], xxh3.Hash(b[:n-8]))
	return b
}

func readMarker(fsys vfs.FS, dir string) (partitionMarker, bool) {
	b, err := fsys.ReadFile(filepath.Join(dir, markerFileName))
	n := len(b)
	if err != nil || (n != markerFileBytes && n != markerReservedFileBytes && n != markerPurgeOpFileBytes) ||
		binary.LittleEndian.Uint64(b[n-8:]) != xxh3.Hash(b[:n-8]) {
		return partitionMarker{}, false
	}
	m := partitionMarker{
		Revision:        binary.LittleEndian.Uint64(b[0:]),
		PurgeGeneration: binary.LittleEndian.Uint64(b[8:]),
		DeletedUpTo:     binary.LittleEndian.Uint64(b[16:]),
	}
	if n >= markerReservedFileBytes {
		m.OffsetsReserved = binary.LittleEndian.Uint64(b[24:])
	}
	if n >= markerPurgeOpFileBytes {
		m.PurgeOp = binary.LittleEndian.Uint64(b[32:])
	}
	return m, true
}

// writeMarker replaces the marker durably (tmp, fsync, rename, dir fsync).
func writeMarker(fsys vfs.FS, dir string, m partitionMarker) error {
	return replaceFileDurably(fsys, dir, markerFileName, m.encode())
}

// replaceFileDurably replaces dir/name with data: tmp file, fsync, rename,
// directory fsync.
func replaceFileDurably(fsys vfs.FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("install %s in %s: %w", name, dir, err)
	}
	return syncDirectory(fsys, dir)
}

func syncDirectory(fsys vfs.FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// partitionPlane owns every partition of this node.
type partitionPlane struct {
	// fatal: a shard's storage stayed fenced past superblock_wedged_fatal_timeout.
	fatal   chan error
	log     *slog.Logger
	root    string // <data>/streams
	shards  []*partitionShard
	cursors sync.Map // topicKey -> *wire.BalancedCursor
	peers   peerBus  // the replica bus, once started (cluster mode)
	// Cluster placement of every group (a single node: replica 0 of 1) and
	// the identity its superblocks carry.
	topo       topology
	clusterCfg config.ClusterConfig
	identity   journal.Identity

	// The metadata primary the last metadata view change deposed (-1:
	// none), read by the shards' wakeAll; lastNormalView and sawNormal are
	// the driver goroutine's (metadataViewChanged).
	deposed atomic.Int32
	// closeFailed: a shard's WAL or log did not sync or close at shutdown.
	closeFailed    atomic.Bool
	lastNormalView uint32
	sawNormal      bool

	mu      sync.RWMutex
	entries map[partitionKey]*partitionEntry
	opening map[partitionKey]chan struct{} // closed when the key's queued open ends
	// gate (cluster mode): closed until the metadata group has caught up
	// after boot. Before that the metadata state may lack partitions whose
	// files are here (a restarted replica recovers its state from the
	// primary), so nothing is opened, removed or swept.
	gated    bool
	gateOpen atomic.Bool
	opens    *openQueue
	state    *metadata.State // set by the first reconcile

	// reconcileMu serialises reconcile passes (metadata apply and boot).
	reconcileMu  sync.Mutex
	lastRevision uint64
	reconciled   bool
	// topicPartitions: each topic's partition count at the last pass
	// (under reconcileMu), so a one-topic pass finds removed partitions.
	topicPartitions map[topicKey]int
	// reconcileVisits counts the partitions reconcile passes compared (tests).
	reconcileVisits uint64
	// liveFromRevision is the metadata revision of the boot reconcile:
	// partitions created after it were created while this node ran, so a
	// missing superblock means its group never ran here (see startGroup).
	liveFromRevision uint64
	// partitionsLost: <data>/partitions.storage_lost was found or written
	// (storage_lost_marker.go); clearPartitionsLost removes it once every
	// partition metadata holds is open.
	partitionsLost atomic.Bool
	// storageLost: this node's metadata storage was lost (storage_lost.go);
	// set before the gate opens.
	storageLost bool
	// files bounds the segment files held open ([system] open_files_max,
	// partition_fds.go); nil: the process-wide partitions.SharedFileCache.
	files *partitions.FileCache
	// sbLog: the node's partition superblock log (cluster mode,
	// openSuperblockLog); nil on a single node.
	sbLog *journal.SuperblockLog
	// fsys holds every partition file: vfs.OS in production, a simulated
	// disk in tests (useFS).
	fsys vfs.FS
	// random seeds each group's jitter and incarnation (nil: crypto
	// randomness; a deterministic simulator supplies its seeded draws).
	random func() uint64
	// forgetBoot marks the node's boot record unknown, so the next boot
	// treats every group as amnesiac (set by the node after startBoot;
	// partition_fsync_failed.go). reopenInline, when set, reopens a group
	// (after a failed fsync, or damage found by a read or the scrubber)
	// instead of reopen (a simulator's inline shards).
	forgetBoot   func() error
	reopenInline func(*partitionEntry)
	// segmentDivisor, when set (only by the metadata simulator), divides
	// every topic's segment size: metadata refuses segments under 1 MiB,
	// and the simulator's few hundred small messages per partition must
	// still roll segments and reach retention.
	segmentDivisor uint64
	// openRetries: the backoff of partitions whose open failed on a
	// storage error (partition_open_retry.go; under mu).
	openRetries map[partitionKey]reopenBackoff
	// setAsideOnOpen: partitions whose next open sets damage aside instead
	// of serving around it (reopenDamaged).
	setAsideOnOpen sync.Map // partitionKey → true
}

// useFS puts the plane's files (and its shards') on fsys; before any
// partition opens.
func (p *partitionPlane) useFS(fsys vfs.FS) {
	p.fsys = fsys
	for _, sh := range p.shards {
		sh.fsys = fsys
	}
}

func newPartitionPlane(log *slog.Logger, dataDir string, shardCount int, cfg partitionGroupConfig,
	topo topology, clusterCfg config.ClusterConfig) *partitionPlane {
	p := &partitionPlane{
		log:             log,
		root:            filepath.Join(dataDir, "streams"),
		entries:         make(map[partitionKey]*partitionEntry),
		openRetries:     make(map[partitionKey]reopenBackoff),
		opening:         make(map[partitionKey]chan struct{}),
		opens:           newOpenQueue(),
		topicPartitions: make(map[topicKey]int),
		topo:            topo,
		clusterCfg:      clusterCfg,
		fsys:            vfs.OS,
		identity:        journal.Identity{ReplicaID: topo.self, ReplicaCount: topo.count},
	}
	if topo.clustered {
		p.identity.Cluster = bus.ClusterID(clusterCfg.Name)
	}
	p.fatal = make(chan error, 1)
	p.deposed.Store(-1)
	for i := 0; i < shardCount; i++ {
		sh := newPartitionShard(log.With("shard", i), cfg, &p.peers)
		sh.identity, sh.replicaCount, sh.self = p.identity, topo.count, topo.self
		sh.deposed = &p.deposed
		sh.closeFailed = &p.closeFailed
		sh.fsyncFailed = p.afterFsyncFailure
		sh.damaged = p.repairDamaged
		sh.fatal, sh.wedgedTimeout = p.fatal, clusterCfg.SuperblockWedgedFatalTimeout.Duration
		if topo.clustered {
			sh.records = &p.peers
		}
		p.shards = append(p.shards, sh)
	}
	return p
}

// clustered reports whether partition groups have replicas on other nodes.
func (p *partitionPlane) clustered() bool { return p.topo.count > 1 }

func (p *partitionPlane) partitionDir(k partitionKey) string {
	return filepath.Join(p.root, strconv.FormatUint(uint64(k.stream), 10), "topics",
		strconv.FormatUint(uint64(k.topic), 10), "partitions", strconv.FormatUint(uint64(k.partition), 10))
}

// shardFor picks the owning shard by a hash of the group id.
func (p *partitionPlane) shardFor(k partitionKey) *partitionShard {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], k.groupID())
	return p.shards[xxh3.Hash(b[:])%uint64(len(p.shards))]
}

// entry returns the served partition, or nil.
// entryByGroup returns the partition a consensus group id names (server-
// design §1.1: stream<<32 | topic<<20 | partition), or nil.
func (p *partitionPlane) entryByGroup(group uint64) *partitionEntry {
	if group>>63 != 0 {
		return nil // the metadata group's id space
	}
	k := partitionKey{stream: uint32(group>>32) & 0xFFFFF, topic: uint32(group>>20) & 0xFFF, partition: uint32(group) & 0xFFFFF}
	e := p.entry(k)
	if e == nil || e.groupID() != group {
		return nil
	}
	return e
}

func (p *partitionPlane) entry(k partitionKey) *partitionEntry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.entries[k]
}

// cursor returns the topic's balanced-partitioning cursor.
func (p *partitionPlane) cursor(k topicKey) *wire.BalancedCursor {
	if c, ok := p.cursors.Load(k); ok {
		return c.(*wire.BalancedCursor)
	}
	c, _ := p.cursors.LoadOrStore(k, &wire.BalancedCursor{})
	return c.(*wire.BalancedCursor)
}

// topicEntries returns a topic's served partitions (retention).
func (p *partitionPlane) topicEntries(k topicKey) []*partitionEntry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []*partitionEntry
	for pk, e := range p.entries {
		if pk.stream == k.stream && pk.topic == k.topic && e.log != nil {
			out = append(out, e)
		}
	}
	return out
}

// topicLogs returns the open logs of a topic's partitions (stats).
func (p *partitionPlane) topicLogs(k topicKey) []partitionStore {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []partitionStore
	for pk, e := range p.entries {
		if pk.stream == k.stream && pk.topic == k.topic && e.log != nil {
			out = append(out, e.log)
		}
	}
	return out
}

// partitionStats returns a partition's log figures (zero when not served).
func (p *partitionPlane) partitionStats(k partitionKey) partitions.Stats {
	if e := p.entry(k); e != nil && e.log != nil {
		return e.log.Stats()
	}
	return partitions.Stats{}
}

// logOptions builds a partition's log options from its topic.
func (p *partitionPlane) logOptions(t metadata.Topic) partitions.Options {
	segment := t.Options.SegmentSize
	if p.segmentDivisor > 1 {
		segment = max(segment/p.segmentDivisor, 1)
	}
	return partitions.Options{
		SegmentSizeBytes: segment,
		SyncOffsets:      t.Options.ConsumerOffsetDurability == metadata.DurabilityPersisted || t.Options.EnforceFsync,
		Logger:           p.log,
		// A single node has no peer to refill damage from: it serves around
		// it (the damaged range is refused). A cluster replica serves around
		// damage in a sealed segment (rot: sealed segments were synced) and
		// repairs it with a peer's copy when the scrubber or a read meets it
		// (partition_repair.go), keeping its log, its WAL and its vote; other
		// damage (the active segment's may be a power loss's torn writes) it
		// sets aside and refills by state transfer (openLog).
		ServeAroundDamage:       !p.clustered(),
		ServeAroundSealedDamage: p.clustered(),
		// Offsets never re-issued after a crash (issue 15 point 5). A
		// replica's offsets come from its group's log, the same on every node.
		ReserveOffsets: !p.clustered(),
		// A single node has no prepare WAL to tell a batch it staged from
		// one it applied (partition_stage.go, singleNodeWrite).
		StageUnsealed: !p.clustered(),
		// A single node acknowledges a replicated topic's batches from the page cache: after a
		// power loss their torn tail is cut, not refused as corruption (issue 15 point 5).
		AckBeforeSync: !p.clustered() && t.Options.Durability != metadata.DurabilityPersisted && !t.Options.EnforceFsync,
		// A replica's files stay its peers' across a power loss (the whole-node simulator).
		RollFullAtOpen: p.clustered(),
		// The append that fills a segment runs on the shard loop; the
		// segment's sealing sync and the next one's creation run in the
		// group's writer (partition_roll.go).
		DeferRoll: true,
		// One descriptor bound for every partition of the node; a persisted
		// topic's files are synced before the cache closes them.
		Files:       p.files,
		FS:          p.fsys,
		SyncOnEvict: t.Options.Durability == metadata.DurabilityPersisted || t.Options.EnforceFsync,
		// A cluster replica syncs its segments at checkpoints, many MiB
		// apart: their writeback begins as they fill, so a checkpoint's
		// sync (which the group's next Ready waits for) finds about the last
		// MiB to write, not everything since the previous one. A single
		// node's replicated topic syncs only when a segment rolls (off the
		// loop, partition_roll.go): the same keeps that sync to about the
		// last MiB. A
		// single node's persisted topic syncs after every Ready, where it
		// would only add an I/O request per batch (measured: no gain).
		WritebackBytes: segmentWritebackBytes(p.clustered() || t.Options.Durability != metadata.DurabilityPersisted),
	}
}

// segmentWritebackBytes is partitions.Options.WritebackBytes: 1 MiB where
// the segments are not synced after every Ready, none where they are.
func segmentWritebackBytes(syncedLazily bool) uint64 {
	if syncedLazily {
		return 1 << 20
	}
	return 0
}
