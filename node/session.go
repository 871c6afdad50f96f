package node

import (
	"sort"
	"sync"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// noUserID is what Client entries report for a connection with no session.
const noUserID = ^uint32(0)

// session is one connection's binding to a metadata-plane client session.
// Its fields change on the connection's own goroutine (register, logout) and
// on the heartbeat goroutine (eviction); readers elsewhere (GetClients) take
// the lock.
type session struct {
	conn *transport.Conn

	mu      sync.Mutex
	bound   bool
	client  consensus.Uint128 // the VSR client id the session was registered under
	fence   uint64            // session number (commit op of the Register)
	userID  uint32
	evicted bool // an eviction was sent; nothing more is handled
}

type sessionView struct {
	connID uint32
	addr   string
	// transport is the Client entry's transport byte (1 TCP and TLS,
	// 2 QUIC, 4 WebSocket).
	transport uint8
	bound     bool
	client    consensus.Uint128
	fence     uint64
	userID    uint32
	evicted   bool
}

func (s *session) view() sessionView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sessionView{
		connID: s.conn.ID(), addr: s.conn.RemoteAddr(), transport: s.conn.Transport().WireByte(), bound: s.bound,
		client: s.client, fence: s.fence, userID: s.userID, evicted: s.evicted,
	}
}

func (s *session) bind(client consensus.Uint128, fence uint64, userID uint32) {
	s.mu.Lock()
	s.bound, s.client, s.fence, s.userID = true, client, fence, userID
	s.mu.Unlock()
}

// unbind forgets the session and returns what it was, so the caller can log
// it out exactly once.
func (s *session) unbind() (sessionView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := sessionView{connID: s.conn.ID(), addr: s.conn.RemoteAddr(), bound: s.bound, client: s.client, fence: s.fence, userID: s.userID}
	was := s.bound
	s.bound, s.client, s.fence = false, consensus.Uint128{}, 0
	return v, was
}

// markEvicted records that an eviction went out; it reports false if one
// already had.
func (s *session) markEvicted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.evicted {
		return false
	}
	s.evicted = true
	return true
}

// registry maps connection ids to sessions.
type registry struct {
	mu     sync.RWMutex
	byConn map[uint32]*session
}

func newRegistry() *registry { return &registry{byConn: make(map[uint32]*session)} }

func (r *registry) add(c *transport.Conn) *session {
	s := &session{conn: c}
	r.mu.Lock()
	r.byConn[c.ID()] = s
	r.mu.Unlock()
	return s
}

func (r *registry) get(connID uint32) (*session, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.byConn[connID]
	return s, ok
}

func (r *registry) remove(connID uint32) {
	r.mu.Lock()
	delete(r.byConn, connID)
	r.mu.Unlock()
}

// all returns every session sorted by connection id.
func (r *registry) all() []*session {
	r.mu.RLock()
	out := make([]*session, 0, len(r.byConn))
	for _, s := range r.byConn {
		out = append(out, s)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].conn.ID() < out[j].conn.ID() })
	return out
}

func (r *registry) count() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byConn)
}

func toConsensus(u wire.Uint128) consensus.Uint128 { return consensus.Uint128{Lo: u.Lo, Hi: u.Hi} }

func toWire(u consensus.Uint128) wire.Uint128 { return wire.Uint128{Lo: u.Lo, Hi: u.Hi} }
