package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/lodestream/lodestream/consensus"
)

// replyRingCapacity is how many committed replies per client the table keeps
// for replay (wire-protocol §2.6).
const replyRingCapacity = 5

type cachedReply struct {
	request  uint64
	checksum uint64
	body     []byte // nil until the driver records the applied reply
}

type clientEntry struct {
	client     consensus.Uint128
	epoch      uint64 // commit op of the latest Register: the session fence
	userID     uint32
	watermark  uint64 // highest committed request id
	lastCommit uint64 // op of the latest committed request (eviction order)
	ring       []cachedReply
}

// clientTable is the metadata plane's session table: fences, request
// watermarks and the last few replies of every registered client. Updated
// only from committed ops, so it is identical on every replica that applied
// the same log.
type clientTable struct {
	entriesMax int
	entries    map[consensus.Uint128]*clientEntry
}

func newClientTable(entriesMax int) *clientTable {
	if entriesMax <= 0 {
		entriesMax = 8192
	}
	return &clientTable{entriesMax: entriesMax, entries: make(map[consensus.Uint128]*clientEntry)}
}

// verdict is the preflight decision for a request on the metadata plane.
type verdict uint8

const (
	verdictNew verdict = iota
	verdictReplay
	verdictEvictNoSession
	verdictEvictSessionTooLow
	verdictDropped
	verdictAlreadyApplied
	verdictInFlight // committed but the reply body is not recorded yet
)

// check applies the §3.11 preflight rows to a non-Register request.
func (t *clientTable) check(req consensus.Request) (verdict, []byte) {
	e, ok := t.entries[req.Client]
	if !ok {
		return verdictEvictNoSession, nil
	}
	switch {
	case req.Session < e.epoch:
		return verdictEvictSessionTooLow, nil
	case req.Session > e.epoch:
		return verdictDropped, nil
	case req.Request > e.watermark:
		return verdictNew, nil
	}
	for i := range e.ring {
		r := &e.ring[i]
		if r.request != req.Request {
			continue
		}
		if r.checksum != 0 && req.Checksum != 0 && r.checksum != req.Checksum {
			return verdictDropped, nil
		}
		if r.body == nil {
			return verdictInFlight, nil
		}
		return verdictReplay, r.body
	}
	return verdictAlreadyApplied, nil
}

// commit folds one committed op into the table.
func (t *clientTable) commit(h consensus.PrepareHeader) {
	switch h.Operation {
	case consensus.OperationRegister:
		e, ok := t.entries[h.Client]
		if !ok {
			t.makeRoom()
			e = &clientEntry{client: h.Client}
			t.entries[h.Client] = e
		}
		e.epoch = h.Op
		e.userID = h.UserID
		e.lastCommit = h.Op
	case consensus.OperationLogout:
		delete(t.entries, h.Client)
	default:
		e, ok := t.entries[h.Client]
		if !ok {
			return // server-originated op (no session), nothing to remember
		}
		if h.Request > e.watermark {
			e.watermark = h.Request
		}
		e.lastCommit = h.Op
		if len(e.ring) == replyRingCapacity {
			copy(e.ring, e.ring[1:])
			e.ring = e.ring[:replyRingCapacity-1]
		}
		e.ring = append(e.ring, cachedReply{request: h.Request, checksum: h.ReqSum})
	}
}

// recordReply stores the applied reply body for replay.
func (t *clientTable) recordReply(client consensus.Uint128, request uint64, body []byte) {
	e, ok := t.entries[client]
	if !ok {
		return
	}
	for i := range e.ring {
		if e.ring[i].request == request {
			e.ring[i].body = append([]byte{}, body...)
			return
		}
	}
}

// makeRoom evicts the entry whose latest reply is oldest (ties: lowest client
// id) when the table is full. Deterministic: it looks at committed data only.
func (t *clientTable) makeRoom() {
	if len(t.entries) < t.entriesMax {
		return
	}
	var victim *clientEntry
	for _, e := range t.entries {
		if victim == nil || e.lastCommit < victim.lastCommit ||
			(e.lastCommit == victim.lastCommit && lessUint128(e.client, victim.client)) {
			victim = e
		}
	}
	delete(t.entries, victim.client)
}

func lessUint128(a, b consensus.Uint128) bool {
	if a.Hi != b.Hi {
		return a.Hi < b.Hi
	}
	return a.Lo < b.Lo
}

// encode serialises the table deterministically (sorted by client id).
func (t *clientTable) encode() []byte {
	list := make([]*clientEntry, 0, len(t.entries))
	for _, e := range t.entries {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return lessUint128(list[i].client, list[j].client) })
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(list)))
	for _, e := range list {
		out = binary.LittleEndian.AppendUint64(out, e.client.Lo)
		out = binary.LittleEndian.AppendUint64(out, e.client.Hi)
		out = binary.LittleEndian.AppendUint64(out, e.epoch)
		out = binary.LittleEndian.AppendUint32(out, e.userID)
		out = binary.LittleEndian.AppendUint64(out, e.watermark)
		out = binary.LittleEndian.AppendUint64(out, e.lastCommit)
		out = append(out, byte(len(e.ring)))
		for _, r := range e.ring {
			out = binary.LittleEndian.AppendUint64(out, r.request)
			out = binary.LittleEndian.AppendUint64(out, r.checksum)
			out = binary.LittleEndian.AppendUint32(out, uint32(len(r.body)))
			out = append(out, r.body...)
		}
	}
	return out
}

var errClientTableCorrupt = errors.New("client table snapshot corrupt")

// decodeClientTable restores a table written by encode.
func decodeClientTable(b []byte, entriesMax int) (*clientTable, error) {
	t := newClientTable(entriesMax)
	r := reader{b: b}
	n := r.u32()
	if r.err == nil && int(n) > t.entriesMax {
		return nil, fmt.Errorf("%w: %d entries, table holds %d", errClientTableCorrupt, n, t.entriesMax)
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		e := &clientEntry{}
		e.client.Lo, e.client.Hi = r.u64(), r.u64()
		e.epoch, e.userID, e.watermark, e.lastCommit = r.u64(), r.u32(), r.u64(), r.u64()
		ringLen := int(r.u8())
		if ringLen > replyRingCapacity {
			return nil, fmt.Errorf("%w: ring of %d replies", errClientTableCorrupt, ringLen)
		}
		for j := 0; j < ringLen && r.err == nil; j++ {
			c := cachedReply{request: r.u64(), checksum: r.u64()}
			c.body = r.bytes(int(r.u32()))
			e.ring = append(e.ring, c)
		}
		t.entries[e.client] = e
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errClientTableCorrupt, r.err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errClientTableCorrupt, len(r.b))
	}
	return t, nil
}

// reader is a bounds-checked little-endian cursor; the first short read
// sticks in err and every later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("need %d bytes, have %d", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) bytes(n int) []byte {
	if b := r.take(n); b != nil {
		return append([]byte{}, b...)
	}
	return nil
}
