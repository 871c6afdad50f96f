package node

import (
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// evictStale evicts stale clients (wire-protocol §2.12; the
// heartbeat-eviction job): a connection silent for more than 1.2 × the
// heartbeat interval that holds consumer-group membership is logged out
// (releasing its memberships) and sent Eviction 13 StaleClient. Silent
// connections without membership are left alone, as upstream does.
func (n *Node) evictStale(now time.Time, staleAfter time.Duration) {
	for _, s := range n.sessions.all() {
		if now.Sub(s.conn.LastSeen()) <= staleAfter {
			continue
		}
		v := s.view()
		if !v.bound || v.evicted || len(n.state.ClientMemberships(metadata.ClientID(v.client))) == 0 {
			continue
		}
		n.log.Info("evicting stale client", "conn", v.connID, "remote", v.addr,
			"silent_for", now.Sub(s.conn.LastSeen()).Round(time.Millisecond))
		if _, was := s.unbind(); was {
			n.logoutReplicated(v, disconnectRequestID)
		}
		n.evict(s.conn, s, toWire(v.client), wire.EvictStaleClient)
	}
}
