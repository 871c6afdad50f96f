// Package node wires one server together: it recovers the metadata state,
// drives the metadata consensus group's event loop, serves client
// connections (sessions, command dispatch) and answers cluster metadata.
package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/encryption"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/transport/bus"
	"github.com/lodestream/lodestream/vfs"
)

// ServerVersion is reported in Register replies and stats.
const ServerVersion = "0.9.0"

// metadataGroupID is the metadata consensus group's id (server-design §1.1).
const metadataGroupID = uint64(1) << 63

// Options is what Run needs; cmd/iggy-server fills it from its Boot.
type Options struct {
	Config    *config.Config
	ReplicaID uint8
	// RootUsername / RootPassword seed the root user on first boot.
	RootUsername string
	RootPassword string
	Logger       *slog.Logger
	// HTTP binds the REST API when http.enabled (services.go).
	HTTP HTTPStarter
	// Requests observes binary requests (metrics); nil: none.
	Requests RequestObserver
	// FS holds the data directory (system.path): nil is the real file
	// system; tests pass a simulated disk (vfs.Mem) to cut the power
	// under a running node. Only the metadata and partition storage go
	// through it (diagnostics read /proc and the real disk).
	FS vfs.FS
	// OnWedged (may be nil) is called once when storage stayed unwritable
	// past superblock_wedged_fatal_timeout, a partition write that never
	// returned included. Run then shuts down and returns the error (its
	// ExitCode is ExitStorageWedged), but that shutdown may itself wait on
	// the stuck storage: a caller that must exit (the server binary) does
	// so after a grace period.
	OnWedged func(error)
}

// Node is one running server.
type Node struct {
	cfg         *config.Config
	log         *slog.Logger
	lifetime    context.Context // cancelled when the node starts shutting down
	state       *metadata.State
	driver      *driver
	sessions    *registry
	principals  *principals // HTTP callers' client sessions (principal.go)
	requests    RequestObserver
	credentials credentialSlots
	logins      *loginLimiter
	internal    *internalSession
	tcp         *transport.TCPServer
	ports       servedPorts // bound port per client transport; set before serving
	startedAt   time.Time
	dataDir     string
	// fsys: the node's file system (opts.FS, else the OS's).
	fsys  vfs.FS
	plane *partitionPlane
	topo  topology
	// clock paces every loop and background job (system clock in
	// production; a virtual clock in a whole-node simulator).
	clock loopClock
	// random, when set, replaces the crypto source of the metadata
	// group's seed and incarnation (the simulator's seeded draws).
	random func() uint64
	// metaBroken: the metadata simulator's deliberate bugs (zero: none).
	metaBroken metadataBreakage
	// scheduler runs the periodic background jobs (jobs.go).
	scheduler jobScheduler
	bus       bus.Bus // nil on a single node
	// metaWAL is the metadata WAL, for metrics (set once storage is open).
	metaWAL  atomic.Pointer[journal.WAL]
	forwards *forwarder
	// partitionWritesRefused counts partition writes refused (58) because
	// this node is a backup of the partition's group.
	partitionWritesRefused atomic.Uint64
	// unroutedReplicaMessages counts bus messages for groups this node
	// does not serve (yet: a partition its metadata has not created).
	unroutedReplicaMessages atomic.Uint64
	// cipher encrypts message payloads at rest (system.encryption); nil when
	// disabled.
	cipher *encryption.Cipher

	loginRefusalLog logThrottle
	// fetchServes bounds the partition fetches served at once.
	fetchServes chan struct{}
	// statusReplies carries FetchStatusReply frames to settleFreshStorage.
	statusReplies chan bus.Fetch
	// retentionCursor is where the next retention turn starts (owned by
	// the retention job).
	retentionCursor int
	// lastLed, lastServed: the partition leadership last logged (owned by
	// the leadership job).
	lastLed, lastServed int
	lastMetaPrimary     bool
	lastLeadershipLog   time.Time
	lastInboxDropped    uint64 // partition inbox drops last logged (same job)
	lastQueueFull       uint64 // bus frames dropped at full peer queues, last logged (same job)
	lastDropLog         time.Time
	// closeFailed: metadata storage or the partition superblock log did
	// not close cleanly at shutdown (the boot record then stays unclean).
	closeFailed atomic.Bool
}

// Run starts the node and blocks until ctx is cancelled (graceful shutdown:
// stop accepting, close connections, drain and fsync the metadata group) or
// the node fails.
func Run(ctx context.Context, opts Options) error {
	cfg := opts.Config
	if cfg == nil {
		return errors.New("node: no configuration")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := checkTransports(cfg, opts.HTTP != nil); err != nil {
		return err
	}
	topo, err := newTopology(cfg, opts.ReplicaID)
	if err != nil {
		return err
	}
	n := &Node{
		clock:       systemClock{},
		scheduler:   tickerScheduler{clock: systemClock{}},
		topo:        topo,
		forwards:    newForwarder(),
		cfg:         cfg,
		log:         log,
		sessions:    newRegistry(),
		principals:  newPrincipals(principalsMax(uint32(cfg.Metadata.ClientsTableMax))),
		requests:    opts.Requests,
		credentials: newCredentialSlots(),
		logins: newLoginLimiter(cfg.Login.FailedAttemptsPerAddressMax, cfg.Login.FailedAttemptsPerUserMax,
			cfg.Login.FailedAttemptsRefillInterval.Duration, int(cfg.Login.TrackedEntriesMax)),
		internal:      newInternalSession(),
		fetchServes:   make(chan struct{}, fetchServesMax),
		statusReplies: make(chan bus.Fetch, statusRepliesMax),
		startedAt:     time.Now(),
		dataDir:       cfg.System.Path,
	}
	// system.memory_pool.enabled: the frame buffer pools (size and
	// bucket_capacity only accept their defaults, see config.Validate).
	transport.SetFramePooling(cfg.System.MemoryPool.Enabled)
	if cfg.System.Encryption.Enabled {
		c, err := encryption.FromBase64(cfg.System.Encryption.Key.Reveal())
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		n.cipher = c
		log.Info("encryption at rest enabled: message payloads and user headers are stored AES-256-GCM encrypted")
	}

	identity := journal.Identity{ReplicaID: topo.self, ReplicaCount: topo.count}
	if topo.clustered {
		// The cluster id (BLAKE3 of [cluster] name) is stamped in every
		// superblock: data of another cluster refuses to boot here.
		identity.Cluster = bus.ClusterID(cfg.Cluster.Name)
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	n.fsys = fsys
	// A cluster replica sets a damaged WAL aside and rejoins as storage
	// lost (storage_damaged.go); the marker it writes is read below.
	store, recovered, _, err := openMetaStorageSettingAside(fsys, n.dataDir, identity, topo.clustered, nowMicros(), log)
	if err != nil {
		return err
	}
	if recovered.superblockDamage != "" {
		log.Warn("metadata superblock: a damaged copy was set aside", "damage", recovered.superblockDamage)
	}
	if recovered.walTornBytes > 0 {
		log.Warn("metadata journal: cut a torn tail (an append that never completed, so never acknowledged)",
			"file", recovered.walTornFile, "position", recovered.walTornAt,
			"dropped_bytes", recovered.walTornBytes)
	}
	n.metaWAL.Store(store.wal)
	// stoppedCleanly: Run returns nil; set at its end, read by the boot
	// record's deferred write, which runs after every other close.
	stoppedCleanly := false
	var boot *bootGuard
	if topo.clustered {
		var err error
		boot, err = startBoot(fsys, n.dataDir, filepath.Join(n.dataDir, "streams"), log)
		if err != nil {
			_ = store.Close()
			return fmt.Errorf("node: boot record: %w", err)
		}
		defer func() {
			if !stoppedCleanly || n.closeFailed.Load() || (n.plane != nil && n.plane.closeFailed.Load()) {
				return // the next boot after a power loss treats this run's unsynced writes as lost
			}
			if err := boot.stoppedCleanly(); err != nil {
				log.Error("record the clean stop", "err", err)
			}
		}()
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			n.closeFailed.Store(true)
			log.Error("close metadata storage", "err", cerr)
		}
	}()
	settled := metadataSettled
	if topo.clustered {
		s, warning, err := readMetadataSettle(fsys, n.dataDir)
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if warning != "" {
			log.Warn("metadata settle marker damaged", "problem", warning)
		}
		settled = s
		if recovered.snapshot == nil {
			// Before the boot checkpoint: until the peers answer, a restart
			// must ask them again (storage_lost_marker.go).
			if err := writeMetadataSettle(fsys, n.dataDir, metadataUnsettled); err != nil {
				return fmt.Errorf("node: %w", err)
			}
			settled = metadataUnsettled
		}
	}
	recovered.storageLost = settled == metadataLost
	if recovered.storageLost {
		log.Warn("metadata storage was lost in an earlier run and the group has not rejoined since: " +
			"rejoining Recovering (no vote until the primary answers)")
	}
	group, state, err := n.recover(recovered, opts)
	if err != nil {
		return err
	}
	n.state = state
	appliedOp, _ := state.LastApplied()
	n.driver = newDriver(log.With("group", "metadata"), group, store, n, appliedOp)
	n.driver.fence.timeout = cfg.Cluster.SuperblockWedgedFatalTimeout.Duration // 0: never exit
	if settled == metadataUnsettled {
		// Empty metadata storage (or only the boot checkpoint of a boot
		// that never heard the peers): a new cluster, or this replica's
		// storage was lost. The driver settles which before its group runs
		// (storage_lost.go); clients are served meanwhile.
		n.driver.settle = n.settleMetadataGroup
	}
	if recovered.storageLost {
		n.driver.rejoined = n.metadataRejoined
	}
	if recovered.snapshot == nil {
		// First boot: the seeded root user exists only in memory until this
		// checkpoint makes it durable (it is never in the WAL).
		if err := n.writeBootCheckpoint(store); err != nil {
			return err
		}
	}
	// Apply the recovered journal tail before anything is served.
	if err := n.driver.processReady(); err != nil {
		return err
	}

	// The partition plane: shard loops first (reconcile hands them groups),
	// then every partition metadata knows is opened or created.
	n.plane = newPartitionPlane(log.With("plane", "partitions"), n.dataDir, partitionShardCount(), n.partitionGroupConfig(),
		topo, cfg.Cluster)
	n.plane.files = newOpenFileCache(cfg, log)
	n.plane.useFS(fsys)
	// Partition groups created before this boot rejoin like the metadata
	// group, also once it has rejoined if the plane did not reopen every
	// partition since (partitions.storage_lost).
	partitionsLost, err := partitionsLostMarked(fsys, n.dataDir)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.plane.storageLost = recovered.storageLost || partitionsLost
	n.plane.partitionsLost.Store(recovered.storageLost || partitionsLost)
	if boot != nil {
		n.plane.forgetBoot = boot.forget
	}
	if topo.count > 1 {
		sbLog, err := n.plane.openSuperblockLog(n.dataDir)
		if err != nil {
			return err
		}
		defer func() { // after the shards stop (deferred below)
			if err := sbLog.Close(); err != nil {
				n.closeFailed.Store(true)
				log.Error("close the partition superblock log", "err", err)
			}
		}()
	}
	shardCtx, stopShards := context.WithCancel(context.Background())
	var shardsWG sync.WaitGroup
	for _, sh := range n.plane.shards {
		shardsWG.Add(1)
		go func() {
			defer shardsWG.Done()
			sh.run(shardCtx)
		}()
	}
	n.plane.runOpeners(shardCtx, &shardsWG)
	if topo.clustered {
		// Partitions open once the metadata state is caught up (a restarted
		// replica's state may be behind its partition files).
		n.plane.gated = true
		n.driver.caughtUp = func() {
			n.plane.gateOpen.Store(true)
			n.log.Info("metadata caught up: opening partitions")
			n.plane.reconcile(n.state)
		}
	}
	defer func() {
		// After the metadata driver: its applies may still hand work to shards.
		stopShards()
		shardsWG.Wait()
	}()
	n.plane.reconcile(n.state)

	// The node's lifetime exists before anything that may use it starts
	// (bus callbacks serve forwarded logins under it).
	lifetime, stopLifetime := context.WithCancel(context.Background())
	defer stopLifetime()
	n.lifetime = lifetime
	if topo.clustered {
		replicaBus, err := n.startReplicaBus(opts.ReplicaID)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := replicaBus.Close(); cerr != nil {
				log.Error("close replica bus", "err", cerr)
			}
		}()
		// Set after n.bus (through each loop, which orders the write
		// before its reads): partition primaries follow the metadata one.
		restAfter := 3 * clampTicks(cfg.Cluster.Ticks().CommitBroadcastIntervalTicks)
		for _, sh := range n.plane.shards {
			sh.do(func() {
				sh.alignTo = n.metadataAlignTarget
				sh.connected = n.bus.Connected
				sh.restAfterTicks = restAfter
				sh.restHeartbeatTicks = restHeartbeatTicksOf(cfg.Cluster.Ticks())
			})
		}
		n.driver.viewChanged = n.plane.metadataViewChanged
		n.driver.primaryGone = newPrimaryWatch(n.bus.Connected, int(n.topo.count), cfg.Cluster.HeartbeatTimeout.Duration)
		n.driver.peerReturn = newPeerReturn(n.bus.Connected, n.topo.self, int(n.topo.count), n.plane.wakePartitions)
	} else {
		// A single node's quiet groups rest too (issue 15 point 9): it has
		// no backup to heartbeat and no primary to follow, and 12 000
		// groups ticking every 10 ms cost a core, slowing everything else
		// (CreateTopic took ~9x longer at 12 000 partitions).
		n.plane.restWhenQuiet(3 * clampTicks(cfg.Cluster.Ticks().CommitBroadcastIntervalTicks))
	}

	// Every client listener is bound (and records its port) before any
	// serves, so cluster metadata never reports a port still being bound.
	listeners, err := n.listen()
	if err != nil {
		return err
	}
	httpListener, err := n.bindHTTP(opts.HTTP)
	if err != nil {
		listeners.close()
		return err
	}
	log.Info("iggy-server started", "transports", listeners.names, "data", n.dataDir,
		"metadata_op", group.Op(), "version", ServerVersion)

	driverCtx, stopDriver := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	driverErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		driverErr <- n.driver.run(driverCtx)
	}()
	metadataHung := make(chan error, 1)
	if timeout := cfg.Cluster.SuperblockWedgedFatalTimeout.Duration; timeout > 0 {
		watchCtx, stopWatch := context.WithCancel(context.Background())
		defer stopWatch()
		go watchStorage(watchCtx, n.driver.storageBegan, timeout, time.Second, metadataHung)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.scheduler.Run(serveCtx, n.backgroundJobs())
	}()
	listeners.reloadOnSIGHUP(serveCtx, log)
	serveErr := listeners.serve(serveCtx, n)
	httpErr := serveHTTP(serveCtx, httpListener)

	var runErr error
	driverDone := false
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-driverErr:
		driverDone = true
		runErr = fmt.Errorf("metadata group stopped: %w", err)
		noteWedged(opts.OnWedged, err)
	case err := <-n.plane.fatal:
		runErr = fmt.Errorf("partition plane stopped: %w", err)
		noteWedged(opts.OnWedged, err)
	case err := <-metadataHung:
		runErr = fmt.Errorf("metadata group stuck: %w", err)
		noteWedged(opts.OnWedged, err)
	case err := <-serveErr:
		serveErr <- err
		runErr = fmt.Errorf("client listener stopped: %w", err)
	case err := <-httpErr:
		httpErr <- err
		runErr = fmt.Errorf("http listener stopped: %w", err)
	}
	// Connections close first (their sessions log out through the still
	// running driver), then the driver drains what was admitted.
	stopServe()
	if err := <-serveErr; err != nil && runErr == nil {
		runErr = err
	}
	if httpErr != nil {
		if err := <-httpErr; err != nil && runErr == nil {
			runErr = err
		}
	}
	stopLifetime()
	stopDriver()
	if !driverDone {
		if err := <-driverErr; err != nil && runErr == nil {
			runErr = fmt.Errorf("metadata group: %w", err)
		}
	}
	wg.Wait()
	if runErr == nil {
		stoppedCleanly = true
		log.Info("shutdown complete")
	}
	return runErr
}

func (n *Node) runtimeDir() string {
	rt := n.cfg.System.Runtime.Path
	if rt == "" {
		rt = "runtime"
	}
	if filepath.IsAbs(rt) {
		return rt
	}
	return filepath.Join(n.dataDir, rt)
}

// bindHost is the host clients should dial, from the TCP bind address:
// 127.0.0.1 for loopback or unspecified binds.
func (n *Node) bindHost() string {
	if n.tcp == nil {
		return "127.0.0.1"
	}
	ip := n.tcp.Addr().IP
	if ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		return "127.0.0.1"
	}
	return ip.String()
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

// randomUint64 seeds per-boot randomness (jitter seed, incarnation nonce).
func randomUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return binary.LittleEndian.Uint64(b[:])
}

// groupConfig is the metadata group's consensus configuration.
func (n *Node) groupConfig(replicaID uint8) consensus.Config {
	md := n.cfg.Metadata
	depth := uint32(md.PrepareQueueDepth)
	if depth == 0 {
		depth = 32
	}
	slots := uint32(md.JournalSlots)
	if slots == 0 {
		slots = 1024
	}
	table := uint32(md.ClientsTableMax)
	if table == 0 {
		table = 8192
	}
	cfg := consensus.DefaultConfig(replicaID, n.topo.count)
	n.topo.applyTimings(&cfg, n.cfg.Cluster)
	cfg.GroupID = metadataGroupID
	cfg.PrepareQueueDepth, cfg.JournalSlots, cfg.ClientTableMax = depth, slots, table
	random := randomUint64
	if n.random != nil {
		random = n.random
	}
	cfg.Seed = random()
	cfg.Incarnation = consensus.Uint128{Lo: random() | 1, Hi: random()}
	if n.metaBroken.quorumOfOne {
		cfg.TestingReplicationQuorum = 1
	}
	return cfg
}
