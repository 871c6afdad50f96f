package node

import (
	"context"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// Principal is an authenticated caller without a binary connection (an
// HTTP bearer). Its writes run in a consensus client session of their own,
// one per credential (Key), registered on first write like a binary login,
// so the client table deduplicates and fences them exactly as it does a
// connection's.
type Principal struct {
	UserID uint32
	// Key names the credential ("jwt:<jti>", "pat:<hash>"); never a secret.
	Key string
	// Remote is the caller's "ip:port" (cluster metadata picks the
	// advertised address by it).
	Remote string
}

// principalIdle is how long an unused principal session is kept before
// it may be logged out to make room for a new credential.
const principalIdle = 10 * time.Minute

// principalSession is one credential's client session. mu serialises its
// requests: a client session has one request in flight, as a connection
// does.
type principalSession struct {
	mu       sync.Mutex
	client   consensus.Uint128
	fence    uint64 // 0 = not registered (yet, or again after an eviction)
	request  uint64
	userID   uint32
	lastUsed time.Time // under principals.mu
}

// principals maps credential keys to sessions, at most max of them
// (metadata.clients_table_max / 2, as upstream bounds HTTP sessions).
type principals struct {
	mu    sync.Mutex
	byKey map[string]*principalSession
	max   int
}

func newPrincipals(max int) *principals {
	return &principals{byKey: make(map[string]*principalSession), max: max}
}

// acquire returns the session of p's credential, creating it when there is
// room. Sessions idle for principalIdle are released (returned for a
// logout) when the table is full.
func (ps *principals) acquire(p Principal, now time.Time) (s *principalSession, idle []*principalSession, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s, ok := ps.byKey[p.Key]; ok {
		s.lastUsed = now
		return s, nil, true
	}
	if len(ps.byKey) >= ps.max {
		for k, old := range ps.byKey {
			if now.Sub(old.lastUsed) > principalIdle {
				delete(ps.byKey, k)
				idle = append(idle, old)
			}
		}
		if len(ps.byKey) >= ps.max {
			return nil, idle, false
		}
	}
	s = &principalSession{
		client: consensus.Uint128{Lo: randomUint64() | 1, Hi: randomUint64() &^ (1 << 63)},
		userID: p.UserID, lastUsed: now,
	}
	ps.byKey[p.Key] = s
	return s, idle, true
}

func (ps *principals) remove(key string) (*principalSession, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s, ok := ps.byKey[key]
	delete(ps.byKey, key)
	return s, ok
}

func (ps *principals) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.byKey)
}

// register binds s to a consensus session (a replicated Register, as a
// binary login commits). Called with s.mu held.
func (n *Node) registerPrincipal(ctx context.Context, s *principalSession) outcome {
	out := n.sessionPropose(ctx, consensus.Request{
		Client: s.client, Operation: consensus.OperationRegister, UserID: s.userID,
	})
	if out.kind == consensus.ReplyCommitted {
		s.fence, s.request = out.op, 0
	}
	return out
}

// logoutPrincipals releases sessions in the background (a replicated
// Logout each), bounded by disconnectLogoutTimeout.
func (n *Node) logoutPrincipals(sessions []*principalSession) {
	for _, s := range sessions {
		go func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fence == 0 {
				return
			}
			n.logoutReplicated(sessionView{client: s.client, fence: s.fence, userID: s.userID}, disconnectRequestID)
			s.fence = 0
		}()
	}
}

// EndPrincipal releases the consensus session of a credential (HTTP
// logout). The credential itself stays valid until it expires.
func (n *Node) EndPrincipal(key string) {
	if s, ok := n.principals.remove(key); ok {
		n.logoutPrincipals([]*principalSession{s})
	}
}

// principalView is the session view the command layer authorises by.
func principalView(p Principal, s *principalSession) sessionView {
	v := sessionView{addr: p.Remote, userID: p.UserID}
	if s != nil {
		v.bound, v.client, v.fence = s.fence != 0, s.client, s.fence
	}
	return v
}

// principalsMax is the HTTP session cap: half the client table.
func principalsMax(clientsTableMax uint32) int {
	if clientsTableMax == 0 {
		clientsTableMax = 8192
	}
	return max(1, int(clientsTableMax/2))
}
