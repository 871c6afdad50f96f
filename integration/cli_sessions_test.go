package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIContextsLoginAndStoredTokens covers context, login/logout/session status, pat create
// --store-token with -n/--token-name, and -d/--debug, with a private IGGY_HOME.
func TestCLIContextsLoginAndStoredTokens(t *testing.T) {
	s := startServer(t, "")
	home := t.TempDir()
	env := []string{"IGGY_HOME=" + home}
	cli := func(args ...string) cliResult { return iggyCLIEnv(t, env, "", args...) }

	// A context with the address and credentials: commands need no options.
	cli("context", "create", "local", "--tcp-server-address", s.addr, "-u", "iggy", "-p", "iggy").ok(t)
	cli("me").fails(t, 2, "missing credentials") // the default context is empty
	cli("context", "use", "local").ok(t)
	if out := cli("me").ok(t); !strings.Contains(out, "| Transport") {
		t.Fatalf("me through the context:\n%s", out)
	}
	// A context with the address only, to see which credentials are used.
	cli("context", "create", "addr", "--tcp-server-address", s.addr).ok(t)
	cli("context", "use", "addr").ok(t)
	cli("me").fails(t, 2, "missing credentials")

	// login stores a session token; later commands use it without credentials.
	if out := cli("-u", "iggy", "-p", "iggy", "login", "1hour").ok(t); !strings.Contains(out, "Successfully logged into Iggy server "+s.addr) {
		t.Fatalf("login: %s", out)
	}
	if out := cli("session", "status").ok(t); !strings.Contains(out, "Yes") {
		t.Fatalf("session status after login:\n%s", out)
	}
	cli("me").ok(t)
	if out := cli("pat", "list").ok(t); !strings.Contains(out, "iggy-cli-session") {
		t.Fatalf("the session token is not on the server:\n%s", out)
	}
	if out := cli("-u", "iggy", "-p", "iggy", "login").ok(t); !strings.Contains(out, "Already logged into") {
		t.Fatalf("second login: %s", out)
	}
	tokens, err := os.ReadFile(filepath.Join(home, "tokens.toml"))
	if err != nil || !strings.Contains(string(tokens), "iggy-cli-session:"+s.addr) {
		t.Fatalf("tokens.toml = %q, %v", tokens, err)
	}
	if out := cli("logout").ok(t); !strings.Contains(out, "Successfully logged out from Iggy server "+s.addr) {
		t.Fatalf("logout: %s", out)
	}
	cli("me").fails(t, 2, "missing credentials")
	if out := iggyCLI(t, s.addr, "", "pat", "list").ok(t); strings.Contains(out, "iggy-cli-session") {
		t.Fatalf("logout left the session token on the server:\n%s", out)
	}

	// A session whose token was deleted on the server is dropped at the next use.
	cli("-u", "iggy", "-p", "iggy", "login").ok(t)
	iggyCLI(t, s.addr, "", "pat", "delete", "iggy-cli-session").ok(t)
	cli("me").fails(t, 1, "login session expired")
	if out := cli("session", "status").ok(t); !strings.Contains(out, "| No") {
		t.Fatalf("session status after expiry:\n%s", out)
	}

	// pat create --store-token keeps the token out of the output; -n logs in with it.
	out := cli("-u", "iggy", "-p", "iggy", "pat", "create", "--store-token", "deploy").ok(t)
	if strings.Contains(out, "Token:") || !strings.Contains(out, "deploy") {
		t.Fatalf("pat create --store-token printed:\n%s", out)
	}
	cli("-n", "deploy", "me").ok(t)
	cli("-n", "other", "me").fails(t, 1, "no stored token named")
	cli("-u", "iggy", "-p", "iggy", "pat", "create", "-s", "timed", "1day").fails(t, 2, "expiry")

	// -d appends a debug log.
	logFile := filepath.Join(t.TempDir(), "debug.log")
	cli("-d", logFile, "-n", "deploy", "me").ok(t)
	if data, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(data), "connecting to "+s.addr) {
		t.Fatalf("debug log = %q, %v", data, err)
	}
}
