package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliEnv runs in-process invocations with their own environment (IGGY_HOME and friends).
type cliEnv struct {
	t   *testing.T
	env map[string]string
}

func newCLIEnv(t *testing.T) *cliEnv {
	return &cliEnv{t: t, env: map[string]string{envIggyHome: t.TempDir()}}
}

func (e *cliEnv) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errOut)
	a.getenv = func(k string) string { return e.env[k] }
	code = runApp(context.Background(), a, args)
	return code, out.String(), errOut.String()
}

func (e *cliEnv) ok(args ...string) string {
	e.t.Helper()
	code, out, errOut := e.run(args...)
	if code != 0 {
		e.t.Fatalf("iggy %q: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

func (e *cliEnv) fails(code int, want string, args ...string) {
	e.t.Helper()
	got, out, errOut := e.run(args...)
	if got != code || !strings.Contains(errOut, want) {
		e.t.Fatalf("iggy %q: exit %d (want %d), stderr %q lacks %q; stdout %q", args, got, code, errOut, want, out)
	}
}

func TestContextLifecycle(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.ok("context", "list", "-l", "list"); out != "default*\n" {
		t.Fatalf("fresh list = %q", out)
	}
	e.ok("context", "create", "prod", "--tcp-server-address", "127.0.0.1:1", "-u", "alice", "-p", "secret", "--transport", "tcp")
	e.fails(1, "already exists", "context", "create", "prod")
	e.fails(2, "reserved", "context", "create", "default")
	e.fails(2, "letters, digits", "context", "create", "bad name")
	e.fails(2, "invalid transport", "context", "create", "x", "--transport", "pigeon")
	e.fails(1, "missing", "context", "use", "nope")
	e.ok("context", "use", "prod")
	if out := e.ok("context", "list", "-l", "list"); out != "default\nprod*\n" {
		t.Fatalf("list after use = %q", out)
	}
	show := e.ok("context", "show", "prod")
	for _, want := range []string{"prod*", "127.0.0.1:1", "alice", "********"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "secret") {
		t.Fatalf("show reveals the password:\n%s", show)
	}
	// The file is upstream's layout, owner-only.
	path := filepath.Join(e.env[envIggyHome], contextsFileName)
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "[prod]") || !strings.Contains(string(data), `tcp_server_address = "127.0.0.1:1"`) {
		t.Fatalf("contexts.toml = %q, %v", data, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("contexts.toml mode %v", st.Mode().Perm())
	}
	// The active context's address is used: the refused connection names it.
	e.fails(1, "127.0.0.1:1", "--output", "json", "me")
	e.ok("context", "delete", "prod")
	if out := e.ok("context", "list", "-l", "list"); out != "default*\n" {
		t.Fatalf("list after delete = %q", out)
	}
	e.fails(2, "cannot delete", "context", "delete", "default")
}

func TestContextOptionsLoseToCommandLine(t *testing.T) {
	e := newCLIEnv(t)
	e.ok("context", "create", "c", "--tcp-server-address", "127.0.0.1:1")
	e.ok("context", "use", "c")
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	a.getenv = func(k string) string { return e.env[k] }
	root := a.rootCommand()
	if err := root.PersistentFlags().Set("tcp-server-address", "127.0.0.1:5"); err != nil {
		t.Fatal(err)
	}
	if err := a.applyActiveContext(root); err != nil || a.globals.tcpServerAddress != "127.0.0.1:5" {
		t.Fatalf("address %q, %v", a.globals.tcpServerAddress, err)
	}
}

func TestStoredTokensAndSessionStatus(t *testing.T) {
	e := newCLIEnv(t)
	addr := "127.0.0.1:1"
	if out := e.ok("--tcp-server-address", addr, "session", "status"); !strings.Contains(out, "| No") {
		t.Fatalf("status without a session:\n%s", out)
	}
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	a.getenv = func(k string) string { return e.env[k] }
	a.globals.tcpServerAddress = addr
	if err := a.storeToken(sessionService(addr), sessionTokenName, "sess-tok"); err != nil {
		t.Fatal(err)
	}
	if err := a.storeToken(patService(addr), "deploy", "pat-tok"); err != nil {
		t.Fatal(err)
	}
	if out := e.ok("--tcp-server-address", addr, "session", "status"); !strings.Contains(out, "Yes") {
		t.Fatalf("status with a session:\n%s", out)
	}
	// A stored session wins over explicit credentials, except for login; -n reads a stored PAT.
	a.globals.username, a.globals.password = "u", "p"
	if c, err := a.resolveCredentials(); err != nil || !c.session || c.token != "sess-tok" {
		t.Fatalf("with a session: %+v %v", c, err)
	}
	a.preferExplicit = true
	if c, err := a.resolveCredentials(); err != nil || c.username != "u" {
		t.Fatalf("login prefers explicit credentials: %+v %v", c, err)
	}
	a.globals.username, a.globals.password = "", ""
	if c, err := a.resolveCredentials(); err != nil || !c.session {
		t.Fatalf("login falls back to the session: %+v %v", c, err)
	}
	a.preferExplicit = false
	if err := a.deleteToken(sessionService(addr), sessionTokenName); err != nil {
		t.Fatal(err)
	}
	a.globals.tokenName = "deploy"
	if c, err := a.resolveCredentials(); err != nil || c.token != "pat-tok" || c.session {
		t.Fatalf("-n deploy: %+v %v", c, err)
	}
	a.globals.tokenName = "missing"
	if _, err := a.resolveCredentials(); err == nil || !strings.Contains(err.Error(), "pat create --store-token") {
		t.Fatalf("-n missing: %v", err)
	}
	a.globals.token = "t"
	if _, err := a.resolveCredentials(); err == nil {
		t.Fatal("-n with -t accepted")
	}
	data, _ := os.ReadFile(filepath.Join(e.env[envIggyHome], tokensFileName))
	if strings.Contains(string(data), "sess-tok") || !strings.Contains(string(data), "pat-tok") {
		t.Fatalf("token store after delete: %s", data)
	}
}

func TestMissingActiveContextIsReportedAndRepairable(t *testing.T) {
	e := newCLIEnv(t)
	if err := os.WriteFile(filepath.Join(e.env[envIggyHome], activeContextFileName), []byte("gone"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.fails(1, `active context "gone" is missing`, "me")
	e.ok("context", "list")
	e.ok("context", "use", "default")
	e.fails(2, "missing credentials", "me")
}

func TestNoHomeMeansNothingStored(t *testing.T) {
	e := &cliEnv{t: t, env: map[string]string{}}
	e.fails(1, "IGGY_HOME", "context", "create", "x")
	if out := e.ok("context", "list", "-l", "list"); out != "default*\n" {
		t.Fatalf("list without a home = %q", out)
	}
}

func TestDebugLogKeepsSecretsOut(t *testing.T) {
	e := newCLIEnv(t)
	log := filepath.Join(t.TempDir(), "debug.log")
	e.fails(1, "127.0.0.1:1", "-d", log, "--tcp-server-address", "127.0.0.1:1", "-u", "alice", "-p", "hunter2", "me")
	data, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(data), "executing iggy me") || !strings.Contains(string(data), "connecting to 127.0.0.1:1") {
		t.Fatalf("debug log = %q, %v", data, err)
	}
	if strings.Contains(string(data), "hunter2") {
		t.Fatalf("the debug log holds the password: %q", data)
	}
}
