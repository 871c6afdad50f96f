package node

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// soloGroup is the one-replica commit path behind consensus.Group: with a
// single replica every accepted proposal is prepared and committed in the same
// Ready (persisted by the driver before it is applied). It keeps the metadata
// plane's client table (sessions, dedup, reply ring) exactly as the
// replicated core does, so the session rules do not depend on the replica
// count. It holds no clock of its own: now supplies the primary's timestamp.
type soloGroup struct {
	cfg          consensus.Config
	now          func() uint64 // µs since epoch
	op           uint64
	lastStamp    uint64
	lastChecksum uint64
	checkpointOp uint64
	table        *clientTable
	inFlight     map[consensus.Uint128]struct{}
	pending      consensus.Ready
	pendingMax   int
}

var _ consensus.Group = (*soloGroup)(nil)

func newSoloGroup(cfg consensus.Config, now func() uint64) *soloGroup {
	depth := int(cfg.PrepareQueueDepth)
	if depth <= 0 {
		depth = 32
	}
	return &soloGroup{
		cfg:        cfg,
		now:        now,
		table:      newClientTable(int(cfg.ClientTableMax)),
		inFlight:   make(map[consensus.Uint128]struct{}),
		pendingMax: 2 * depth,
	}
}

// restartSoloGroup rebuilds the group from what the driver recovered: the
// client table as of the snapshot, then every journal entry after it (with a
// single replica the whole journal head is committed).
func restartSoloGroup(cfg consensus.Config, now func() uint64, st consensus.Restored, tableBytes []byte) (*soloGroup, error) {
	g := newSoloGroup(cfg, now)
	if st.Snapshot != nil {
		g.op = st.Snapshot.Op
		g.checkpointOp = st.Snapshot.Op
	}
	if len(tableBytes) > 0 {
		t, err := decodeClientTable(tableBytes, int(cfg.ClientTableMax))
		if err != nil {
			return nil, err
		}
		g.table = t
	}
	for _, e := range st.Entries {
		if e.Header.Op <= g.op {
			continue
		}
		if e.Header.Op != g.op+1 {
			return nil, fmt.Errorf("restart: journal gap: op %d follows op %d", e.Header.Op, g.op)
		}
		g.op = e.Header.Op
		g.lastStamp = max(g.lastStamp, e.Header.Timestamp)
		g.lastChecksum = e.Header.Checksum
		g.table.commit(e.Header)
	}
	return g, nil
}

func (g *soloGroup) Tick()                  {}
func (g *soloGroup) Step(consensus.Message) {}

func (g *soloGroup) reply(req consensus.Request, kind consensus.ReplyKind, cached []byte) {
	g.pending.Replies = append(g.pending.Replies, consensus.Reply{Tag: req.Tag, Kind: kind, Cached: cached})
}

func (g *soloGroup) Propose(req consensus.Request) {
	if len(g.pending.Entries) >= g.pendingMax {
		g.reply(req, consensus.ReplyNotAccepted, nil)
		return
	}
	if g.cfg.ClientTableMax > 0 {
		if _, busy := g.inFlight[req.Client]; busy {
			g.reply(req, consensus.ReplyNotCommitted, nil)
			return
		}
		if req.Operation != consensus.OperationRegister {
			switch v, cached := g.table.check(req); v {
			case verdictReplay:
				g.reply(req, consensus.ReplyCommitted, cached)
				return
			case verdictInFlight:
				g.reply(req, consensus.ReplyNotCommitted, nil)
				return
			case verdictEvictNoSession:
				g.reply(req, consensus.ReplyEvictNoSession, nil)
				return
			case verdictEvictSessionTooLow:
				g.reply(req, consensus.ReplyEvictSessionTooLow, nil)
				return
			case verdictDropped:
				g.reply(req, consensus.ReplyDropped, nil)
				return
			case verdictAlreadyApplied:
				g.reply(req, consensus.ReplyAlreadyApplied, nil)
				return
			}
		}
		g.inFlight[req.Client] = struct{}{}
	}
	g.op++
	g.lastStamp = max(g.now(), g.lastStamp+1)
	h := consensus.PrepareHeader{
		Op:        g.op,
		Commit:    g.op,
		Timestamp: g.lastStamp,
		Parent:    g.lastChecksum,
		Client:    req.Client,
		Session:   req.Session,
		Request:   req.Request,
		ReqSum:    req.Checksum,
		Operation: req.Operation,
		UserID:    req.UserID,
	}
	h.Checksum = prepareChecksum(h, req.Body)
	g.lastChecksum = h.Checksum
	p := consensus.Prepare{Header: h, Body: req.Body}
	if g.cfg.ClientTableMax > 0 {
		g.table.commit(h)
	}
	g.pending.Entries = append(g.pending.Entries, p)
	g.pending.Committed = append(g.pending.Committed, p)
	g.pending.Replies = append(g.pending.Replies, consensus.Reply{
		Tag: req.Tag, Kind: consensus.ReplyCommitted, Op: h.Op, Timestamp: h.Timestamp,
	})
}

// prepareChecksum is the op's identity: XXH3 over the header fields (without
// View and Checksum) and the body.
func prepareChecksum(h consensus.PrepareHeader, body []byte) uint64 {
	var b [96]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], h.Op)
	le.PutUint64(b[8:], h.Commit)
	le.PutUint64(b[16:], h.Timestamp)
	le.PutUint64(b[24:], h.Parent)
	le.PutUint64(b[32:], h.Client.Lo)
	le.PutUint64(b[40:], h.Client.Hi)
	le.PutUint64(b[48:], h.Session)
	le.PutUint64(b[56:], h.Request)
	le.PutUint64(b[64:], h.ReqSum)
	b[72] = byte(h.Operation)
	le.PutUint32(b[73:], h.UserID)
	le.PutUint64(b[77:], xxh3.Hash(body))
	return xxh3.Hash(b[:85])
}

// RecordReply stores the reply body of an applied request for dedup replay.
func (g *soloGroup) RecordReply(client consensus.Uint128, request uint64, body []byte) {
	g.table.recordReply(client, request, body)
}

// ClientTableSnapshot is the table's deterministic encoding for checkpoints.
func (g *soloGroup) ClientTableSnapshot() []byte { return g.table.encode() }

func (g *soloGroup) Checkpoint(s consensus.Snapshot) {
	g.checkpointOp = s.Op
	g.pending.Superblock = &consensus.VsrState{CommitMax: g.op, CheckpointOp: s.Op}
}

func (g *soloGroup) Ready() consensus.Ready { return g.pending }

func (g *soloGroup) Advance(rd consensus.Ready) {
	for _, p := range rd.Committed {
		delete(g.inFlight, p.Header.Client)
	}
	g.pending.Entries = g.pending.Entries[len(rd.Entries):]
	g.pending.Committed = g.pending.Committed[len(rd.Committed):]
	g.pending.Replies = g.pending.Replies[len(rd.Replies):]
	if rd.Superblock != nil && g.pending.Superblock == rd.Superblock {
		g.pending.Superblock = nil
	}
	if len(g.pending.Entries) == 0 {
		g.pending.Entries = nil
		g.pending.Committed = nil
	}
	if len(g.pending.Replies) == 0 {
		g.pending.Replies = nil
	}
}

func (g *soloGroup) HasReady() bool           { return !g.pending.IsEmpty() }
func (g *soloGroup) ReplicaID() uint8         { return g.cfg.ReplicaID }
func (g *soloGroup) View() uint32             { return 0 }
func (g *soloGroup) LogView() uint32          { return 0 }
func (g *soloGroup) Status() consensus.Status { return consensus.StatusNormal }
func (g *soloGroup) IsPrimary() bool          { return true }
func (g *soloGroup) Op() uint64               { return g.op }
func (g *soloGroup) CommitMin() uint64        { return g.op }
func (g *soloGroup) CommitMax() uint64        { return g.op }
