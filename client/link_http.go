package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// The HTTP transport (TransportHTTP): a link that carries each binary command as its REST request
// (spec http-api §4) and answers with the reply frame the binary protocol would have sent, so every
// Client method — and Raw — works unchanged over HTTP. The client stamps frames as always; the link
// decodes each one, runs its route with the bearer of the last sign-in, and re-encodes the JSON
// answer with the wire encoders.
//
//   - Sign-in (LoginUser, LoginWithPersonalAccessToken) is POST /users/login or
//     /personal-access-tokens/login; the JWT is kept and sent as `Authorization: Bearer`. It is
//     refreshed (POST /users/refresh-token) when less than a quarter of its life, at most 60 s, is
//     left; when it can no longer be refreshed, and on a 401 to a request sent with it, the link
//     signs in again with the credentials of the sign-in (kept in memory only, never logged) and,
//     after a 401, resends the request once (a 401 is answered before anything runs).
//   - Error bodies map back to the same codes: an Iggy error id is the reply status; a generic 404
//     of a lookup (GetStream, GetTopic, GetUser, GetConsumerGroup, GetClient, GetConsumerOffset) is
//     the binary "absent" (an empty payload); overload answers (429, server_busy, forward_busy,
//     no_reachable_primary, not_primary) are TransientNotAccepted (58), which the client replays.
//   - An outcome the server reports as unknown (502 forward_failed, 504 produce_timeout,
//     offset_write_timeout, forward_timeout, and 57 on a write) is never turned into a replayable
//     status: HTTP requests carry no request identity, so a replay could apply twice. The link
//     reports it as a transport failure caused by a deadline: a Dial client gets Disconnected, a
//     DialCluster client a *TimeoutError (outcome unknown).
//   - A request that could not be sent (connect refused) is retried WithHTTPRetries times.
//   - Commands without a REST route (GetMe, FlushUnsavedBuffer, consumer-group membership, group
//     consumers) answer FeatureUnavailable (5) locally.
const (
	TransportHTTP Transport = "http"

	// DefaultHTTPRetries is how often a request that never reached the server is re-sent
	// (upstream's --http-retries default).
	DefaultHTTPRetries = 3

	httpRetryPause       = 100 * time.Millisecond
	httpRefreshMarginMax = 60 * time.Second
	httpIdleConnTimeout  = 30 * time.Second
	httpErrorBodyMax     = 64 << 10
)

// WithHTTPRetries sets how often the HTTP transport re-sends a request that could not be sent
// (default 3).
func WithHTTPRetries(n int) Option { return func(c *config) { c.httpRetries = n } }

// errHTTPOutcomeUnknown is the cause of a request whose outcome the server could not tell.
var errHTTPOutcomeUnknown = fmt.Errorf("outcome unknown: %w", os.ErrDeadlineExceeded)

type httpLink struct {
	base    *url.URL
	hc      *http.Client
	log     *slog.Logger
	retries int
	bodyMax int64
	remote  net.Addr
	now     func() time.Time // the bearer's clock (tests move it)

	// The client runs one exchange at a time (Write, then Read); SetDeadline and Close may come
	// from other goroutines.
	mu       sync.Mutex
	deadline time.Time
	cancel   context.CancelFunc // of the exchange in flight
	closed   bool

	// Bearer state (the exchange's goroutine only).
	token     string
	issued    time.Time
	expiry    time.Time
	login     *wire.RegisterRequest // the last sign-in, for re-logins; nil after logout
	userID    uint32
	sessionNo uint64

	reply bytes.Reader // the reply frame being read
	err   error        // the failure Read reports
}

// httpBaseURL reads addr: "http(s)://host:port[/prefix]" or "host:port" (https when TLS is set).
func httpBaseURL(addr string, tlsCfg *tls.Config) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		scheme := "http"
		if tlsCfg != nil {
			scheme = "https"
		}
		addr = scheme + "://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("http api url %q: %w", addr, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("http api url %q: want http(s)://host:port", addr)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

func dialHTTP(ctx context.Context, addr string, cfg config) (link, error) {
	base, err := httpBaseURL(addr, cfg.tls)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:            (&net.Dialer{Timeout: cfg.dialTimeout}).DialContext,
		TLSHandshakeTimeout:    cfg.dialTimeout,
		IdleConnTimeout:        httpIdleConnTimeout,
		MaxIdleConnsPerHost:    2,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	if base.Scheme == "https" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.tls != nil {
			tc = clientTLS(cfg.tls, base.Host)
		}
		tr.TLSClientConfig = tc
	}
	l := &httpLink{base: base, log: cfg.logger, retries: max(cfg.httpRetries, 0), now: time.Now,
		// A poll reply of a whole frame grows by a third in base64, plus JSON around it.
		bodyMax: 2 * int64(cfg.frameSizeMax),
		hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 307 is answered, never followed with the bearer
		}}}
	l.remote = httpAddr(base.Host)
	// Reachability, as a binary dial would show it.
	pctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	st, body, err := l.do(pctx, httpRoute{method: "GET", path: "/ping"}, "")
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	if st != http.StatusOK || string(body) != "pong" {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("GET %s/ping answered %d %q: not an Iggy HTTP API", base, st, truncate(body))
	}
	return l, nil
}

type httpAddr string

func (a httpAddr) Network() string { return "tcp" }
func (a httpAddr) String() string  { return string(a) }

func (l *httpLink) RemoteAddr() net.Addr { return l.remote }

// SetDeadline bounds the exchange; a deadline in the past cancels the one in flight.
func (l *httpLink) SetDeadline(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = t
	if l.cancel != nil && !t.IsZero() && !t.After(time.Now()) {
		l.cancel()
	}
	return nil
}

func (l *httpLink) Close() error {
	l.mu.Lock()
	l.closed = true
	if l.cancel != nil {
		l.cancel()
	}
	l.mu.Unlock()
	l.login, l.token = nil, "" // forget credentials and bearer
	l.hc.CloseIdleConnections()
	return nil
}

// Write runs the request frame p over HTTP; Read then returns the reply frame.
func (l *httpLink) Write(p []byte) (int, error) {
	l.reply.Reset(nil)
	l.err = nil
	if len(p) < wire.HeaderSize {
		return 0, fmt.Errorf("http link: frame of %d bytes", len(p))
	}
	h, err := wire.DecodeRequestHeader(p[:wire.HeaderSize])
	if err != nil {
		return 0, fmt.Errorf("http link: %w", err)
	}
	ctx, err := l.exchangeContext()
	if err != nil {
		return 0, err
	}
	defer l.endExchange()
	status, body, err := l.exchange(ctx, h, p[wire.HeaderSize:])
	if err != nil {
		l.err = err
		return len(p), nil
	}
	if status == wire.OK && h.Operation.ReplyOperation().ResultFramed(4+len(body)) {
		body = append(wire.AppendResultOK(nil), body...)
	}
	l.reply.Reset(wire.EncodeReply(nil, h, status, body))
	return len(p), nil
}

func (l *httpLink) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	return l.reply.Read(p)
}

func (l *httpLink) exchangeContext() (context.Context, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, net.ErrClosed
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !l.deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, l.deadline)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	l.cancel = cancel
	return ctx, nil
}

func (l *httpLink) endExchange() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
}

// exchange answers one command: its status and (binary) payload, or a transport failure.
func (l *httpLink) exchange(ctx context.Context, h wire.RequestHeader, body []byte) (wire.ErrorCode, []byte, error) {
	code := h.Code
	if h.Operation != wire.OpNonReplicated {
		c, ok := wire.CodeForOperation(h.Operation)
		if !ok && h.Operation != wire.OpRegister {
			return wire.ErrInvalidCommand, nil, nil
		}
		code = c
	}
	switch h.Operation {
	case wire.OpRegister:
		return l.register(ctx, body)
	case wire.OpLogout:
		return l.logout(ctx)
	}
	route, err := httpRouteOf(code, body)
	if err != nil {
		var r *routeRefusal
		if errors.As(err, &r) {
			l.log.Debug("http transport: answered locally", "command", code.String(), "code", r.code.String(), "why", r.why)
			return r.code, nil, nil
		}
		return wire.ErrInvalidCommand, nil, nil
	}
	authed := code != wire.CodePing
	if authed && l.token == "" {
		return wire.ErrUnauthenticated, nil, nil // not signed in: as the binary protocol answers
	}
	for attempt := 0; ; attempt++ {
		if authed {
			l.freshen(ctx)
		}
		token := ""
		if authed {
			token = l.token
		}
		st, resp, err := l.do(ctx, route, token)
		if err != nil {
			return 0, nil, err
		}
		if st == http.StatusUnauthorized && authed && attempt == 0 && l.login != nil {
			// Rejected before anything ran: sign in again and resend once.
			if ec := l.relogin(ctx); ec == wire.OK {
				continue
			}
		}
		return l.answer(code, h.Operation, route, st, resp)
	}
}

// answer turns an HTTP answer into the binary status and payload.
func (l *httpLink) answer(code wire.CommandCode, op wire.Operation, route httpRoute, st int, body []byte) (wire.ErrorCode, []byte, error) {
	if st >= 200 && st < 300 {
		if route.convert == nil {
			return wire.OK, nil, nil
		}
		payload, err := route.convert(body)
		if err != nil {
			l.log.Warn("http transport: reply not understood", "command", code.String(), "status", st, "err", err)
			return wire.ErrInvalidFormat, nil, nil
		}
		return wire.OK, payload, nil
	}
	var e struct {
		ID   *uint32 `json:"id"`
		Code string  `json:"code"`
	}
	isJSON := json.Unmarshal(body, &e) == nil && e.ID != nil
	l.log.Debug("http transport: error answer", "command", code.String(), "status", st, "code", e.Code)
	switch {
	case !isJSON:
		// Framework rejections are plain text (spec §3.4); an unknown path is an empty 404.
		switch {
		case st == http.StatusNotFound || st == http.StatusMethodNotAllowed:
			return wire.ErrFeatureUnavailable, nil, nil
		case st >= 500:
			return wire.ErrError, nil, nil
		}
		return wire.ErrInvalidCommand, nil, nil
	case e.Code == "not_found":
		if route.lookup {
			return wire.OK, nil, nil
		}
		return wire.ErrResourceNotFound, nil, nil
	case e.Code == "forward_failed" || e.Code == "produce_timeout" || e.Code == "offset_write_timeout" || e.Code == "forward_timeout":
		return 0, nil, fmt.Errorf("%s answered %d %s: %w", route.path, st, e.Code, errHTTPOutcomeUnknown)
	case e.Code == "partition_read_timeout":
		return wire.ErrTransientNotCommitted, nil, nil // a read: replaying it is safe
	case e.Code == "too_many_in_flight_writes" || e.Code == "server_busy" || e.Code == "forward_busy" ||
		e.Code == "no_reachable_primary" || e.Code == "not_primary":
		return wire.ErrTransientNotAccepted, nil, nil // provably not admitted
	case e.Code == "payload_too_large":
		return wire.ErrInvalidCommand, nil, nil
	}
	ec := wire.ErrorCode(*e.ID)
	if ec == wire.ErrTransientNotCommitted && op != wire.OpNonReplicated {
		return 0, nil, fmt.Errorf("%s answered %d %s: %w", route.path, st, e.Code, errHTTPOutcomeUnknown)
	}
	if !ec.Known() || ec == wire.OK {
		return wire.ErrError, nil, nil
	}
	return ec, nil, nil
}

// do sends one request (re-sent while it provably was not sent: a refused connection) and reads
// the whole answer, bounded.
func (l *httpLink) do(ctx context.Context, route httpRoute, token string) (int, []byte, error) {
	var payload []byte
	if route.body != nil {
		var err error
		if payload, err = json.Marshal(route.body); err != nil {
			return 0, nil, fmt.Errorf("encode %s %s: %w", route.method, route.path, err)
		}
	}
	u := *l.base
	u.Path += route.path
	u.RawPath = ""
	if p, err := url.PathUnescape(u.Path); err == nil && p != u.Path {
		u.RawPath, u.Path = u.Path, p
	}
	if route.query != nil {
		u.RawQuery = route.query.Encode()
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, route.method, u.String(), bytes.NewReader(payload))
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", route.method, route.path, err)
		}
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := l.hc.Do(req)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" && attempt < l.retries && ctx.Err() == nil {
				l.log.Debug("http transport: connect failed, retrying", "url", l.base.Host, "attempt", attempt+1, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(httpRetryPause << attempt):
				}
				continue
			}
			if ctx.Err() != nil {
				return 0, nil, fmt.Errorf("%s %s: %w (%w)", route.method, route.path, os.ErrDeadlineExceeded, err)
			}
			return 0, nil, fmt.Errorf("%s %s: %w", route.method, route.path, err)
		}
		limit := l.bodyMax
		if resp.StatusCode >= 300 {
			limit = httpErrorBodyMax
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", os.ErrDeadlineExceeded, err)
			}
			return 0, nil, fmt.Errorf("%s %s: read answer: %w", route.method, route.path, err)
		}
		if int64(len(b)) > limit {
			return 0, nil, fmt.Errorf("%s %s: answer above %d bytes", route.method, route.path, limit)
		}
		return resp.StatusCode, b, nil
	}
}

// register signs in (POST /users/login or /personal-access-tokens/login) and answers with a
// Register reply: the user id and a session number of this link's own (HTTP has no sessions).
func (l *httpLink) register(ctx context.Context, body []byte) (wire.ErrorCode, []byte, error) {
	req, err := wire.DecodeRegister(body)
	if err != nil {
		return codeOr(err, wire.ErrInvalidCommand), nil, nil
	}
	ec, err := l.signIn(ctx, &req)
	if err != nil || ec != wire.OK {
		return ec, nil, err
	}
	l.login = &req
	l.sessionNo++
	reply := wire.RegisterReply{UserID: l.userID, Session: l.sessionNo, ProtocolVersion: wire.ProtocolVersion, ServerVersion: "http"}
	return wire.OK, reply.Append(nil), nil
}

func (l *httpLink) signIn(ctx context.Context, req *wire.RegisterRequest) (wire.ErrorCode, error) {
	route := httpRoute{method: "POST", path: "/users/login", body: map[string]string{"username": req.Username, "password": req.Password}}
	if req.Kind == wire.RegisterWithToken {
		route = httpRoute{method: "POST", path: "/personal-access-tokens/login", body: map[string]string{"token": req.Token}}
	}
	st, resp, err := l.do(ctx, route, "")
	if err != nil {
		return 0, err
	}
	return l.takeIdentity(route, st, resp)
}

// takeIdentity keeps the bearer of an IdentityInfo answer.
func (l *httpLink) takeIdentity(route httpRoute, st int, resp []byte) (wire.ErrorCode, error) {
	if st != http.StatusOK {
		ec, _, err := l.answer(wire.CodeLoginRegister, wire.OpRegister, route, st, resp)
		return ec, err
	}
	var id httpIdentity
	if err := json.Unmarshal(resp, &id); err != nil || id.AccessToken == nil || id.AccessToken.Token == "" {
		return wire.ErrInvalidFormat, nil
	}
	l.token, l.userID = id.AccessToken.Token, id.UserID
	l.issued, l.expiry = l.now(), time.Unix(int64(id.AccessToken.Expiry), 0)
	return wire.OK, nil
}

// freshen refreshes the bearer when little of its life is left, and signs in again when it cannot
// be refreshed. Failures leave the old bearer: the request then gets the server's answer.
func (l *httpLink) freshen(ctx context.Context) {
	if l.token == "" || l.expiry.IsZero() {
		return
	}
	margin := min(l.expiry.Sub(l.issued)/4, httpRefreshMarginMax)
	if l.expiry.Sub(l.now()) > margin {
		return
	}
	if l.now().Before(l.expiry) {
		route := httpRoute{method: "POST", path: "/users/refresh-token", body: map[string]string{"token": l.token}}
		st, resp, err := l.do(ctx, route, "")
		if err == nil && st == http.StatusOK {
			if ec, _ := l.takeIdentity(route, st, resp); ec == wire.OK {
				l.log.Debug("http transport: access token refreshed")
				return
			}
		}
	}
	if l.login != nil {
		l.relogin(ctx)
	}
}

func (l *httpLink) relogin(ctx context.Context) wire.ErrorCode {
	ec, err := l.signIn(ctx, l.login)
	if err != nil {
		return wire.ErrDisconnected
	}
	if ec == wire.OK {
		l.log.Debug("http transport: signed in again")
	}
	return ec
}

// logout is DELETE /users/logout; the bearer and credentials are dropped whatever it answers.
func (l *httpLink) logout(ctx context.Context) (wire.ErrorCode, []byte, error) {
	if l.token == "" {
		return wire.ErrUnauthenticated, nil, nil
	}
	route := httpRoute{method: "DELETE", path: "/users/logout"}
	st, resp, err := l.do(ctx, route, l.token)
	l.token, l.login = "", nil
	if err != nil {
		return 0, nil, err
	}
	return l.answer(wire.CodeLogoutUser, wire.OpLogout, route, st, resp)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
