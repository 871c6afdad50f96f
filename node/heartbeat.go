package node

import (
	"context"
	"time"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// heartbeatLoop evicts stale clients (wire-protocol §2.12): a connection
// silent for more than 1.2 × the heartbeat interval that holds
// consumer-group membership is logged out (releasing its memberships) and
// sent Eviction 13 StaleClient. Silent connections without membership are
// left alone, as upstream does.
func (n *Node) heartbeatLoop(ctx context.Context) {
	hb := n.cfg.Heartbeat
	interval := hb.Interval.Duration
	if !hb.Enabled || interval <= 0 {
		return
	}
	staleAfter := interval * 12 / 10
	check := max(interval/4, 10*time.Millisecond)
	ticker := n.clock.NewTicker(check)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C():
			n.evictStale(now, staleAfter)
		}
	}
}

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
