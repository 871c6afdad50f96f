package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Leader-aware behaviour of a client made by DialCluster (docs/client.md, seed 000 "Leader
// redirection"). A Dial client never gets here: c.cluster is nil.

// Defaults of the leader-aware client (seed 000).
const (
	DefaultLeaderPollInterval = 250 * time.Millisecond
	DefaultLeaderlessWindow   = 5 * time.Second
	DefaultMaxRedirects       = 3
)

// clusterState is what a DialCluster client knows about the cluster. Guarded by Client.mu.
type clusterState struct {
	seeds  []string
	roster []string // endpoints (on the transport in use) advertised by the last cluster metadata, in roster order
	leader string   // endpoint of the last advertised healthy leader ("" if none)
	// login is the last successful sign-in (command code and encoded body, credentials included),
	// replayed on every reconnect. Memory only; never logged; dropped by Logout and Close.
	login *loginRecord
	// owners is the partition owner map (owner_map.go).
	owners ownerMap
	stats  SendStats // exactly_once.go
}

type loginRecord struct {
	code wire.CommandCode
	body []byte
}

// TimeoutError reports that a request's budget (WithResponseTimeout) or its context deadline ended
// before a reply arrived: the outcome is unknown — the server may or may not have applied it. It
// is deliberately not an *Error, so it is never mistaken for a failure code; the connection is
// dropped and the next call reconnects. Only DialCluster clients return it (a Dial client reports
// the same event as Disconnected, unchanged).
type TimeoutError struct {
	Command wire.CommandCode
	Addr    string // node the request was sent to
	Err     error  // os.ErrDeadlineExceeded or context.DeadlineExceeded, wrapped
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: timed out at %s, outcome unknown: %v", e.Command, e.Addr, e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true (net.Error style).
func (e *TimeoutError) Timeout() bool { return true }

// IsTimeout reports whether err is a *TimeoutError (outcome unknown).
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}

// DialCluster is the leader-aware constructor. It connects to the first reachable address of seeds
// (in order) and returns a *Client with the same methods as Dial's, which additionally:
//
//   - after every successful sign-in (LoginUser, LoginWithPersonalAccessToken, or WithCredentials
//     here) fetches cluster metadata and reconnects to the advertised endpoint, on the transport in use, of the healthy
//     leader, signing in again there; while no leader is named it polls every 250 ms for up to 5 s,
//     then stays on the contacted node; at most 3 redirects per settlement;
//   - on TransientNotAccepted (58) re-checks the leader (the same settlement), then walks the
//     remaining advertised endpoints and the seeds, each at most once, resending the request on
//     each (58 proves it was never admitted) until one accepts or the request budget ends;
//   - replays TransientNotCommitted (57) on the same connection with the same session and request
//     id until the budget ends, then returns it; never replays definitive errors;
//   - returns *TimeoutError when the budget ends with no reply (outcome unknown);
//   - reconnects (roster, then seeds) before the next call when the connection broke, signing in
//     again under the same client id;
//   - routes SendMessages by its partition owner map and replays a send of unknown outcome with
//     the same identity and bytes, so the server stores it once (owner_map.go, exactly_once.go).
//
// Credentials are kept in memory for the re-logins only. Raw and RawFrame bypass all of this.
func DialCluster(ctx context.Context, seeds []string, opts ...Option) (*Client, error) {
	if len(seeds) == 0 {
		return nil, &Error{Code: wire.ErrCannotEstablishConnection, Err: errors.New("no seed addresses")}
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	creds := cfg.credentials
	cfg.credentials = nil // kept only inside clusterState.login once signed in
	var errs []error
	for _, seed := range seeds {
		c, err := dialConfig(ctx, seed, cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.cluster = &clusterState{seeds: append([]string(nil), seeds...)}
		if creds != nil {
			if _, err := c.LoginUser(ctx, creds.username, creds.password); err != nil {
				c.Close()
				if !seedLostDuringLogin(err) || ctx.Err() != nil {
					return nil, err
				}
				// The seed (or the leader it sent us to) died mid-login: signing in is
				// idempotent, so the next seed may take it.
				errs = append(errs, err)
				continue
			}
		}
		return c, nil
	}
	return nil, &Error{Code: wire.ErrCannotEstablishConnection, Err: errors.Join(errs...)}
}

// seedLostDuringLogin reports whether a sign-in failed because the connection went away (or no
// reply came) rather than because the server refused it: only then is another seed worth trying.
func seedLostDuringLogin(err error) bool {
	switch {
	case IsTimeout(err):
		return true
	case CodeOf(err) == wire.ErrDisconnected, CodeOf(err) == wire.ErrCannotEstablishConnection:
		return true
	}
	return false
}

// clusterCallLocked is call for a DialCluster client.
func (c *Client) clusterCallLocked(ctx context.Context, code wire.CommandCode, body []byte) ([]byte, error) {
	deadline := time.Now().Add(c.cfg.responseTimeout)
	if c.closed {
		return nil, &Error{Code: wire.ErrDisconnected, Command: code, Err: c.broken}
	}
	if c.broken != nil {
		if err := c.recoverLocked(ctx, code, deadline); err != nil {
			return nil, err
		}
	}
	op, _ := code.Operation()
	payload, err := c.callLocked(ctx, code, body, deadline)
	switch {
	case op == wire.OpRegister:
		if err != nil {
			return nil, c.timeoutOf(code, err)
		}
		c.cluster.login = &loginRecord{code: code, body: append([]byte(nil), body...)}
		if p, err := c.settleLocked(ctx, deadline); err != nil {
			return nil, c.timeoutOf(code, err)
		} else if p != nil {
			payload = p // the leader's session
		}
		return payload, nil
	case err == nil:
		if op == wire.OpLogout {
			c.cluster.login = nil
		}
		return payload, nil
	case CodeOf(err) != wire.ErrTransientNotAccepted:
		return nil, c.timeoutOf(code, err)
	}
	return c.failoverLocked(ctx, code, body, deadline, err)
}

// failoverLocked handles a 58: re-check the metadata leader (settlement, which may redirect), then
// walk every other known endpoint once. The walk is bounded by the roster and seeds and by the
// request budget, and is independent of the redirect cap.
func (c *Client) failoverLocked(ctx context.Context, code wire.CommandCode, body []byte, deadline time.Time, lastErr error) ([]byte, error) {
	tried := map[string]bool{c.addr: true}
	if _, err := c.settleLocked(ctx, deadline); err != nil {
		return nil, lastErr
	}
	for {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, lastErr
		}
		if tried[c.addr] {
			next, ok := c.cluster.nextEndpoint(tried)
			if !ok {
				return nil, lastErr
			}
			tried[next] = true
			if _, err := c.connectLocked(ctx, next, deadline); err != nil {
				c.cfg.logger.Debug("endpoint walk: connect failed", "addr", next, "err", err)
				continue
			}
		}
		tried[c.addr] = true
		c.cfg.logger.Debug("resending after TransientNotAccepted", "command", code.String(), "addr", c.addr)
		payload, err := c.callLocked(ctx, code, body, deadline)
		if err == nil {
			return payload, nil
		}
		if CodeOf(err) != wire.ErrTransientNotAccepted {
			return nil, c.timeoutOf(code, err)
		}
		lastErr = err
	}
}

// settleLocked fetches cluster metadata on the current connection and moves to the leader: polls
// while no healthy leader is named (bounded by the leaderless window), follows at most maxRedirects
// redirects, and stays on the contacted node when metadata is unavailable, no leader appears, or
// the leader cannot be reached. It returns the register payload of the last redirect (nil if none)
// and an error only when the connection broke.
func (c *Client) settleLocked(ctx context.Context, deadline time.Time) ([]byte, error) {
	var registered []byte
	redirects := 0
	leaderlessUntil := time.Now().Add(c.cfg.leaderlessWindow)
	for {
		md, err := c.metadataLocked(ctx, deadline)
		if err != nil {
			if c.broken != nil {
				return registered, err
			}
			c.cfg.logger.Debug("cluster metadata unavailable; staying on the contacted node", "addr", c.addr, "err", err)
			return registered, nil
		}
		c.cluster.remember(md, c.cfg.transport)
		leader, ok := md.Leader()
		if !ok {
			next := time.Now().Add(c.cfg.leaderPollInterval)
			if len(md.Nodes) == 0 || next.After(leaderlessUntil) || next.After(deadline) {
				c.cfg.logger.Debug("no leader named; continuing on the contacted node", "addr", c.addr)
				return registered, nil
			}
			if err := sleepCtx(ctx, c.cfg.leaderPollInterval); err != nil {
				return registered, nil
			}
			continue
		}
		addr, ok := endpointOf(leader, c.cfg.transport)
		if !ok || c.isCurrentLocked(addr) {
			return registered, nil
		}
		if redirects >= c.cfg.maxRedirects {
			c.cfg.logger.Warn("redirect cap reached; staying", "addr", c.addr, "leader", addr, "redirects", redirects)
			return registered, nil
		}
		redirects++
		p, err := c.connectLocked(ctx, addr, deadline)
		if err != nil {
			c.cfg.logger.Debug("redirect to the leader failed; staying", "leader", addr, "err", err)
			return registered, nil
		}
		c.cfg.logger.Debug("redirected to the leader", "addr", addr, "redirects", redirects)
		if p != nil {
			registered = p
		}
	}
}

// recoverLocked replaces a broken connection before a call: it tries the last known leader, the
// rest of the roster and the seeds (the broken node last), then settles on the leader.
func (c *Client) recoverLocked(ctx context.Context, code wire.CommandCode, deadline time.Time) error {
	cause := c.broken
	tried := map[string]bool{}
	var order []string
	add := func(a string) {
		if a != "" && !tried[a] && a != c.addr {
			tried[a] = true
			order = append(order, a)
		}
	}
	add(c.cluster.leader)
	for _, a := range c.cluster.roster {
		add(a)
	}
	for _, a := range c.cluster.seeds {
		add(a)
	}
	order = append(order, c.addr)
	var errs []error
	for _, a := range order {
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		if _, err := c.connectLocked(ctx, a, deadline); err != nil {
			errs = append(errs, err)
			continue
		}
		c.cfg.logger.Debug("reconnected", "addr", a)
		if c.cluster.login != nil {
			if _, err := c.settleLocked(ctx, deadline); err != nil {
				return err
			}
		}
		return nil
	}
	return &Error{Code: wire.ErrDisconnected, Command: code,
		Err: fmt.Errorf("reconnect after %v: %w", cause, errors.Join(errs...))}
}

// connectLocked dials addr, signs in there with the remembered login (if any) and only then swaps
// the new connection in, closing the old one; on failure the client is unchanged. It returns the
// register payload (nil without a login).
func (c *Client) connectLocked(ctx context.Context, addr string, deadline time.Time) ([]byte, error) {
	fresh, err := dialConfig(ctx, addr, c.cfg)
	if err != nil {
		return nil, err
	}
	if !c.clientID.IsZero() {
		// Sign in again under the same client id (exactly_once.go): the partition dedup window keys
		// on it. The metadata counter continues too: the client table keeps its watermark across a
		// rebind, so ids restarting at 1 would be answered from its cache or with 59.
		fresh.clientID, fresh.counter = c.clientID, c.counter
	}
	var payload []byte
	if l := c.cluster.login; l != nil {
		payload, err = fresh.callLocked(ctx, l.code, l.body, deadline) // fresh is not shared yet
		if err != nil {
			fresh.conn.Close()
			return nil, err
		}
	}
	old := c.conn
	c.conn, c.addr, c.broken = fresh.conn, addr, nil
	c.clientID, c.session, c.counter, c.userID = fresh.clientID, fresh.session, fresh.counter, fresh.userID
	old.Close()
	return payload, nil
}

func (c *Client) metadataLocked(ctx context.Context, deadline time.Time) (wire.ClusterMetadata, error) {
	body, err := wire.EncodeRequestBody(wire.EmptyRequest{Command: wire.CodeGetClusterMetadata})
	if err != nil {
		return wire.ClusterMetadata{}, err
	}
	payload, err := c.callLocked(ctx, wire.CodeGetClusterMetadata, body, deadline)
	if err != nil {
		return wire.ClusterMetadata{}, err
	}
	return wire.DecodeClusterMetadata(payload)
}

// isCurrentLocked reports whether addr names the node of the current connection.
func (c *Client) isCurrentLocked(addr string) bool {
	return addr == c.addr || (c.conn != nil && c.conn.RemoteAddr() != nil && c.conn.RemoteAddr().String() == addr)
}

// timeoutOf turns a transport failure caused by a deadline into *TimeoutError.
func (c *Client) timeoutOf(code wire.CommandCode, err error) error {
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != wire.ErrDisconnected || ce.Err == nil {
		return err
	}
	if isDeadline(ce.Err) {
		return &TimeoutError{Command: code, Addr: c.addr, Err: ce.Err}
	}
	return err
}

// isDeadline reports whether err was caused by a connection or context deadline.
func isDeadline(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

// remember records the endpoints of md on transport t, and its leader's.
func (s *clusterState) remember(md wire.ClusterMetadata, t Transport) {
	s.roster = s.roster[:0]
	for _, n := range md.Nodes {
		if a, ok := endpointOf(n, t); ok {
			s.roster = append(s.roster, a)
		}
	}
	s.leader = ""
	if l, ok := md.Leader(); ok {
		s.leader, _ = endpointOf(l, t)
	}
}

// nextEndpoint returns the first roster endpoint, then seed, not yet tried.
func (s *clusterState) nextEndpoint(tried map[string]bool) (string, bool) {
	for _, list := range [][]string{s.roster, s.seeds} {
		for _, a := range list {
			if !tried[a] {
				return a, true
			}
		}
	}
	return "", false
}

// endpointOf is n's advertised endpoint on transport t (false when t is disabled there): a client
// redirects on the transport it speaks.
func endpointOf(n wire.ClusterNode, t Transport) (string, bool) {
	port := t.Port(n)
	if port == 0 || n.IP == "" {
		return "", false
	}
	return net.JoinHostPort(n.IP, strconv.Itoa(int(port))), true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
