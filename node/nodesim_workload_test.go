package node

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// The simulator's clients. Each has a stable identity (client id and
// request ids with dedupRequestFlag, as the leader-aware client sends) and
// one request at a time: a send of 1-4 messages whose payloads name the
// request, or a store of its consumer offset (increasing values). A 58
// moves it to another node; an ambiguous outcome (57, a timeout, the node
// crashing under it) is retried with the same ids, which the partition's
// dedup window must answer exactly once.

const (
	simClients         = 4
	simAttemptTimeout  = 10_000_000 // virtual µs without an answer: ambiguous (the send path's wait)
	simAttemptsMax     = 200        // retries of one request before it is abandoned (outcome unknown)
	simRequestRate     = 0.05       // chance per step that an idle client starts a request
	simPollRate        = 0.05       // chance per step of a poll on a random node
	simOffsetStoreRate = 0.15       // share of requests that store an offset
)

type simRequestKind int

const (
	simSend simRequestKind = iota
	simStore
)

type simRequest struct {
	kind     simRequestKind
	request  uint64 // with dedupRequestFlag
	body     []byte
	sum      uint64
	messages int
	value    uint64 // simStore
	// The current attempt: the node, its boot, when it was made.
	prop      *partitionProposal
	node      uint8
	boot      int
	sentAt    uint64
	attempts  int
	ambiguous bool
	// epochLo: the epoch (incarnation and purge generation) some replica
	// had reached when the request was first made; it is applied in that
	// epoch or a later one (simLedger).
	epochLo uint64
}

type simClient struct {
	index   uint32
	id      consensus.Uint128
	nextReq uint64
	target  uint8
	pending *simRequest
	stored  uint64 // the last consumer offset value it asked to store
}

// consumerKind is what the client stores its offsets as: a consumer for
// even client indexes, a consumer group (id = index+1, as the group's
// offset) for odd ones, so both kinds of offset files go through every
// fault, checkpoint and transfer.
func (c *simClient) consumerKind() wire.ConsumerKind {
	if c.index%2 == 1 {
		return wire.ConsumerKindGroup
	}
	return wire.ConsumerKindSingle
}

// simAck is an acknowledged send.
type simAck struct {
	client  uint32
	request uint64
	base    uint64
	count   int
	// epoch: the purge generation the send was applied in, when certain.
	epoch   uint64
	certain bool
}

// simLedger is what the checkers compare the replicas with.
//
// A purge empties the partition and restarts its offsets and consumer
// offsets at 0, and so does a re-created topic (a new incarnation), so
// offsets are compared within an epoch (simEpoch: the incarnation and the
// purge generation the log reflects). A request's epoch is certain when
// no purge or re-creation was wanted between its first attempt and its
// acknowledgement: it was applied after every purge carried out before it
// was made (its op comes later) and before any metadata had not yet asked
// for. The others (raced by one; a replay may answer a confirmation from
// before a purge) are left out of the per-epoch checks; no message twice
// still holds.
type simLedger struct {
	acks []simAck
	// owner of each acknowledged offset, per epoch: "c/r/m" of its message.
	offsetOwner map[[2]uint64]string
	// requests abandoned with an unknown outcome (at most once each).
	abandoned map[string]bool
	// storeAcked: per epoch and client, the highest acknowledged offset store.
	storeAcked map[[2]uint64]uint64
	// storeAsked: per client, the highest value ever proposed.
	storeAsked map[uint32]uint64
	// polled: the payload a poll saw at each offset, per epoch.
	polled map[[2]uint64]string
	// observed: per node, boot, client and epoch, the last consumer offset read.
	observed map[[4]uint64]uint64
	// ackedEnd: the offset after the highest acknowledged message.
	ackedEnd uint64
	// purgeCarriedOut: the highest purge generation a replica of the
	// current incarnation carried out (partitionShard.purged); purgeOps:
	// the op of each.
	purgeCarriedOut uint64
	purgeOps        map[uint64]uint64
}

func newSimLedger() *simLedger {
	return &simLedger{offsetOwner: map[[2]uint64]string{}, abandoned: map[string]bool{}, storeAcked: map[[2]uint64]uint64{},
		storeAsked: map[uint32]uint64{}, polled: map[[2]uint64]string{}, observed: map[[4]uint64]uint64{},
		purgeOps: map[uint64]uint64{}}
}

func simPayloadName(client uint32, request uint64, m int) string {
	return fmt.Sprintf("c%d/r%d/m%d/", client, request&^dedupRequestFlag, m)
}

func simRequestName(client uint32, request uint64) string {
	return fmt.Sprintf("c%d/r%d/", client, request&^dedupRequestFlag)
}

func (w *simWorld) newClients() []*simClient {
	cs := make([]*simClient, simClients)
	for i := range cs {
		cs[i] = &simClient{index: uint32(i), id: consensus.Uint128{Lo: w.seed*16 + uint64(i) + 1, Hi: 0x5151}, target: uint8(w.rng.IntN(len(w.nodes)))}
	}
	return cs
}

// newRequest builds a client's next request.
func (w *simWorld) newRequest(c *simClient) (*simRequest, error) {
	c.nextReq++
	r := &simRequest{request: c.nextReq | dedupRequestFlag, epochLo: simEpoch(w.revision, w.ledger.purgeCarriedOut)}
	if w.rng.Float64() < simOffsetStoreRate {
		// Close behind the acknowledged end, as a consumer that keeps up
		// (stored offsets hold retention back below them).
		c.stored = max(c.stored+1+w.rng.Uint64N(5), w.ledger.ackedEnd-min(w.ledger.ackedEnd, 50))
		r.kind, r.value = simStore, c.stored
		r.body = encodeOffsetOp(c.consumerKind(), c.index+1, c.stored, true)
		w.ledger.storeAsked[c.index] = c.stored
		return r, nil
	}
	body, sum, messages, err := simBatch(w.rng, c.index, r.request, w.now)
	if err != nil {
		return nil, err
	}
	r.kind, r.body, r.sum, r.messages = simSend, body, sum, messages
	return r, nil
}

// simBatch draws a send of 1-4 messages whose payloads name the client,
// the request and the message ("c/r/m/", then padding): the batch and its
// checksum as the client computes it.
func simBatch(rng *rand.Rand, client uint32, request, now uint64) (body []byte, sum uint64, messages int, err error) {
	messages = 1 + rng.IntN(4)
	in := make([]wire.BatchMessageInput, messages)
	for m := range in {
		payload := []byte(simPayloadName(client, request, m))
		for pad := rng.IntN(200); pad > 0; pad-- {
			payload = append(payload, byte('a'+rng.IntN(26)))
		}
		in[m] = wire.BatchMessageInput{OriginTimestamp: now, Payload: payload}
		in[m].ID[0], in[m].ID[1] = byte(client), byte(m)
	}
	if body, err = wire.AppendBatch(nil, in); err != nil {
		return nil, 0, 0, err
	}
	h, err := wire.DecodeBatchHeader(body)
	if err != nil {
		return nil, 0, 0, err
	}
	return body, h.BatchChecksum, messages, nil
}

// attempt proposes r on the client's target node (another up node if it
// is down).
func (w *simWorld) attempt(c *simClient, r *simRequest) {
	n := w.nodes[c.target]
	if !n.up {
		for i := 1; i <= len(w.nodes); i++ {
			cand := w.nodes[(int(c.target)+i)%len(w.nodes)]
			if cand.up {
				n, c.target = cand, cand.id
				break
			}
		}
		if !n.up {
			return // every node down: try again next step
		}
	}
	r.attempts++
	op := wire.OpSendMessages
	if r.kind == simStore {
		op = wire.OpStoreConsumerOffset
	}
	// A copy per attempt: consensus may keep the body it is given.
	p := &partitionProposal{entry: n.entry, op: op, body: append([]byte(nil), r.body...), bodyOwned: true,
		done: make(chan partitionOutcome, 1)}
	if r.kind == simSend {
		p.user, p.client, p.request, p.sum = 1, c.id, r.request, r.sum
	}
	r.prop, r.node, r.boot, r.sentAt = p, n.id, n.boots, w.now
	if !n.entry.shard.submit(p) {
		p.done <- partitionOutcome{code: wire.ErrTransientNotAccepted}
	}
	w.trace.add("attempt", uint64(c.index), r.request, uint64(n.id))
}

// clientsStep lets every client start, check or retry its request.
func (w *simWorld) clientsStep(newRequests bool) {
	for _, c := range w.clients {
		r := c.pending
		if r == nil {
			if !newRequests || w.rng.Float64() >= simRequestRate {
				continue
			}
			var err error
			if r, err = w.newRequest(c); err != nil {
				w.fail(err)
				return
			}
			c.pending = r
			w.attempt(c, r)
			continue
		}
		if r.prop == nil {
			w.attempt(c, r)
			continue
		}
		n := w.nodes[r.node]
		out, ok := attemptOutcome(r.prop.done, n.boots != r.boot || !n.up || w.now-r.sentAt > simAttemptTimeout)
		if !ok {
			continue
		}
		w.trace.add("outcome", uint64(c.index), r.request, uint64(out.code), out.baseOffset)
		switch out.code {
		case wire.OK:
			w.acknowledged(c, r, out)
			c.pending = nil
			continue
		case wire.ErrTransientNotAccepted:
			w.stats.Refused++
			c.target = uint8((int(c.target) + 1) % len(w.nodes))
		default:
			w.stats.Ambiguous++
			r.ambiguous = true
		}
		r.prop = nil
		if r.attempts >= simAttemptsMax {
			if r.kind == simSend {
				w.ledger.abandoned[simRequestName(c.index, r.request)] = true
			}
			c.pending = nil
		}
	}
}

// attemptOutcome takes a simulated client's attempt's outcome: the answer
// when there is one, else an ambiguous one when gone (its node crashed
// under it, or it waited past the client's timeout); ok false: still
// waiting.
func attemptOutcome(done chan partitionOutcome, gone bool) (out partitionOutcome, ok bool) {
	select {
	case out = <-done:
		return out, true
	default:
	}
	if gone {
		return partitionOutcome{code: wire.ErrTransientNotCommitted}, true
	}
	return partitionOutcome{}, false
}

// acknowledged records an OK: offsets must never have been handed out
// before (offsets are never reused).
func (w *simWorld) acknowledged(c *simClient, r *simRequest, out partitionOutcome) {
	w.stats.Acked++
	epoch, certain := r.epochLo, r.epochLo == simEpoch(w.revision, w.purgeWanted)
	if r.kind == simStore {
		w.debugf("client %d: store %d acknowledged by node %d", c.index, r.value, r.node)
		w.stats.OffsetStores++
		if certain {
			k := [2]uint64{epoch, uint64(c.index)}
			w.ledger.storeAcked[k] = max(w.ledger.storeAcked[k], r.value)
		}
		return
	}
	w.ledger.acks = append(w.ledger.acks, simAck{client: c.index, request: r.request, base: out.baseOffset, count: r.messages,
		epoch: epoch, certain: certain})
	for m := 0; m < r.messages; m++ {
		name := simPayloadName(c.index, r.request, m)
		off := out.baseOffset + uint64(m)
		w.ledger.ackedEnd = max(w.ledger.ackedEnd, off+1)
		if !certain {
			continue
		}
		k := [2]uint64{epoch, off}
		if prev, ok := w.ledger.offsetOwner[k]; ok && prev != name {
			w.fail(fmt.Errorf("offset %d acknowledged twice in purge epoch %d: for %s and for %s", off, epoch, prev, name))
		}
		w.ledger.offsetOwner[k] = name
	}
}

// purgeStep: metadata purges the topic now and then (a seed's purgeRate),
// as PurgeTopic does: the partition's purge generation moves on every up
// node (a node that is down learns it when it boots), and the group's
// primary orders the purge in its log (proposeWatermarks).
func (w *simWorld) purgeStep() {
	if !w.faults || w.sc.purgeRate == 0 || w.purgeRng.Float64() >= w.sc.purgeRate {
		return
	}
	w.purgeWanted++
	w.stats.Purges++
	w.trace.add("purge", w.purgeWanted)
	w.debugf("metadata purges the topic: generation %d", w.purgeWanted)
	for _, n := range w.nodes {
		if n.up && n.entry != nil {
			n.plane.syncWatermarks(n.entry, w.desired(false).part)
		}
	}
}

// simEpoch names an epoch of the partition's offsets: its incarnation
// (revision) and the purge generation its files reflect.
func simEpoch(revision, purgeGeneration uint64) uint64 { return revision<<40 | purgeGeneration }

// recreateStep: metadata deletes the topic and creates it again now and
// then (a seed's recreateRate), under a new revision: every up node
// removes its partition (files and group) and opens the new incarnation
// as created while it runs; a node that is down finds the new revision at
// its boot, sets the old directory aside and rejoins the new group.
func (w *simWorld) recreateStep() {
	if !w.faults || w.sc.recreateRate == 0 || w.recreateRng.Float64() >= w.sc.recreateRate {
		return
	}
	w.revision++
	w.purgeWanted, w.ledger.purgeCarriedOut, w.ledger.purgeOps = 0, 0, map[uint64]uint64{}
	w.beyondBudget = false // what the earlier incarnation lost is gone with it
	w.stats.Recreates++
	w.trace.add("recreate", w.revision)
	w.debugf("metadata deletes the topic and creates it again: revision %d", w.revision)
	for _, n := range w.nodes {
		if !n.up || n.entry == nil {
			continue
		}
		n.plane.remove(n.entry)
		ne := n.plane.open(w.key, w.desired(true))
		n.boots++ // a new incarnation for the consumer-offset checker
		n.entry, n.fencedSince, n.reopenWanted, n.scrub = ne, 0, nil, scrubState{}
		if ne.log == nil || ne.group == nil {
			w.debugf("node %d: the new incarnation did not open: %v", n.id, ne.quarantine)
			w.crash(n, false)
			n.restartAt = w.now + 1_000_000
			continue
		}
		n.plane.syncWatermarks(ne, w.desired(false).part)
	}
}

// purgeApplied (partitionShard.purged) records that node n carried out a
// purge generation at op: every replica carries it out at the same op.
func (w *simWorld) purgeApplied(n *simNode, e *partitionEntry, generation, op uint64) {
	w.debugf("node %d: purge generation %d carried out at op %d (revision %d)", n.id, generation, op, e.revision)
	if e.revision != w.revision {
		return // an earlier incarnation's, on its way out
	}
	w.ledger.purgeCarriedOut = max(w.ledger.purgeCarriedOut, generation)
	if prev, ok := w.ledger.purgeOps[generation]; ok && prev != op && !w.beyondBudget {
		w.fail(fmt.Errorf("node %d carried out purge generation %d at op %d, another replica at op %d", n.id, generation, op, prev))
	}
	w.ledger.purgeOps[generation] = op
}

// pollStep reads a few messages from a random up node, as a consumer
// served by that replica would, and the consumer offsets it reports.
func (w *simWorld) pollStep() {
	if w.rng.Float64() >= simPollRate {
		return
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if !n.up || n.dying || n.entry.log == nil || n.entry.purgeInFlight.Load() {
		return // (a purge failed half way: the node refuses reads, partition_read.go)
	}
	w.stats.Polls++
	next := n.entry.log.NextOffset()
	from := uint64(0)
	if next > 0 {
		from = w.rng.Uint64N(next)
	}
	res, err := n.entry.log.Poll(partitions.PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: from},
		Count: uint32(1 + w.rng.IntN(10))})
	if errors.Is(err, partitions.ErrCorrupt) {
		// Refused, never served; the node repairs it from its peers, as
		// the poll handler does (partition_read.go).
		w.damageFound(n, "a poll")
		var ce *partitions.CorruptionError
		errors.As(err, &ce)
		n.plane.repairDamaged(n.entry, ce)
		return
	}
	if err != nil {
		w.fail(fmt.Errorf("node %d: poll from %d: %w", n.id, from, err))
		return
	}
	epoch := simEpoch(n.entry.revision, n.entry.marker.PurgeGeneration) // what this replica's log reflects
	err = forEachMessage(res.Records, func(off uint64, payload []byte) {
		w.stats.PolledMessages++
		name := payloadName(payload)
		k := [2]uint64{epoch, off}
		if prev, ok := w.ledger.polled[k]; ok && prev != name {
			w.fail(fmt.Errorf("node %d: poll saw %q at offset %d (purge epoch %d), an earlier poll saw %q", n.id, name, off, epoch, prev))
		}
		w.ledger.polled[k] = name
	})
	if err != nil {
		w.fail(fmt.Errorf("node %d: polled records: %w", n.id, err))
	}
	for _, c := range w.clients {
		v, _ := n.entry.log.ConsumerOffset(c.consumerKind(), c.index+1)
		key := [4]uint64{uint64(n.id), uint64(n.boots), uint64(c.index), epoch}
		if prev := w.ledger.observed[key]; v < prev {
			w.fail(fmt.Errorf("node %d (boot %d): consumer %d's offset went back from %d to %d", n.id, n.boots, c.index+1, prev, v))
		}
		w.ledger.observed[key] = v
		if v > w.ledger.storeAsked[c.index] {
			w.fail(fmt.Errorf("node %d: consumer %d's offset %d was never stored (highest asked %d)", n.id, c.index+1, v, w.ledger.storeAsked[c.index]))
		}
	}
}

// forEachMessage calls fn for each message of whole batch records.
func forEachMessage(records []byte, fn func(offset uint64, payload []byte)) error {
	for len(records) > 0 {
		h, err := wire.DecodeBatchHeader(records)
		if err != nil {
			return err
		}
		if h.BatchLength > uint64(len(records)) || h.BatchLength < wire.BatchHeaderSize {
			return fmt.Errorf("batch at offset %d: length %d of %d bytes", h.BaseOffset, h.BatchLength, len(records))
		}
		it := wire.NewBatchIter(records[:h.BatchLength])
		for it.Next() {
			m := it.Message()
			fn(h.BaseOffset+uint64(m.OffsetDelta), m.Payload)
		}
		if err := it.Err(); err != nil {
			return err
		}
		records = records[h.BatchLength:]
	}
	return nil
}

// payloadName is the "c/r/m/" prefix of a simulator payload.
func payloadName(payload []byte) string {
	slashes := 0
	for i, b := range payload {
		if b == '/' {
			slashes++
			if slashes == 3 {
				return string(payload[:i+1])
			}
		}
	}
	return string(payload)
}
