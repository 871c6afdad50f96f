package node

import (
	"context"
	"errors"
	"sync"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/transport/bus"
)

// Partition record fetches over the replica bus (fetch frames 30/31,
// docs/bus.md): the requesting side of a state transfer
// (partition_transfer.go) and the serving side that reads a partition's
// stored records for a peer.

// fetchServesMax bounds the fetch requests served at once; beyond it a
// peer is told Unavailable and tries another replica.
const fetchServesMax = 2

// fetchRecords implements recordSource over the bus: one request, its
// reply matched by nonce, bounded by ctx.
func (p *peerBus) fetchRecords(ctx context.Context, peer uint8, group, epoch, from, end uint64, bytesMax uint32) (fetchedRecords, error) {
	ref := p.b.Load()
	if ref == nil {
		return fetchedRecords{}, errTransferNoPeer
	}
	nonce := consensus.Uint128{Lo: randomUint64(), Hi: randomUint64()}
	reply := make(chan bus.Fetch, 1)
	p.mu.Lock()
	if p.pending == nil {
		p.pending = make(map[consensus.Uint128]chan bus.Fetch)
	}
	p.pending[nonce] = reply
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, nonce)
		p.mu.Unlock()
	}()
	ref.bus.SendFetch(peer, &bus.Fetch{Kind: bus.FetchRequest, From: ref.self, Group: group, Nonce: nonce, Offset: from,
		EndOffset: end, BytesMax: bytesMax, PurgeGeneration: epoch})
	select {
	case <-ctx.Done():
		return fetchedRecords{}, ctx.Err()
	case f := <-reply:
		if f.From != peer || f.Group != group || f.Offset != from {
			return fetchedRecords{}, errors.New("fetch reply does not match its request")
		}
		return fetchedRecordsOf(f), nil
	}
}

// fetchedRecordsOf is what a fetch reply tells a state transfer.
func fetchedRecordsOf(f bus.Fetch) fetchedRecords {
	return fetchedRecords{status: f.Status, first: f.FirstOffset, next: f.NextOffset, records: f.Records, end: f.EndOffset,
		purgeGeneration: f.PurgeGeneration, purgeOp: f.PurgeOp}
}

// deliverFetchReply hands a reply to the fetch waiting for its nonce (a
// late or unknown one is dropped).
func (p *peerBus) deliverFetchReply(f bus.Fetch) {
	p.mu.Lock()
	ch := p.pending[f.Nonce]
	p.mu.Unlock()
	if ch != nil {
		select {
		case ch <- f:
		default:
		}
	}
}

// onFetch runs on a bus reader goroutine: replies go to their waiting
// fetch; requests are served on their own goroutine (bounded), so a disk
// read never holds up the consensus messages behind it.
func (n *Node) onFetch(f bus.Fetch) {
	switch f.Kind {
	case bus.FetchReply:
		n.plane.peers.deliverFetchReply(f)
		return
	case bus.FetchStatus:
		n.onFetchStatus(f)
		return
	case bus.FetchStatusReply:
		n.onFetchStatusReply(f)
		return
	}
	select {
	case n.fetchServes <- struct{}{}:
	default:
		n.replyFetch(f, bus.Fetch{Status: bus.FetchUnavailable})
		return
	}
	go func() {
		defer func() { <-n.fetchServes }()
		n.replyFetch(f, n.serveFetch(f))
	}()
}

// serveFetch reads the records a peer asked for from the local log.
func (n *Node) serveFetch(f bus.Fetch) bus.Fetch {
	return n.plane.serveFetch(f, bus.FetchRecordsMax(n.cfg.MessageBus.MaxMessageSize.Bytes()))
}

// serveFetch reads the records a peer asked for from the local log, at
// most frameMax bytes of them (what one replica frame carries).
func (p *partitionPlane) serveFetch(f bus.Fetch, frameMax uint64) bus.Fetch {
	e := p.entryByGroup(f.Group)
	if e == nil || e.log == nil {
		return bus.Fetch{Status: bus.FetchNoSuchGroup}
	}
	// The records must be of the purge epoch asked for: a purge restarts
	// the offsets at 0. Read between two looks at the epoch, so a purge
	// carried out meanwhile is not served as the older one.
	gen, purgeOp := e.appliedPurge.Load(), e.appliedPurgeOp.Load()
	if e.purgeInFlight.Load() {
		return bus.Fetch{Status: bus.FetchUnavailable, PurgeGeneration: gen, PurgeOp: purgeOp}
	}
	if gen != f.PurgeGeneration {
		return bus.Fetch{Status: bus.FetchOtherEpoch, NextOffset: e.log.NextOffset(), PurgeGeneration: gen, PurgeOp: purgeOp}
	}
	st := e.log.Stats()
	records, end, err := e.log.ReadRecords(nil, f.Offset, f.EndOffset, min(uint64(f.BytesMax), frameMax))
	if e.purgeInFlight.Load() || e.appliedPurge.Load() != gen {
		return bus.Fetch{Status: bus.FetchUnavailable, PurgeGeneration: gen, PurgeOp: purgeOp}
	}
	switch {
	case errors.Is(err, partitions.ErrBelowRetained):
		return bus.Fetch{Status: bus.FetchBelowRetained, FirstOffset: st.FirstOffset, NextOffset: e.log.NextOffset(), EndOffset: f.Offset,
			PurgeGeneration: gen, PurgeOp: purgeOp}
	case err != nil:
		p.log.Warn("serving a partition fetch", "dir", e.dir, "offset", f.Offset, "err", err)
		return bus.Fetch{Status: bus.FetchUnavailable}
	}
	if uint64(len(records)) > frameMax {
		// A single record larger than a replica frame (message_bus.max_message_size) cannot travel.
		p.log.Warn("a stored record exceeds message_bus.max_message_size; it cannot be transferred", "dir", e.dir,
			"offset", f.Offset, "bytes", len(records), "max_records_bytes", frameMax)
		return bus.Fetch{Status: bus.FetchUnavailable}
	}
	return bus.Fetch{Status: bus.FetchOK, FirstOffset: st.FirstOffset, NextOffset: e.log.NextOffset(), EndOffset: end, Records: records,
		PurgeGeneration: gen, PurgeOp: purgeOp}
}

// replyFetch answers request req with reply's status and records.
func (n *Node) replyFetch(req bus.Fetch, reply bus.Fetch) {
	reply = fetchReply(req, reply, n.topo.self)
	if b := n.bus; b != nil {
		b.SendFetch(req.From, &reply)
	}
}

// fetchReply addresses reply (from replica self) to request req; a reply
// without records ends where the request started.
func fetchReply(req bus.Fetch, reply bus.Fetch, self uint8) bus.Fetch {
	reply.Kind, reply.From, reply.Group, reply.Nonce, reply.Offset = bus.FetchReply, self, req.Group, req.Nonce, req.Offset
	if reply.Status != bus.FetchOK || reply.EndOffset < req.Offset {
		reply.EndOffset, reply.Records = req.Offset, nil
	}
	return reply
}

// peerBusPending is the fetch bookkeeping peerBus carries.
type peerBusPending struct {
	mu      sync.Mutex
	pending map[consensus.Uint128]chan bus.Fetch
}
