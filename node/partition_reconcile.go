package node

import (
	"errors"
	"fmt"
	"github.com/lodestream/lodestream/journal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// desiredPartition is what metadata says a partition should be.
type desiredPartition struct {
	topic metadata.Topic
	part  metadata.Partition
	// live: the partition was created after this node's boot reconcile,
	// so this node cannot have run its group before (startGroup).
	live bool
}

// desiredPartitionOf (under reconcileMu) is what metadata wants of part.
func (p *partitionPlane) desiredPartitionOf(t metadata.Topic, part metadata.Partition) desiredPartition {
	return desiredPartition{topic: t, part: part, live: part.CreatedRevision > p.liveFromRevision}
}

// reconcile brings the served partitions in line with the metadata state:
// opens (or creates) logs of new partitions, deletes those metadata removed
// (or re-created under another revision), applies purges and DeleteSegments
// watermarks. It runs on the metadata driver after each applied change and
// once at boot; it is a no-op when the state revision did not move.
func (p *partitionPlane) reconcile(state *metadata.State) {
	if p.gated && !p.gateOpen.Load() {
		return
	}
	p.reconcileMu.Lock()
	defer p.reconcileMu.Unlock()
	p.reconcileLocked(state)
}

// reconcileLocked is reconcile under reconcileMu.
func (p *partitionPlane) reconcileLocked(state *metadata.State) {
	rev := state.Revision()
	if p.reconciled && rev == p.lastRevision {
		return
	}
	boot := !p.reconciled
	p.reconciled, p.lastRevision, p.state = true, rev, state
	if boot {
		p.liveFromRevision = rev
	}

	desired := make(map[partitionKey]desiredPartition)
	var order []partitionKey // metadata's order: opens and removals in a stable order (a simulator's seed replays them)
	streams := state.Streams()
	clear(p.topicPartitions)
	for _, s := range streams {
		for _, t := range s.Topics {
			for _, part := range t.Partitions {
				k := partitionKey{s.ID, t.ID, part.ID}
				desired[k] = p.desiredPartitionOf(t, part)
				order = append(order, k)
			}
			p.reconcileVisits += uint64(len(t.Partitions))
			if len(t.Partitions) > 0 {
				p.topicPartitions[topicKey{s.ID, t.ID}] = len(t.Partitions)
			}
		}
	}

	p.mu.RLock()
	var gone []*partitionEntry
	for k, e := range p.entries {
		if d, ok := desired[k]; !ok || d.part.CreatedRevision != e.revision {
			gone = append(gone, e)
		}
	}
	p.mu.RUnlock()
	slices.SortFunc(gone, func(a, b *partitionEntry) int { return a.key.compare(b.key) })
	for _, e := range gone {
		p.remove(e)
	}

	for _, k := range order {
		d := desired[k]
		e := p.entry(k)
		if e == nil {
			p.scheduleOpen(k, d) // partition_open.go: off this (metadata) loop
			continue
		}
		p.syncWatermarks(e, d.part)
	}
	if boot || len(gone) > 0 {
		p.sweep(streams, rev)
	}
}

// reconcileTopic is reconcile for a change confined to one topic (issue 15
// point 9): only that topic's partitions are compared with metadata, so
// creating a topic costs the same among 12 000 partitions as among none
// (the full pass copies every stream and visits every partition). The
// partitions examined are the topic's current ones and those it had at the
// last pass (topicPartitions), so removed ones are found too.
func (p *partitionPlane) reconcileTopic(state *metadata.State, k topicKey) {
	if p.gated && !p.gateOpen.Load() {
		return
	}
	p.reconcileMu.Lock()
	defer p.reconcileMu.Unlock()
	if !p.reconciled {
		p.reconcileLocked(state)
		return
	}
	p.lastRevision, p.state = state.Revision(), state
	t, code := state.GetTopic(metadata.ByID(k.stream), metadata.ByID(k.topic))
	n := 0
	if code == metadata.CodeOK {
		n = len(t.Partitions)
	}
	for pid := range max(n, p.topicPartitions[k]) {
		p.reconcileVisits++
		key := partitionKey{k.stream, k.topic, uint32(pid)}
		e := p.entry(key)
		if pid >= n {
			if e != nil {
				p.remove(e)
			}
			continue
		}
		d := p.desiredPartitionOf(t, t.Partitions[pid])
		if e != nil && e.revision != d.part.CreatedRevision {
			p.remove(e)
			e = nil
		}
		if e == nil {
			p.scheduleOpen(key, d)
			continue
		}
		p.syncWatermarks(e, d.part)
	}
	if n > 0 {
		p.topicPartitions[k] = n
	} else {
		delete(p.topicPartitions, k)
	}
}

// reconcileAfter follows one applied command: nothing for commands that do
// not touch partitions, the one topic for topic-scoped ones, a full pass
// otherwise (stream and topic deletes, purges of a stream, anything new).
func (p *partitionPlane) reconcileAfter(state *metadata.State, cmd metadata.Command, res metadata.Result) {
	switch c := cmd.(type) {
	case metadata.CreateStream, metadata.UpdateStream, metadata.CreateConsumerGroup, metadata.DeleteConsumerGroup,
		metadata.JoinConsumerGroup, metadata.LeaveConsumerGroup, metadata.RemoveConsumerGroupMember,
		metadata.CreateUser, metadata.UpdateUser, metadata.DeleteUser, metadata.ChangePassword,
		metadata.UpdatePermissions, metadata.CreatePersonalAccessToken, metadata.DeletePersonalAccessToken,
		metadata.DeleteExpiredTokens:
		if !p.reconciled {
			p.reconcile(state)
		}
		return
	case metadata.CreateTopic:
		if res.Topic != nil {
			p.reconcileTopic(state, topicKey{res.Topic.StreamID, res.Topic.ID})
			return
		}
		if t, code := state.GetTopic(c.Stream, metadata.ByName(c.Name)); code == metadata.CodeOK {
			p.reconcileTopic(state, topicKey{t.StreamID, t.ID})
			return
		}
	case metadata.UpdateTopic:
		if res.Topic != nil {
			p.reconcileTopic(state, topicKey{res.Topic.StreamID, res.Topic.ID})
			return
		}
	default:
		if stream, topic, scoped := topicScoped(cmd); scoped {
			if k, ok := resolvedTopic(state, stream, topic); ok {
				p.reconcileTopic(state, k)
				return
			}
		}
	}
	p.reconcile(state)
}

// topicScoped names the topic of a command that changes only that
// topic's partitions.
func topicScoped(cmd metadata.Command) (stream, topic metadata.Ident, ok bool) {
	switch c := cmd.(type) {
	case metadata.CreatePartitions:
		return c.Stream, c.Topic, true
	case metadata.DeletePartitions:
		return c.Stream, c.Topic, true
	case metadata.PurgeTopic:
		return c.Stream, c.Topic, true
	case metadata.TruncatePartition:
		return c.Stream, c.Topic, true
	}
	return metadata.Ident{}, metadata.Ident{}, false
}

func resolvedTopic(state *metadata.State, stream, topic metadata.Ident) (topicKey, bool) {
	t, code := state.GetTopic(stream, topic)
	return topicKey{t.StreamID, t.ID}, code == metadata.CodeOK
}

// syncWatermarks (under reconcileMu) hands the partition's shard the purge
// generation and DeleteSegments watermark metadata now holds, when they
// moved since the last hand-over.
func (p *partitionPlane) syncWatermarks(e *partitionEntry, part metadata.Partition) {
	if e.log == nil {
		return
	}
	if e.seenPurge == part.PurgeGeneration && e.seenDeletedUpTo == part.DeletedUpToOffset && e.seenSet {
		return // nothing new for this partition: no round trip to its shard
	}
	e.seenPurge, e.seenDeletedUpTo, e.seenSet = part.PurgeGeneration, part.DeletedUpToOffset, true
	e.shard.do(func() { p.applyWatermarks(e, part) })
}

// open opens (or creates) a partition's log and registers its group with
// the owning shard, then publishes it (and ends a queued open of the key).
// A quarantined log is registered as a tombstone. The openers call it
// (partition_open.go); tests call it directly.
func (p *partitionPlane) open(k partitionKey, d desiredPartition) *partitionEntry {
	e := &partitionEntry{
		key: k, revision: d.part.CreatedRevision, dir: p.partitionDir(k),
		// enforce_fsync (upstream: fsync each flush) implies syncing before the reply.
		persisted: d.topic.Options.Durability == metadata.DurabilityPersisted || d.topic.Options.EnforceFsync,
		offsetsPersisted: d.topic.Options.ConsumerOffsetDurability == metadata.DurabilityPersisted ||
			d.topic.Options.EnforceFsync,
		shard: p.shardFor(k),
	}
	if err := p.prepareDir(e, d.part); errors.Is(err, errFilesAhead) {
		e.quarantine = err
		p.log.Info("partition not served until metadata applies its later incarnation again",
			"stream", k.stream, "topic", k.topic, "partition", k.partition, "err", err)
	} else if err != nil {
		e.quarantine = err
		p.log.Error("partition quarantined: its requests are refused until it is repaired",
			"stream", k.stream, "topic", k.topic, "partition", k.partition, "err", err)
	} else if l, err := p.openLog(e, d.topic); err != nil {
		e.quarantine = err
		if errors.Is(err, partitions.ErrQuarantined) {
			p.log.Error("partition quarantined: its requests are refused until it is repaired",
				"stream", k.stream, "topic", k.topic, "partition", k.partition, "err", err)
		} else {
			p.log.Error("open partition log", "stream", k.stream, "topic", k.topic, "partition", k.partition, "err", err)
		}
	} else {
		e.log = l
		e.lastTimestamp = lastAppendTime(l)
	}
	if e.log != nil {
		err := p.startGroup(e, d)
		var q *partitions.QuarantineError
		if err != nil && p.clustered() && errors.As(err, &q) {
			// Damage the restart found taking back the records past its
			// checkpoint (the cut reads the segment again): set aside and
			// opened again as the open would have, once.
			err = p.restartAfterSettingAside(e, d, q)
		}
		if err != nil {
			e.quarantine = fmt.Errorf("partition group: %w", err)
			p.log.Error("partition group did not start: its requests are refused", "stream", k.stream, "topic", k.topic,
				"partition", k.partition, "err", err)
			_ = e.closeWAL()
			if e.log != nil {
				_ = e.log.Close()
			}
			e.log = nil
		}
	}
	e.shard.do(func() {
		if e.log != nil {
			e.shard.groups[e] = struct{}{}
			e.shard.awake.add(e)
			e.shard.startTicking(e)
			e.publishRole()
			e.publishWatermarks()
		}
	})
	p.mu.Lock()
	p.entries[k] = e
	if ch, ok := p.opening[k]; ok {
		close(ch)
		delete(p.opening, k)
	}
	p.mu.Unlock()
	return e
}

// openLog opens a partition's log. In cluster mode interior corruption
// does not keep the replica out: the damage and everything after it are set
// aside (partitions.SetAsideDamage) and the log opens at the verified
// prefix, which ends below the frontier its superblock records, so the
// group rejoins with nothing applied and the state transfer refills the
// rest from the peers (issue 8 point 4). A single node has no peer to
// refill from: its partition stays quarantined.
func (p *partitionPlane) openLog(e *partitionEntry, t metadata.Topic) (*partitions.Log, error) {
	dir := e.dir
	opts := p.logOptions(t)
	if _, ok := p.setAsideOnOpen.LoadAndDelete(e.key); ok {
		opts.ServeAroundSealedDamage = false // reopenDamaged: a repair in place did not fit
	}
	if p.clustered() && (t.Options.Durability == metadata.DurabilityPersisted || t.Options.EnforceFsync) {
		// Segments were synced up to the frontier the last checkpoint's
		// superblock records (partition_vsr.go): damage below it is
		// corruption, set aside below, never cut as a torn tail.
		if sb, st, err := journal.OpenSuperblock(dir, p.identity, journal.WithFS(p.fsys)); err == nil {
			if st, err = p.newestSuperblock(e, sb, st); err == nil && st != nil {
				opts.SyncedBelow = st.OffsetFrontier
			}
		}
	}
	l, err := partitions.Open(dir, opts)
	var q *partitions.QuarantineError
	if err == nil || !p.clustered() || !errors.As(err, &q) {
		return l, err
	}
	p.log.Warn("partition log damaged: setting the damage aside and refilling it from the other replicas",
		"dir", dir, "file", q.File, "position", q.Position, "offset", q.Offset, "reason", q.Reason)
	if serr := partitions.SetAsideDamage(q); serr != nil {
		// A storage error, not the damage: wrapped without the
		// quarantine so the partition-reopen job retries the open
		// (partition_open_retry.go); joined, it stayed quarantined until
		// a restart (metadata simulator seed 125156: a full disk).
		return nil, fmt.Errorf("set aside the damage in %s at offset %d (%s): %w", q.File, q.Offset, q.Reason, serr)
	}
	return partitions.Open(dir, opts)
}

// restartAfterSettingAside closes the partition's log, sets the damage q
// names aside (partitions.SetAsideDamage), opens the log again and starts
// the group on it.
func (p *partitionPlane) restartAfterSettingAside(e *partitionEntry, d desiredPartition, q *partitions.QuarantineError) error {
	p.log.Warn("partition log damage found at restart: setting the damage aside and refilling it from the other replicas",
		"dir", e.dir, "file", q.File, "position", q.Position, "offset", q.Offset, "reason", q.Reason)
	_ = e.closeWAL()
	_ = e.log.Close()
	e.log = nil
	if err := partitions.SetAsideDamage(q); err != nil {
		return fmt.Errorf("set aside the damage in %s at offset %d (%s): %w", q.File, q.Offset, q.Reason, err)
	}
	l, err := p.openLog(e, d.topic)
	if err != nil {
		return err
	}
	e.log = l
	e.lastTimestamp = lastAppendTime(l)
	return p.startGroup(e, d)
}

// lastAppendTime is the newest stored append time, so restarts keep
// timestamps monotone per partition.
func lastAppendTime(l partitionStore) uint64 {
	res, err := l.Poll(partitions.PollQuery{Strategy: lastStrategy, Count: 1})
	if err != nil || res.MessagesCount == 0 || len(res.Records) < 24 {
		return 0
	}
	return leU64(res.Records[16:])
}

// prepareDir makes sure the directory belongs to this incarnation: a marker
// of another revision (a partition deleted and re-created while the node was
// down) or none at all means the files are stale.
func (p *partitionPlane) prepareDir(e *partitionEntry, part metadata.Partition) error {
	fsys := p.fsys
	m, ok := readMarker(fsys, e.dir)
	if ok && m.Revision == part.CreatedRevision {
		e.marker = m
		return nil
	}
	if ok && m.Revision > part.CreatedRevision {
		// The files are of a later incarnation than the state's: metadata
		// has not applied its re-creation again yet (see sweep). They are
		// neither served nor cleared; the entry is a tombstone until the
		// state moves on, and its removal leaves them (remove).
		return fmt.Errorf("%w: %s holds revision %d, metadata is at the partition's revision %d",
			errFilesAhead, e.dir, m.Revision, part.CreatedRevision)
	}
	if !ok {
		// Without a readable marker the files' incarnation is unknown: never
		// wipe segments on a guess.
		if logs, _ := vfs.Glob(fsys, filepath.Join(e.dir, "*.log")); len(logs) > 0 {
			return fmt.Errorf("%w: %s holds %d segment files but its %s is missing or corrupt; restore it or remove the directory",
				partitions.ErrQuarantined, e.dir, len(logs), markerFileName)
		}
	}
	if err := vfs.RemoveAllAtomically(fsys, e.dir); err != nil {
		return fmt.Errorf("clear stale partition directory %s: %w", e.dir, err)
	}
	// Every level (stream, topic, partitions), created now or found, is
	// synced in its parent, from the data directory down: a power loss must
	// not drop a directory holding synced data, even one an earlier
	// creation left unsynced (its sync failed) or a concurrent opener has
	// not synced yet.
	if err := vfs.MkdirAllDurableUnder(fsys, filepath.Dir(p.root), e.dir, 0o755); err != nil {
		return fmt.Errorf("create partition directory %s: %w", e.dir, err)
	}
	// A fresh partition has nothing to purge or truncate. A cluster
	// replica's files follow its group's log instead: a replica that
	// rejoins with a fresh directory applies the purges and cuts its
	// peers ordered (or a transfer brings what they left), and taking
	// metadata's generation here would skip a purge op its peers carry out.
	e.marker = partitionMarker{Revision: part.CreatedRevision, PurgeGeneration: part.PurgeGeneration,
		DeletedUpTo: part.DeletedUpToOffset}
	if p.clustered() {
		e.marker.PurgeGeneration, e.marker.DeletedUpTo = 0, 0
	}
	return writeMarker(fsys, e.dir, e.marker)
}

// errFilesAhead: a partition directory holds a later incarnation than
// the metadata state names (prepareDir).
var errFilesAhead = errors.New("partition files are newer than the metadata state")

// remove stops serving a partition and deletes its files (not those of a
// later incarnation the state has not reached, errFilesAhead).
func (p *partitionPlane) remove(e *partitionEntry) {
	p.mu.Lock()
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	p.mu.Unlock()
	if errors.Is(e.quarantine, errFilesAhead) {
		return
	}
	e.shard.do(func() {
		e.shard.dropGroup(e, wire.ErrResourceNotFound)
		_ = e.closeWAL()
		if e.shard.cfg.broken.removeKeepsFiles {
			return
		}
		if e.log != nil {
			if err := e.log.Delete(); err != nil {
				p.log.Error("delete partition log", "dir", e.dir, "err", err)
			}
			return
		}
		if err := vfs.RemoveAllAtomically(p.fsys, e.dir); err != nil {
			p.log.Error("delete partition directory", "dir", e.dir, "err", err)
		}
	})
}

// sweep removes stream, topic and partition directories metadata no longer
// knows (deleted while the node was down, or emptied by deletes). A
// directory holding a partition created at a revision above the state's
// (revision) stays: metadata has not applied that creation again yet (a
// restarted node whose metadata caught up to its new view's commit, below
// what it had applied before its crash), so "unknown" there is not
// "deleted" (metadata simulator seed 18092: a backup removed a topic its
// state at op 6 did not know, created at op 7; the group's next election
// then dropped acknowledged messages).
func (p *partitionPlane) sweep(streams []metadata.Stream, revision uint64) {
	if p.shards[0].cfg.broken.removeKeepsFiles {
		return
	}
	known := make(map[string]bool)
	for _, s := range streams {
		sd := filepath.Join(p.root, strconv.FormatUint(uint64(s.ID), 10))
		known[sd] = true
		for _, t := range s.Topics {
			td := filepath.Join(sd, "topics", strconv.FormatUint(uint64(t.ID), 10))
			known[td] = true
			for _, part := range t.Partitions {
				known[filepath.Join(td, "partitions", strconv.FormatUint(uint64(part.ID), 10))] = true
			}
		}
	}
	removeUnknown := func(pattern string) {
		paths, _ := vfs.Glob(p.fsys, pattern)
		for _, path := range paths {
			if known[path] {
				continue
			}
			if strings.HasSuffix(path, vfs.RemovingSuffix) {
				// Left by a crash inside a removal: already gone by name.
				if err := p.fsys.RemoveAll(path); err != nil {
					p.log.Error("remove an interrupted removal", "path", path, "err", err)
				}
				continue
			}
			if ahead, markerRev := p.filesAhead(path, revision); ahead {
				p.log.Info("keeping partition data newer than the metadata state: not applied again yet", "path", path,
					"created_revision", markerRev, "state_revision", revision)
				continue
			}
			p.log.Info("removing partition data metadata no longer knows", "path", path)
			// All or nothing across a crash: a half-removed stream or topic
			// would leave partitions without their partition.meta behind,
			// which blocks a partition re-created at the same path.
			if err := vfs.RemoveAllAtomically(p.fsys, path); err != nil {
				p.log.Error("remove orphan partition data", "path", path, "err", err)
			}
		}
	}
	removeUnknown(filepath.Join(p.root, "*"))
	removeUnknown(filepath.Join(p.root, "*", "topics", "*"))
	removeUnknown(filepath.Join(p.root, "*", "topics", "*", "partitions", "*"))
}

// filesAhead reports whether a partition directory at or under path
// records a creation revision above revision (and the highest one).
func (p *partitionPlane) filesAhead(path string, revision uint64) (bool, uint64) {
	dirs := []string{path}
	for _, pattern := range []string{filepath.Join(path, "partitions", "*"), filepath.Join(path, "topics", "*", "partitions", "*")} {
		found, _ := vfs.Glob(p.fsys, pattern)
		dirs = append(dirs, found...)
	}
	var highest uint64
	for _, dir := range dirs {
		if m, ok := readMarker(p.fsys, dir); ok {
			highest = max(highest, m.Revision)
		}
	}
	return highest > revision, highest
}

// groupConfig is a partition group's consensus configuration: one replica
// per node of the cluster (the roster), the cluster's timings, no client
// table (ClientTableMax = 0: the partition plane). A new group starts led
// by the node whose metadata primary created the partition.
func (p *partitionPlane) groupConfig(k partitionKey, part metadata.Partition) consensus.Config {
	cfg := consensus.DefaultConfig(p.topo.self, p.topo.count)
	p.topo.applyTimings(&cfg, p.clusterCfg)
	if part.CreatedOnNode < p.topo.count {
		cfg.InitialView = uint32(part.CreatedOnNode)
	}
	cfg.GroupID = partitionGroupID(k, part.CreatedRevision)
	cfg.PrepareQueueDepth = p.shards[0].cfg.prepareQueueDepth
	cfg.JournalSlots = p.shards[0].cfg.journalSlots
	cfg.ClientTableMax = 0
	if p.shards[0].cfg.broken.quorumOfOne {
		cfg.TestingReplicationQuorum = 1
	}
	random := randomUint64
	if p.random != nil {
		random = p.random
	}
	cfg.Seed = random()
	cfg.Incarnation = consensus.Uint128{Lo: random() | 1, Hi: random()}
	return cfg
}
