package node

import (
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// Messages in the metadata simulator (partitions seeds): producers with
// stable identities (the leader-aware client's client id and request ids),
// and one without (the Go SDK's: it re-mints its client id when it
// reconnects, here after every ambiguous outcome), send batches to the partitions the metadata group holds, and now and
// then store a consumer offset there, through the node they take for the
// partition's primary, while the metadata clients create, purge and
// delete the topics under them. Readers poll random replicas. The
// checkers:
//   - an offset is acknowledged for one message only, per epoch (the
//     partition, its incarnation and purge generation);
//   - a poll sees at an offset what every other poll of that epoch saw;
//   - a replica's consumer offset never goes back within one boot and
//     epoch, and is never a value no producer asked to store;
//   - after the heal, on every replica: no message twice in a partition's
//     log (a producer without a stable identity may store a request it
//     re-sent after an ambiguous outcome twice: at-least-once), every
//     acknowledged message at its offset (unless the seed lost power under a `replicated` topic: a majority's unsynced memory is
//     allowed to go), every polled message where the poll saw it, each
//     consumer offset at least the last store acknowledged in its epoch,
//     and the replicas' segment files byte-identical.
//
// A send's epoch is certain when no command that purges, deletes or
// creates partitions was pending, and no replica carried out a purge,
// between its first attempt and its acknowledgement: it was then applied
// in the epoch of the replica that answered. The others are left out of
// the per-epoch checks; no message twice still holds for them.

const (
	metaSimProducers       = 4    // the last one without a stable identity
	metaSimSendRate        = 0.05 // chance per step that an idle producer sends
	metaSimPollRate        = 0.05 // chance per step of a poll
	metaSimSendWaitMicros  = 3_000_000
	metaSimSendAttemptsMax = 200
	metaSimStoreShare      = 0.15 // share of requests that store a consumer offset
)

type metaSimProducer struct {
	index uint32
	// unstable: the Go SDK's identity: a new client id after each
	// ambiguous outcome (it reconnects), request ids that restart with it.
	unstable bool
	id       consensus.Uint128
	nextReq  uint64
	target   uint8
	pending  *metaSimSend
}

// metaSimSend is a producer's send (or consumer-offset store) waiting for
// its outcome.
type metaSimSend struct {
	key      partitionKey
	store    bool   // a consumer-offset store of value, not a send
	value    uint64 // the offset a store asks for
	request  uint64 // with dedupRequestFlag
	body     []byte
	sum      uint64
	messages int
	prop     *partitionProposal // the attempt in flight (nil: to retry)
	node     uint8
	boot     int
	sentAt   uint64
	retryAt  uint64 // after a refusal: when to try the next node
	attempts int
	// events: metaSimMessages.events at the first attempt; uncertain: an
	// epoch-changing command was pending then.
	events    uint64
	uncertain bool
}

// metaSimEpochOffset names an offset within one epoch of a partition.
type metaSimEpochOffset struct {
	key                            partitionKey
	revision, generation, position uint64
}

// metaSimObserved names a consumer offset (at.position: the producer) as
// one incarnation of a group on one node reports it. A restart or a
// reopen (a failed fsync, damage set aside) starts a new incarnation: its
// consumer offsets start from its checkpoint's again, and the replay of
// the ops above it moves them on, as the whole-node simulator allows.
type metaSimObserved struct {
	node        uint8
	incarnation uint64
	at          metaSimEpochOffset
}

// metaSimMessages is the producers and what the checkers compare with.
type metaSimMessages struct {
	producers []*metaSimProducer
	// events counts what may move a partition's epoch under a send: an
	// attempt of a command that purges, deletes or creates partitions, a
	// purge carried out by any replica.
	events uint64
	owner  map[metaSimEpochOffset]string
	polled map[metaSimEpochOffset]string
	// Consumer offsets, per producer (its consumer id is its index+1):
	// stored, the last value each asked for per partition; asked, the
	// highest ever per partition; acked, the highest acknowledged per
	// certain epoch (position: the consumer id); observed, the last value
	// a replica reported per node, boot and epoch.
	stored, asked map[[2]uint64]uint64
	acked         map[metaSimEpochOffset]uint64
	// resent: requests ("c/r/") of producers without a stable identity
	// that were sent again after an ambiguous outcome: they may be stored
	// twice.
	resent   map[string]bool
	observed map[metaSimObserved]uint64
	// incarnations numbers the group entries the checkers have seen.
	incarnations map[*partitionEntry]uint64
}

// metaSimMessageStats counts the message workload of a run.
type metaSimMessageStats struct {
	Sends, SendsAcked, SendsCertain, SendsRefused, SendsAmbiguous, SendsAbandoned uint64
	Polls, PolledMessages, MessagesAtEnd, OffsetStores, OffsetStoresAcked         uint64
	// AtLeastOnce: messages of a producer without a stable identity stored
	// twice after it re-sent them (node 0's logs at the end).
	AtLeastOnce uint64
}

func (s *metaSimMessageStats) add(o metaSimMessageStats) {
	s.Sends += o.Sends
	s.SendsAcked += o.SendsAcked
	s.SendsCertain += o.SendsCertain
	s.SendsRefused += o.SendsRefused
	s.SendsAmbiguous += o.SendsAmbiguous
	s.SendsAbandoned += o.SendsAbandoned
	s.Polls += o.Polls
	s.PolledMessages += o.PolledMessages
	s.MessagesAtEnd += o.MessagesAtEnd
	s.OffsetStores += o.OffsetStores
	s.OffsetStoresAcked += o.OffsetStoresAcked
	s.AtLeastOnce += o.AtLeastOnce
}

func (w *metaSimWorld) newProducers() {
	w.msgs = &metaSimMessages{owner: map[metaSimEpochOffset]string{}, polled: map[metaSimEpochOffset]string{},
		stored: map[[2]uint64]uint64{}, asked: map[[2]uint64]uint64{}, acked: map[metaSimEpochOffset]uint64{},
		observed: map[metaSimObserved]uint64{}, incarnations: map[*partitionEntry]uint64{}, resent: map[string]bool{}}
	for i := 0; i < metaSimProducers; i++ {
		w.msgs.producers = append(w.msgs.producers, &metaSimProducer{index: uint32(i), unstable: i == metaSimProducers-1,
			id: consensus.Uint128{Lo: w.seed*16 + uint64(i) + 1, Hi: 0x6d736773}, target: uint8(w.rng.IntN(w.sc.nodes))})
	}
}

// consumerKind: a consumer for even producer indexes, a consumer group for
// odd ones, so both kinds of offset files go through the faults.
func (pr *metaSimProducer) consumerKind() wire.ConsumerKind {
	if pr.index%2 == 1 {
		return wire.ConsumerKindGroup
	}
	return wire.ConsumerKindSingle
}

// changesPartitions: whether a metadata command may purge, delete or
// create partitions (move an epoch).
func changesPartitions(cmd metadata.Command) bool {
	switch cmd.(type) {
	case metadata.PurgeTopic, metadata.PurgeStream, metadata.DeleteTopic, metadata.DeleteStream,
		metadata.CreateTopic, metadata.CreatePartitions, metadata.DeletePartitions:
		return true
	}
	return false
}

// partitionCommandPending: a metadata client waits for the outcome of a
// command that changes partitions.
func (w *metaSimWorld) partitionCommandPending() bool {
	for _, c := range w.clients {
		if c.pending != nil && c.pending.cmd != nil && changesPartitions(c.pending.cmd) {
			return true
		}
	}
	return false
}

// driveProducers moves every producer on: outcomes, retries, new sends.
func (w *metaSimWorld) driveProducers(send bool) {
	if w.msgs == nil {
		return
	}
	for _, pr := range w.msgs.producers {
		s := pr.pending
		if s == nil {
			if !send || w.rng.Float64() >= metaSimSendRate {
				continue
			}
			if s = w.newSend(pr); s == nil {
				continue
			}
			pr.pending = s
			w.sendAttempt(pr, s)
			continue
		}
		if s.prop == nil {
			if w.now >= s.retryAt {
				w.sendAttempt(pr, s)
			}
			continue
		}
		n := w.nodes[s.node]
		out, ok := attemptOutcome(s.prop.done, n.boots != s.boot || !n.up || w.now-s.sentAt > metaSimSendWaitMicros)
		if !ok {
			continue
		}
		w.trace.add("send-outcome", uint64(pr.index), s.request, uint64(out.code), out.baseOffset)
		switch out.code {
		case wire.OK:
			w.sendAcknowledged(pr, s, out)
			pr.pending = nil
			continue
		case wire.ErrTransientNotAccepted:
			w.refused(pr, s)
		default:
			w.stats.Messages.SendsAmbiguous++
			if pr.unstable && !s.store {
				// The Go SDK reconnects under a new client id: its retry is
				// a new request to the partition's dedup window.
				pr.id.Hi++
				w.msgs.resent[simRequestName(pr.index+metaSimProducerBase, s.request)] = true
			}
		}
		s.prop = nil
		if s.attempts >= metaSimSendAttemptsMax {
			w.stats.Messages.SendsAbandoned++
			pr.pending = nil
		}
	}
}

// newSend draws a send to a partition the producer's target node's
// metadata holds (nil: none known there).
func (w *metaSimWorld) newSend(pr *metaSimProducer) *metaSimSend {
	n := w.nodes[pr.target]
	if !n.up {
		pr.target = uint8((int(pr.target) + 1) % len(w.nodes))
		return nil
	}
	keys := w.partitionKeys(n)
	if len(keys) == 0 {
		return nil
	}
	pr.nextReq++
	s := &metaSimSend{key: keys[w.rng.IntN(len(keys))], request: pr.nextReq | dedupRequestFlag,
		events: w.msgs.events, uncertain: w.partitionCommandPending()}
	if w.rng.Float64() < metaSimStoreShare {
		k := [2]uint64{s.key.groupID(), uint64(pr.index)}
		w.msgs.stored[k] += 1 + w.rng.Uint64N(5)
		s.store, s.value = true, w.msgs.stored[k]
		w.msgs.asked[k] = max(w.msgs.asked[k], s.value)
		w.stats.Messages.OffsetStores++
		return s
	}
	var err error
	if s.body, s.sum, s.messages, err = simBatch(w.rng, pr.index+metaSimProducerBase, s.request, w.now); err != nil {
		w.fail(err)
		return nil
	}
	w.stats.Messages.Sends++
	return s
}

// metaSimProducerBase sets the producers' payload names apart from other
// simulators' clients ("c100/...").
const metaSimProducerBase = 100

// partitionKeys is every partition node n's metadata holds, in key order.
func (w *metaSimWorld) partitionKeys(n *metaSimNode) []partitionKey {
	_, keys := n.streamsOf()
	return keys
}

// sendAttempt proposes the send on the producer's target node, as the send
// path does; a partition the node does not serve (yet, or any more) is a
// refusal. A partition metadata no longer holds ends the send (outcome
// unknown).
func (w *metaSimWorld) sendAttempt(pr *metaSimProducer, s *metaSimSend) {
	n := w.nodes[pr.target]
	if !n.up || n.plane == nil {
		pr.target = uint8((int(pr.target) + 1) % len(w.nodes))
		return
	}
	if !w.holdsPartition(n, s.key) {
		w.stats.Messages.SendsAbandoned++
		pr.pending = nil
		return
	}
	e := n.plane.entry(s.key)
	if e == nil || e.log == nil || e.group == nil {
		w.refused(pr, s)
		return
	}
	s.attempts++
	p := &partitionProposal{entry: e, op: wire.OpSendMessages, body: append([]byte(nil), s.body...), bodyOwned: true,
		done: make(chan partitionOutcome, 1), user: rootUserID, client: pr.id, request: s.request, sum: s.sum}
	if s.store {
		p = &partitionProposal{entry: e, op: wire.OpStoreConsumerOffset, body: encodeOffsetOp(pr.consumerKind(), pr.index+1, s.value, true),
			done: make(chan partitionOutcome, 1)}
	}
	s.prop, s.node, s.boot, s.sentAt = p, n.id, n.boots, w.now
	w.guard(n, func() {
		if !e.shard.submit(p) {
			p.done <- partitionOutcome{code: wire.ErrTransientNotAccepted}
		}
	})
	w.trace.add("send", uint64(pr.index), s.request, uint64(n.id))
}

// refused: the send goes to the next node a little later, as the
// leader-aware client does after a 58.
func (w *metaSimWorld) refused(pr *metaSimProducer, s *metaSimSend) {
	w.stats.Messages.SendsRefused++
	pr.target = uint8((int(pr.target) + 1) % len(w.nodes))
	s.retryAt = w.now + metaSimRetryMicros
}

// holdsPartition: node n's metadata holds the partition.
func (w *metaSimWorld) holdsPartition(n *metaSimNode, k partitionKey) bool {
	for _, have := range w.partitionKeys(n) {
		if have == k {
			return true
		}
	}
	return false
}

// sendAcknowledged records an OK: within a certain epoch an offset is
// acknowledged for one message only.
func (w *metaSimWorld) sendAcknowledged(pr *metaSimProducer, s *metaSimSend, out partitionOutcome) {
	if s.store {
		w.stats.Messages.OffsetStoresAcked++
	} else {
		w.stats.Messages.SendsAcked++
	}
	if s.uncertain || s.events != w.msgs.events || w.partitionCommandPending() {
		return
	}
	e := s.prop.entry
	if s.store {
		k := metaSimEpochOffset{key: s.key, revision: e.revision, generation: e.marker.PurgeGeneration, position: uint64(pr.index)}
		w.msgs.acked[k] = max(w.msgs.acked[k], s.value)
		return
	}
	w.stats.Messages.SendsCertain++
	for m := 0; m < s.messages; m++ {
		name := simPayloadName(pr.index+metaSimProducerBase, s.request, m)
		k := metaSimEpochOffset{key: s.key, revision: e.revision, generation: e.marker.PurgeGeneration, position: out.baseOffset + uint64(m)}
		if prev, ok := w.msgs.owner[k]; ok && prev != name {
			w.fail(fmt.Errorf("partition %v revision %d purge generation %d: offset %d acknowledged for %s and for %s",
				k.key, k.revision, k.generation, k.position, prev, name))
		}
		w.msgs.owner[k] = name
	}
}

// pollMessages reads a few messages from a random partition of a random
// up node, as a consumer that replica serves would.
func (w *metaSimWorld) pollMessages() {
	if w.msgs == nil || w.rng.Float64() >= metaSimPollRate {
		return
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if !n.up || n.plane == nil {
		return
	}
	keys := w.partitionKeys(n)
	if len(keys) == 0 {
		return
	}
	e := n.plane.entry(keys[w.rng.IntN(len(keys))])
	if e == nil || e.log == nil || e.purgeInFlight.Load() {
		return
	}
	w.stats.Messages.Polls++
	next := e.log.NextOffset()
	from := uint64(0)
	if next > 0 {
		from = w.rng.Uint64N(next)
	}
	res, err := e.log.Poll(partitions.PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: from},
		Count: uint32(1 + w.rng.IntN(10))})
	if errors.Is(err, partitions.ErrCorrupt) {
		return // refused, never served (segment bit rot is not simulated here)
	}
	if err != nil {
		w.fail(fmt.Errorf("node %d partition %v: poll from %d: %w", n.id, e.key, from, err))
		return
	}
	err = forEachMessage(res.Records, func(off uint64, payload []byte) {
		w.stats.Messages.PolledMessages++
		name := payloadName(payload)
		k := metaSimEpochOffset{key: e.key, revision: e.revision, generation: e.marker.PurgeGeneration, position: off}
		if prev, ok := w.msgs.polled[k]; ok && prev != name {
			w.fail(fmt.Errorf("node %d partition %v (revision %d, purge generation %d): a poll saw %q at offset %d, an earlier poll %q",
				n.id, e.key, k.revision, k.generation, name, off, prev))
		}
		w.msgs.polled[k] = name
	})
	if err != nil {
		w.fail(fmt.Errorf("node %d partition %v: polled records: %w", n.id, e.key, err))
	}
	w.observeConsumerOffsets(n, e)
}

// observeConsumerOffsets reads every producer's consumer offset on a
// replica: never back within one boot and epoch, never a value no producer
// asked for.
func (w *metaSimWorld) observeConsumerOffsets(n *metaSimNode, e *partitionEntry) {
	for _, pr := range w.msgs.producers {
		v, _ := e.log.ConsumerOffset(pr.consumerKind(), pr.index+1)
		if asked := w.msgs.asked[[2]uint64{e.key.groupID(), uint64(pr.index)}]; v > asked {
			w.fail(fmt.Errorf("node %d partition %v: consumer %d's offset %d was never asked for (highest %d)", n.id, e.key, pr.index+1, v, asked))
		}
		inc, ok := w.msgs.incarnations[e]
		if !ok {
			inc = uint64(len(w.msgs.incarnations) + 1)
			w.msgs.incarnations[e] = inc
		}
		k := metaSimObserved{node: n.id, incarnation: inc,
			at: metaSimEpochOffset{key: e.key, revision: e.revision, generation: e.marker.PurgeGeneration, position: uint64(pr.index)}}
		if prev := w.msgs.observed[k]; v < prev {
			w.fail(fmt.Errorf("node %d (group incarnation %d) partition %v (revision %d, purge generation %d): consumer %d's offset went back from %d to %d",
				n.id, inc, e.key, e.revision, e.marker.PurgeGeneration, pr.index+1, prev, v))
		}
		w.msgs.observed[k] = v
	}
}

// retention is node n's retention job: each partition's primary proposes
// the cut its topic's retention allows (its size bound scaled down as its
// segments are, metaSimSegmentDivisor); the cut is ordered in the group's
// log (partitionEntry.proposeRetention).
func (w *metaSimWorld) retention(n *metaSimNode) {
	for _, k := range w.partitionKeys(n) {
		d, ok := n.plane.desiredOf(k)
		e := n.plane.entry(k)
		if !ok || e == nil || e.revision != d.part.CreatedRevision {
			continue
		}
		t := d.topic
		if t.MaxTopicSize != metadata.Never {
			t.MaxTopicSize /= metaSimSegmentDivisor
		}
		e.proposeRetention(w.now, t)
	}
}

// producersIdle: no send waits for its outcome.
func (w *metaSimWorld) producersIdle() bool {
	if w.msgs == nil {
		return true
	}
	for _, pr := range w.msgs.producers {
		if pr.pending != nil {
			return false
		}
	}
	return true
}

// checkMessages (after the heal, every node serving exactly what its
// metadata holds) checks every replica's partition logs and files.
func (w *metaSimWorld) checkMessages() {
	if w.msgs == nil {
		return
	}
	first := map[partitionKey]map[string][]byte{}
	firstNode := map[partitionKey]uint8{}
	keys := w.partitionKeys(w.nodes[0])
	for _, n := range w.nodes {
		for _, k := range keys {
			e := n.plane.entry(k)
			if e == nil || e.log == nil {
				w.fail(fmt.Errorf("after the heal node %d does not serve partition %v", n.id, k))
				continue
			}
			w.checkPartitionLog(n, e)
			files, err := segmentFilesIn(n.mem, e.dir)
			if err != nil {
				w.fail(fmt.Errorf("node %d partition %v: %w", n.id, k, err))
				continue
			}
			if f, ok := first[k]; !ok {
				first[k], firstNode[k] = files, n.id
			} else if !maps2Equal(f, files) {
				w.dumpPartition(k)
				w.fail(fmt.Errorf("partition %v: node %d's segment files differ from node %d's: %s", k, n.id, firstNode[k], diffFiles(f, files)))
			}
		}
	}
}

// checkPartitionLog checks one replica's log of one partition against the
// ledger: no message twice, every acknowledged (when its loss is not
// allowed) and every polled message at its offset.
func (w *metaSimWorld) checkPartitionLog(n *metaSimNode, e *partitionEntry) {
	records, err := readWholeLog(e.log)
	if err != nil {
		w.fail(fmt.Errorf("node %d partition %v: read its log: %w", n.id, e.key, err))
		return
	}
	seen := map[string]uint64{}
	atOffset := map[uint64]string{}
	if err := forEachMessage(records, func(off uint64, payload []byte) {
		name := payloadName(payload)
		if _, dup := seen[name]; dup && w.msgs.resent[requestOf(name)] && n.id == 0 {
			w.stats.Messages.AtLeastOnce++
		}
		if prev, dup := seen[name]; dup && !w.msgs.resent[requestOf(name)] {
			w.fail(fmt.Errorf("node %d partition %v: message %s at offsets %d and %d (applied twice)", n.id, e.key, name, prev, off))
		}
		seen[name], atOffset[off] = off, name
	}); err != nil {
		w.fail(fmt.Errorf("node %d partition %v: its records: %w", n.id, e.key, err))
	}
	if n.id == 0 {
		w.stats.Messages.MessagesAtEnd += uint64(len(seen))
	}
	// Under `replicated` a backup acknowledges from memory: a power loss
	// of a majority may take what they acknowledged (durability.mdx).
	mayLose := !e.persisted && w.stats.PowerLosses > 0
	kept := e.log.Stats().FirstOffset // below it: cut by retention, in every replica's log alike
	check := func(what string, ledger map[metaSimEpochOffset]string) {
		for k, name := range ledger {
			if k.key != e.key || k.revision != e.revision || k.generation != e.marker.PurgeGeneration || k.position < kept {
				continue
			}
			if got := atOffset[k.position]; got != name {
				w.dumpPartition(e.key)
				w.fail(fmt.Errorf("node %d partition %v (revision %d, purge generation %d): %s %s at offset %d, the log holds %q",
					n.id, e.key, e.revision, k.generation, what, name, k.position, got))
			}
		}
	}
	if !mayLose {
		check("acknowledged", w.msgs.owner)
		check("a poll saw", w.msgs.polled)
	}
	w.observeConsumerOffsets(n, e)
	mayLoseOffsets := !e.offsetsPersisted && w.stats.PowerLosses > 0
	for _, pr := range w.msgs.producers {
		v, _ := e.log.ConsumerOffset(pr.consumerKind(), pr.index+1)
		acked := w.msgs.acked[metaSimEpochOffset{key: e.key, revision: e.revision, generation: e.marker.PurgeGeneration, position: uint64(pr.index)}]
		if v < acked && !mayLoseOffsets {
			w.fail(fmt.Errorf("node %d partition %v (revision %d, purge generation %d): consumer %d's offset %d, below the acknowledged %d",
				n.id, e.key, e.revision, e.marker.PurgeGeneration, pr.index+1, v, acked))
		}
	}
}

// dumpPartition prints every replica's log of a partition (-nodesim.debug).
func (w *metaSimWorld) dumpPartition(k partitionKey) {
	if !*nodeSimDebug {
		return
	}
	for _, m := range w.nodes {
		if !m.up || m.plane == nil {
			continue
		}
		me := m.plane.entry(k)
		if me == nil || me.log == nil || me.group == nil {
			w.debugf("node %d partition %v: not served", m.id, k)
			continue
		}
		recs, _ := readWholeLog(me.log)
		var names []string
		_ = forEachMessage(recs, func(off uint64, payload []byte) {
			names = append(names, fmt.Sprintf("%d=%s", off, payloadName(payload)))
		})
		w.debugf("node %d partition %v revision %d purge generation %d persisted %v: view %d op %d commit %d, log %d..%d: %v", m.id, k,
			me.revision, me.marker.PurgeGeneration, me.persisted, me.group.View(), me.group.Op(), me.group.CommitMax(),
			me.log.Stats().FirstOffset, me.log.NextOffset(), names)
	}
}

// requestOf is the "c/r/" prefix of a "c/r/m/" payload name.
func requestOf(name string) string {
	slashes := 0
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			slashes++
			if slashes == 2 {
				return name[:i+1]
			}
		}
	}
	return name
}
