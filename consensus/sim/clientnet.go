package sim

import (
	"slices"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// A clientPacket is a request on its way to a replica or a reply on its
// way back; clients talk to replicas over their own lossy queue.
type clientPacket struct {
	deliverTick uint64
	seq         uint64
	client      int
	node        int // request: destination; reply: unused
	req         consensus.Request
	rep         consensus.Reply
	isReply     bool
}

// findPrimary is the client's leader lookup: usually someone claiming to
// be primary (possibly a stale one), sometimes any node.
func (w *world) findPrimary(group int) int {
	var claim []int
	for i, nd := range w.nodes {
		if nd.up && nd.replicas[group].g != nil && nd.replicas[group].g.IsPrimary() {
			claim = append(claim, i)
		}
	}
	if len(claim) > 0 && w.rng.chance(0.8) {
		return claim[w.rng.intn(len(claim))]
	}
	return w.rng.intn(len(w.nodes))
}

func (w *world) clientLatency() uint64 { return uint64(w.rng.between(1, 3)) }

func (w *world) sendRequest(c *simClient, to int, req consensus.Request) {
	if w.rng.chance(w.scn.ClientDropProbability) {
		return
	}
	w.clientSeq++
	w.clientQueue = append(w.clientQueue, clientPacket{deliverTick: w.now + w.clientLatency(), seq: w.clientSeq, client: c.idx, node: to, req: req})
}

func (w *world) sendReply(client int, rep consensus.Reply) {
	if w.rng.chance(w.scn.ClientDropProbability) {
		return
	}
	w.clientSeq++
	w.clientQueue = append(w.clientQueue, clientPacket{deliverTick: w.now + w.clientLatency(), seq: w.clientSeq, client: client, rep: rep, isReply: true})
}

func (w *world) deliverClientPackets() {
	var due []clientPacket
	kept := w.clientQueue[:0]
	for _, p := range w.clientQueue {
		if p.deliverTick <= w.now {
			due = append(due, p)
		} else {
			kept = append(kept, p)
		}
	}
	w.clientQueue = kept
	slices.SortFunc(due, func(a, b clientPacket) int {
		if a.deliverTick != b.deliverTick {
			return int(a.deliverTick) - int(b.deliverTick)
		}
		return int(a.seq) - int(b.seq)
	})
	for _, p := range due {
		c := w.clients[p.client]
		if p.isReply {
			c.onReply(w, p.rep)
			continue
		}
		nd := w.nodes[p.node]
		d := nd.replicas[c.group]
		if !nd.up || d.g == nil {
			continue
		}
		d.pending[p.req.Tag] = proposal{client: c.idx, clientID: c.id, request: p.req.Request, op: p.req.Operation, bodySum: xxh3.Hash(p.req.Body), tick: w.now}
		w.trace(evPropose, p.node, c.group, p.req.Tag, p.req.Request)
		d.catchUp()
		d.g.Propose(p.req)
		d.drain()
	}
}
