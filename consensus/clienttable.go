package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// replyRingCapacity is how many committed replies each client keeps (§3.11).
const replyRingCapacity = 5

// clientTable is the metadata plane's session table (spec §3.11): fixed
// slots keyed by client id. It changes only when ops commit, so every
// replica that commits the same log holds the same table.
type clientTable struct {
	slots []clientEntry
	index map[Uint128]int // client -> slot; lookups only, never iterated
}

type clientEntry struct {
	used         bool
	client       Uint128
	epoch        uint64 // commit op of the client's latest Register: the session
	userID       uint32
	watermark    uint64 // highest committed request number
	latestCommit uint64 // op of the latest committed reply (eviction order)
	ring         [replyRingCapacity]replyRecord
	ringLen      int
	ringNext     int
}

type replyRecord struct {
	request   uint64
	checksum  uint64
	op        uint64
	timestamp uint64
	body      []byte
}

func newClientTable(slotsMax int) *clientTable {
	return &clientTable{slots: make([]clientEntry, slotsMax), index: make(map[Uint128]int)}
}

func (t *clientTable) lookup(client Uint128) *clientEntry {
	if i, ok := t.index[client]; ok {
		return &t.slots[i]
	}
	return nil
}

func (e *clientEntry) findReply(request uint64) *replyRecord {
	for i := 0; i < e.ringLen; i++ {
		if e.ring[i].request == request {
			return &e.ring[i]
		}
	}
	return nil
}

// register creates or rebinds a session at op (epoch := op); the watermark
// and reply ring survive a rebind. A full table evicts the entry whose
// latest reply is oldest (ties: lowest slot).
func (t *clientTable) register(client Uint128, userID uint32, op uint64) {
	e := t.lookup(client)
	if e == nil {
		slot := -1
		for i := range t.slots {
			if !t.slots[i].used {
				slot = i
				break
			}
		}
		if slot < 0 {
			slot = 0
			for i := range t.slots {
				if t.slots[i].latestCommit < t.slots[slot].latestCommit {
					slot = i
				}
			}
			delete(t.index, t.slots[slot].client)
		}
		t.slots[slot] = clientEntry{used: true, client: client}
		t.index[client] = slot
		e = &t.slots[slot]
	}
	e.epoch = op
	e.userID = userID
	e.latestCommit = op
}

func (t *clientTable) remove(client Uint128) {
	if i, ok := t.index[client]; ok {
		t.slots[i] = clientEntry{}
		delete(t.index, client)
	}
}

func (t *clientTable) record(h *PrepareHeader) {
	e := t.lookup(h.Client)
	if e == nil || h.Session != e.epoch {
		return
	}
	e.watermark = max(e.watermark, h.Request)
	e.latestCommit = h.Op
	e.ring[e.ringNext] = replyRecord{request: h.Request, checksum: h.ReqSum, op: h.Op, timestamp: h.Timestamp}
	e.ringNext = (e.ringNext + 1) % replyRingCapacity
	e.ringLen = min(e.ringLen+1, replyRingCapacity)
}

// applyClientTable folds a committed op into the table (every replica).
func (r *Replica) applyClientTable(h *PrepareHeader) {
	if r.clients == nil || h.Client.IsZero() {
		return
	}
	switch h.Operation {
	case OperationRegister:
		r.clients.register(h.Client, h.UserID, h.Op)
	case OperationLogout:
		r.clients.remove(h.Client)
	case OperationReserved:
	default:
		r.clients.record(h)
	}
}

// preflight runs the metadata plane's admission checks in the order of
// §3.11 on a Normal primary. ok=false means answer now with kind.
func (r *Replica) preflight(req *Request) (kind ReplyKind, cached replyRecord, ok bool) {
	for i := range r.pipeline {
		if r.pipeline[i].header.Client == req.Client {
			return ReplyNotCommitted, cached, false
		}
	}
	for i := range r.requestQueue {
		if r.requestQueue[i].Client == req.Client {
			return ReplyNotCommitted, cached, false
		}
	}
	if r.commitMin != r.commitMax || r.tableOp != r.commitMin {
		return ReplyNotCommitted, cached, false // primary not caught up (or not yet applied)
	}
	if req.Operation == OperationRegister {
		return 0, cached, true
	}
	e := r.clients.lookup(req.Client)
	switch {
	case e == nil:
		return ReplyEvictNoSession, cached, false
	case req.Session < e.epoch:
		return ReplyEvictSessionTooLow, cached, false
	case req.Session > e.epoch:
		return ReplyDropped, cached, false
	case req.Request > e.watermark:
		return 0, cached, true
	}
	if rec := e.findReply(req.Request); rec != nil {
		if rec.checksum == req.Checksum || rec.checksum == 0 || req.Checksum == 0 {
			return ReplyCommitted, *rec, false
		}
		return ReplyDropped, cached, false
	}
	return ReplyAlreadyApplied, cached, false
}

// RecordReply stores the reply body the state machine produced for a
// committed request, so a retry replays the same bytes. Call it while
// applying Ready.Committed (before Advance, which folds the ops into the
// table); the body is copied. It must be built from committed data only,
// identically on every replica.
func (r *Replica) RecordReply(client Uint128, request uint64, body []byte) {
	if r.clients == nil || len(r.recordedReplies) >= recordedRepliesMax {
		return
	}
	r.recordedReplies = append(r.recordedReplies, recordedReply{client: client, request: request,
		body: append([]byte(nil), body...)})
}

// ClientTableSnapshot encodes the client table as of the last op the
// driver applied and acknowledged with Advance. The driver embeds it in the
// application snapshot it passes to Checkpoint (both taken after Advance)
// and hands it back through RestoreClientTable after Restart or when it
// installs a Ready.Snapshot (before Advance of that Ready).
func (r *Replica) ClientTableSnapshot() []byte {
	if r.clients == nil {
		return nil
	}
	var b []byte
	count := 0
	for i := range r.clients.slots {
		if r.clients.slots[i].used {
			count++
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(count))
	for i := range r.clients.slots {
		e := &r.clients.slots[i]
		if !e.used {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(i))
		for _, v := range []uint64{e.client.Lo, e.client.Hi, e.epoch, uint64(e.userID), e.watermark, e.latestCommit} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = append(b, byte(e.ringLen))
		for k := 0; k < e.ringLen; k++ {
			// oldest first, so a restore replays the ring in commit order
			rec := &e.ring[(e.ringNext-e.ringLen+k+replyRingCapacity)%replyRingCapacity]
			for _, v := range []uint64{rec.request, rec.checksum, rec.op, rec.timestamp} {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.body)))
			b = append(b, rec.body...)
		}
	}
	return b
}

var errClientTableTruncated = errors.New("client table snapshot truncated")

// RestoreClientTable replaces the client table with a ClientTableSnapshot.
func (r *Replica) RestoreClientTable(data []byte) error {
	if r.clients == nil {
		return errors.New("restore client table: table disabled (client_table_max = 0)")
	}
	t := newClientTable(len(r.clients.slots))
	rd := byteReader{b: data}
	count := rd.u32()
	if int(count) > len(t.slots) {
		return fmt.Errorf("restore client table: %d entries exceed client_table_max %d", count, len(t.slots))
	}
	for range count {
		slot := int(rd.u32())
		if rd.err != nil || slot >= len(t.slots) || t.slots[slot].used {
			return fmt.Errorf("restore client table: bad slot %d", slot)
		}
		e := clientEntry{used: true}
		e.client.Lo, e.client.Hi, e.epoch = rd.u64(), rd.u64(), rd.u64()
		e.userID, e.watermark, e.latestCommit = uint32(rd.u64()), rd.u64(), rd.u64()
		e.ringLen = int(rd.u8())
		if e.ringLen > replyRingCapacity {
			return fmt.Errorf("restore client table: ring length %d over %d", e.ringLen, replyRingCapacity)
		}
		for k := 0; k < e.ringLen; k++ {
			rec := replyRecord{request: rd.u64(), checksum: rd.u64(), op: rd.u64(), timestamp: rd.u64()}
			rec.body = append([]byte(nil), rd.bytes(int(rd.u32()))...)
			e.ring[k] = rec
		}
		e.ringNext = e.ringLen % replyRingCapacity
		if rd.err != nil {
			return fmt.Errorf("restore client table: %w", rd.err)
		}
		if _, dup := t.index[e.client]; dup {
			return fmt.Errorf("restore client table: client %x:%x twice", e.client.Hi, e.client.Lo)
		}
		t.slots[slot] = e
		t.index[e.client] = slot
	}
	if rd.err != nil {
		return fmt.Errorf("restore client table: %w", rd.err)
	}
	if len(rd.b) != 0 {
		return fmt.Errorf("restore client table: %d trailing bytes", len(rd.b))
	}
	r.clients = t
	r.tableOp = 0
	if r.snapshot != nil {
		r.tableOp = r.snapshot.Op // the table travels with the latest snapshot
	}
	return nil
}

type byteReader struct {
	b   []byte
	err error
}

func (rd *byteReader) bytes(n int) []byte {
	if rd.err != nil || n < 0 || n > len(rd.b) {
		rd.err = errClientTableTruncated
		return nil
	}
	v := rd.b[:n]
	rd.b = rd.b[n:]
	return v
}

func (rd *byteReader) u8() uint8 {
	if v := rd.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (rd *byteReader) u32() uint32 {
	if v := rd.bytes(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (rd *byteReader) u64() uint64 {
	if v := rd.bytes(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

type recordedReply struct {
	client  Uint128
	request uint64
	body    []byte
}

// recordedRepliesMax bounds RecordReply bodies held between Ready and Advance.
const recordedRepliesMax = 4 * messagesPerReadyMax

// foldClientTable folds applied ops into the table, in order, once each.
func (r *Replica) foldClientTable(committed []Prepare) {
	if r.clients == nil {
		return
	}
	for i := range committed {
		h := &committed[i].Header
		if h.Op <= r.tableOp {
			continue // already reflected (e.g. restored from a later snapshot)
		}
		r.applyClientTable(h)
		r.tableOp = h.Op
		for k := range r.recordedReplies {
			rec := &r.recordedReplies[k]
			if rec.client == h.Client && rec.request == h.Request {
				if e := r.clients.lookup(h.Client); e != nil {
					if ring := e.findReply(h.Request); ring != nil && ring.op == h.Op {
						ring.body = rec.body
					}
				}
			}
		}
	}
	clear(r.recordedReplies)
	r.recordedReplies = r.recordedReplies[:0]
}
