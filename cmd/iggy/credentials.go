package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// connect dials the server and, when login is true, logs in with the resolved credentials.
func (a *app) connect(ctx context.Context, login bool) (*client.Client, error) {
	dialAddr, transportOpts, err := a.globals.dialTarget()
	if err != nil {
		return nil, err
	}
	var creds credentials
	if login {
		var err error
		if creds, err = a.resolveCredentials(); err != nil {
			return nil, err
		}
	}
	addr := a.globals.tcpServerAddress // stored sessions and tokens are keyed by it
	a.debugf("connecting to %s over %s", dialAddr, a.globals.transport)
	c, err := client.Dial(ctx, dialAddr, append(transportOpts, client.WithDialTimeout(5*time.Second),
		client.WithSDK("iggy-cli", "lodestream"), client.WithLogger(a.logger))...)
	if err != nil {
		return nil, err
	}
	if !login {
		return c, nil
	}
	a.debugf("logging in with %s", creds.kind())
	if creds.token != "" {
		_, err = c.LoginWithPersonalAccessToken(ctx, creds.token)
	} else {
		_, err = c.LoginUser(ctx, creds.username, creds.password)
	}
	if err != nil {
		c.Close()
		if creds.session && isDeadTokenError(err) {
			// The stored session no longer authenticates: drop it, as upstream does.
			if derr := a.deleteToken(sessionService(addr), sessionTokenName); derr != nil {
				return nil, derr
			}
			// Not wrapped: the message, not the server's code, is what the user needs.
			return nil, fmt.Errorf("login session expired for Iggy server: %s, please login again or use other authentication method (%s)",
				addr, describeCode(client.CodeOf(err)))
		}
		return nil, &loginError{username: creds.username, err: err}
	}
	return c, nil
}

// isDeadTokenError reports a token the server no longer accepts (deleted, expired, invalid).
func isDeadTokenError(err error) bool {
	switch client.CodeOf(err) {
	case wire.ErrUnauthenticated, wire.ErrInvalidCredentials, wire.ErrResourceNotFound,
		wire.ErrInvalidPersonalAccessToken, wire.ErrPersonalAccessTokenExpired:
		return true
	}
	return false
}

type credentials struct {
	username, password, token string
	session                   bool // token is a stored login session's
}

func (c credentials) kind() string {
	switch {
	case c.session:
		return "the stored login session"
	case c.token != "":
		return "a personal access token"
	}
	return fmt.Sprintf("user %q", c.username)
}

// loginError wraps a failed login with who tried.
type loginError struct {
	username string
	err      error
}

func (e *loginError) Error() string {
	if e.username == "" {
		return "login with personal access token failed: " + e.err.Error()
	}
	return fmt.Sprintf("login as %q failed: %v", e.username, e.err)
}

func (e *loginError) Unwrap() error { return e.err }

// resolveCredentials follows upstream's order: a stored login session for the server (unless the
// command prefers explicit credentials, as 'login' does), --token-name (a stored PAT), --token,
// --username (with --password, or the password read from stdin), IGGY_USERNAME and IGGY_PASSWORD,
// and last the stored session for 'login'.
func (a *app) resolveCredentials() (credentials, error) {
	g := &a.globals
	given := 0
	for _, v := range []string{g.token, g.username, g.tokenName} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return credentials{}, usagef("--username, --token and --token-name cannot be used together")
	}
	store, err := a.loadTokens()
	if err != nil {
		return credentials{}, err
	}
	addr := g.tcpServerAddress
	session, hasSession := store.get(sessionService(addr), sessionTokenName)
	if hasSession && !a.preferExplicit {
		return credentials{token: session, session: true}, nil
	}
	switch {
	case g.tokenName != "":
		token, ok := store.get(patService(addr), g.tokenName)
		if !ok {
			return credentials{}, fmt.Errorf("no stored token named %q for server %s; store one with 'iggy pat create --store-token %s'", g.tokenName, addr, g.tokenName)
		}
		return credentials{token: token}, nil
	case g.token != "":
		return credentials{token: g.token}, nil
	case g.username != "":
		if g.password != "" {
			return credentials{username: g.username, password: g.password}, nil
		}
		pw, err := a.readPassword()
		if err != nil {
			return credentials{}, err
		}
		return credentials{username: g.username, password: pw}, nil
	}
	u, p := a.getenv(envUsername), a.getenv(envPassword)
	if u != "" && p != "" {
		return credentials{username: u, password: p}, nil
	}
	if hasSession {
		return credentials{token: session, session: true}, nil
	}
	return credentials{}, usagef("missing credentials: pass -u USERNAME -p PASSWORD (or -t TOKEN) before the command, set %s and %s, or run 'iggy login'",
		envUsername, envPassword)
}

// readPassword reads one line from stdin, as upstream does when -u comes without -p.
func (a *app) readPassword() (string, error) {
	if f, ok := a.stdin.(*os.File); ok && isTerminal(f) {
		fmt.Fprint(a.stderr, "Password: ")
	}
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usagef("--username given without --password and no password on stdin")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
