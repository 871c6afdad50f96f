package transport

import (
	"sync"
	"sync/atomic"
	"time"
)

// connIDs numbers connections across every listener of the process: the
// node keys sessions by connection id, whatever the transport.
var connIDs atomic.Uint32

// hub is the connection table of one client listener: admission under the
// connection limits, the shared frame and outbound budgets, and the
// goroutines of each connection. Every transport (TCP, QUIC, WebSocket)
// admits its connections here, so limits, deadlines, backpressure and the
// Handler contract are the same on all of them.
type hub struct {
	cfg      TCPConfig
	kind     Kind
	budget   *frameBudget
	outbound *outboundBudget

	mu         sync.Mutex
	conns      map[uint32]*Conn
	perAddress map[string]int // open connections by source IP
	evicting   int            // connections closed to make room, not yet gone
	closing    bool
	wg         sync.WaitGroup // connection goroutines

	refusalLog  logThrottle // accept refusals are logged at most once a second
	evictionLog logThrottle
}

func newHub(cfg TCPConfig, kind Kind) *hub {
	return &hub{cfg: cfg, kind: kind, conns: make(map[uint32]*Conn), perAddress: make(map[string]int),
		budget:   newFrameBudget(cfg.InflightFrameBytesMax, inflightShareBytes(cfg)),
		outbound: &outboundBudget{bytesMax: cfg.OutboundBytesMax}}
}

// ConnectionCount is the number of open connections.
func (s *hub) ConnectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// oldestUnauthenticatedLocked is the longest-open connection that has not
// logged in and is not already being closed to make room (nil if none).
// It scans every connection, which only happens when the server is full.
func (s *hub) oldestUnauthenticatedLocked() *Conn {
	var oldest *Conn
	for _, c := range s.conns {
		if c.evictedForRoom || c.authenticated.Load() {
			continue
		}
		if oldest == nil || c.openedAt.Before(oldest.openedAt) || c.openedAt.Equal(oldest.openedAt) && c.id < oldest.id {
			oldest = c
		}
	}
	return oldest
}

// refuse reports why a new connection from addr may not be admitted
// ("" = admit) and, at connections_max, picks the connection that makes
// room. Caller holds mu.
func (s *hub) refuseLocked(addr string) (refusal string, victim *Conn) {
	switch {
	case s.closing:
		return "closing", nil
	case s.perAddress[addr] >= s.cfg.ConnectionsPerAddressMax:
		return "connections_per_address_max", nil
	case len(s.conns)-s.evicting >= s.cfg.ConnectionsMax:
		// Full: the oldest connection that has not logged in makes room
		// (a healthy client logs in within milliseconds, so idle or stalled
		// unauthenticated peers cannot lock everyone out); with none, refuse.
		if victim = s.oldestUnauthenticatedLocked(); victim != nil {
			victim.evictedForRoom = true
			s.evicting++
			return "", victim
		}
		return "connections_max", nil
	}
	return "", nil
}

// admit registers a connection carried by car from remote ("ip:port") and
// starts its reader and writer, or closes car when a limit refuses it. It
// reports whether the connection was admitted.
func (s *hub) admit(car carrier, remote string, h Handler) bool {
	addr := sourceAddress(remote)
	s.mu.Lock()
	refusal, victim := s.refuseLocked(addr)
	if refusal != "" {
		s.mu.Unlock()
		if refusal != "closing" && s.refusalLog.allow() {
			s.cfg.Logger.Warn("connection refused: limit reached (logged at most once a second)",
				"remote", remote, "limit", refusal, "connections_max", s.cfg.ConnectionsMax,
				"connections_per_address_max", s.cfg.ConnectionsPerAddressMax)
		}
		car.close()
		return false
	}
	c := newConn(connIDs.Add(1), car, s.kind, remote, s.cfg, s.budget, s.outbound)
	s.conns[c.id] = c
	s.perAddress[addr]++
	s.wg.Add(2) // under mu: closeAll + wait never miss an admitted connection
	s.mu.Unlock()
	if victim != nil {
		if s.evictionLog.allow() {
			s.cfg.Logger.Warn("connections_max reached: closing the oldest connection that has not logged in (logged at most once a second)",
				"closed_conn", victim.id, "closed_remote", victim.remote, "opened", victim.openedAt, "connections_max", s.cfg.ConnectionsMax)
		}
		victim.Close()
	}

	h.Opened(c)
	c.armLoginDeadline()
	go func() {
		defer s.wg.Done()
		c.writeLoop()
	}()
	go func() {
		defer s.wg.Done()
		c.readLoop(h, s.cfg.Logger)
		// Let a final frame (an eviction, the last reply) reach the peer.
		c.CloseAfterFlush()
		<-c.writerDone
		c.finish()
		s.mu.Lock()
		delete(s.conns, c.id)
		if c.evictedForRoom {
			s.evicting--
		}
		if s.perAddress[addr]--; s.perAddress[addr] <= 0 {
			delete(s.perAddress, addr)
		}
		s.mu.Unlock()
		h.Closed(c)
	}()
	return true
}

// closeAll flushes and closes every connection and refuses new ones; wait
// then waits for their goroutines.
func (s *hub) closeAll() {
	s.mu.Lock()
	s.closing = true
	conns := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.CloseAfterFlush()
	}
}

func (s *hub) wait() { s.wg.Wait() }

// logThrottle lets a repetitive warning through at most once a second.
type logThrottle struct{ lastNs atomic.Int64 }

func (l *logThrottle) allow() bool {
	now := time.Now().UnixNano()
	last := l.lastNs.Load()
	return now-last >= int64(time.Second) && l.lastNs.CompareAndSwap(last, now)
}
