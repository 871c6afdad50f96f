package metadata

import (
	"errors"
	"sort"
)

var errSessionsOrder = errors.New("session bindings not in ascending client order")

// SessionsMax bounds the session bindings the state keeps (the client
// table of the consensus core holds at most 65,536 sessions; bindings of
// sessions it evicted age out here the same deterministic way: the oldest
// epoch goes first).
const SessionsMax = 1 << 16

// sessionBinding is the node whose connection registered a session, and
// the session's epoch (the commit op of its Register).
type sessionBinding struct {
	node  uint8
	epoch uint64
}

// BindSession records that client's session epoch was registered through
// node (applied with the committed Register, on every replica, in op
// order). A client registering again is rebound.
func (s *State) BindSession(client ClientID, node uint8, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = make(map[ClientID]sessionBinding)
	}
	if _, ok := s.sessions[client]; !ok && len(s.sessions) >= SessionsMax {
		s.evictOldestSession()
	}
	s.sessions[client] = sessionBinding{node: node, epoch: epoch}
}

// UnbindSession forgets client's session (a committed Logout).
func (s *State) UnbindSession(client ClientID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, client)
}

func (s *State) evictOldestSession() {
	var victim ClientID
	oldest := ^uint64(0)
	for c, b := range s.sessions {
		if b.epoch < oldest || (b.epoch == oldest && clientLess(c, victim)) {
			victim, oldest = c, b.epoch
		}
	}
	delete(s.sessions, victim)
}

func clientLess(a, b ClientID) bool {
	if a.Hi != b.Hi {
		return a.Hi < b.Hi
	}
	return a.Lo < b.Lo
}

// SessionsBoundAt lists the sessions registered through node, by client id.
func (s *State) SessionsBoundAt(node uint8) []BoundMember {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []BoundMember
	for c, b := range s.sessions {
		if b.node == node {
			out = append(out, BoundMember{Client: c, Session: b.epoch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return clientLess(out[i].Client, out[j].Client) })
	return out
}

func (s *State) sortedSessions() []ClientID {
	out := make([]ClientID, 0, len(s.sessions))
	for c := range s.sessions {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return clientLess(out[i], out[j]) })
	return out
}

func writeSessions(w *writer, s *State) {
	w.u32(uint32(len(s.sessions)))
	for _, c := range s.sortedSessions() {
		b := s.sessions[c]
		w.client(c)
		w.u8(b.node)
		w.u64(b.epoch)
	}
}

func readSessions(r *reader, s *State) {
	n := r.count(SessionsMax, 25)
	var prev ClientID
	for i := 0; i < n && r.err == nil; i++ {
		c := r.client()
		b := sessionBinding{node: r.u8(), epoch: r.u64()}
		if i > 0 && !clientLess(prev, c) {
			r.fail(errSessionsOrder)
			return
		}
		prev = c
		if s.sessions == nil {
			s.sessions = make(map[ClientID]sessionBinding, n)
		}
		s.sessions[c] = b
	}
}
