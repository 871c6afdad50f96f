// Package integration starts the real iggy-server binary on ephemeral
// loopback ports and talks to it over TCP.
package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverBinary is built once by TestMain.
var serverBinary string

// serverBuildFlags are extra `go build` flags for the server binary.
var serverBuildFlags []string

const (
	bootTimeout = 20 * time.Second
	stopTimeout = 15 * time.Second
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lodestream-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	serverBinary = filepath.Join(dir, "iggy-server")
	args := append([]string{"build"}, serverBuildFlags...)
	build := exec.Command("go", append(args, "-o", serverBinary, "../cmd/iggy-server")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build iggy-server:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects the server's stderr for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// baseEnv is every test server's environment: its data directory and
// ephemeral loopback ports for each client listener (later entries of a
// test's own env override these).
func baseEnv(dataDir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"IGGY_SYSTEM_PATH=" + dataDir,
		"IGGY_TCP_ADDRESS=127.0.0.1:0",
		"IGGY_QUIC_ADDRESS=127.0.0.1:0",
		"IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0",
		// HTTP listens on a fixed port by default; tests that use it
		// enable it on an ephemeral port (http_test.go).
		"IGGY_HTTP_ENABLED=false",
	}
}

// transportAddr waits (up to bootTimeout) for the address the running
// server published for a client transport ("quic" or "websocket"; TCP's
// is s.addr).
func (s *server) transportAddr(transport string) string {
	s.t.Helper()
	if transport == "tcp" {
		return s.addr
	}
	file := filepath.Join(s.dataDir, "runtime", transport+".addr")
	deadline := time.Now().Add(bootTimeout)
	for {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) || !s.running() {
			s.t.Fatalf("server did not publish %s:\n%s", file, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server is one running iggy-server process.
type server struct {
	t       *testing.T
	dataDir string
	env     []string
	args    []string // extra command-line arguments
	cmd     *exec.Cmd
	logs    *syncBuffer
	exited  chan struct{}
	exitErr error
	addr    string
}

// startServer boots the binary on dataDir (a fresh t.TempDir when empty)
// with IGGY_TCP_ADDRESS=127.0.0.1:0 and default root credentials, and
// waits for runtime/tcp.addr. The process is killed at test cleanup.
func startServer(t *testing.T, dataDir string, extraEnv ...string) *server {
	t.Helper()
	return startServerArgs(t, dataDir, nil, extraEnv...)
}

// startServerArgs is startServer with extra command-line arguments.
func startServerArgs(t *testing.T, dataDir string, args []string, extraEnv ...string) *server {
	t.Helper()
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
	}
	s := &server{t: t, dataDir: dataDir, env: extraEnv, args: args, logs: &syncBuffer{}}
	s.start()
	t.Cleanup(func() {
		if s.running() {
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if strings.Contains(s.logs.String(), "WARNING: DATA RACE") {
			t.Error("the server reported a data race")
		}
		if strings.Contains(s.logs.String(), "BUG: panic") {
			t.Error("the server recovered from a panic while handling a frame")
		}
		if t.Failed() {
			t.Logf("server log (%s):\n%s", s.dataDir, s.logs.String())
		}
	})
	return s
}

func (s *server) start() {
	s.t.Helper()
	addrFile := filepath.Join(s.dataDir, "runtime", "tcp.addr")
	for _, name := range []string{"tcp.addr", "quic.addr", "websocket.addr"} {
		_ = os.Remove(filepath.Join(s.dataDir, "runtime", name))
	}
	env := baseEnv(s.dataDir)
	s.cmd = exec.Command(serverBinary, append([]string{"--with-default-root-credentials"}, s.args...)...)
	s.cmd.Env = append(env, s.env...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs // accumulated across restarts
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start server: %v", err)
	}
	s.exited = make(chan struct{})
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(bootTimeout)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			s.addr = strings.TrimSpace(string(b))
			return
		}
		select {
		case <-s.exited:
			s.t.Fatalf("server exited during boot (%v):\n%s", s.exitErr, s.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server did not publish %s within %s:\n%s", addrFile, bootTimeout, s.logs.String())
		}
	}
}

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return s.cmd != nil
	}
}

// stop sends sig and waits; SIGTERM must end in exit status 0.
func (s *server) stop(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal server: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Fatalf("server did not stop within %s after %v:\n%s", stopTimeout, sig, s.logs.String())
	}
	if sig == syscall.SIGTERM && s.exitErr != nil {
		s.t.Fatalf("server exit after SIGTERM: %v\n%s", s.exitErr, s.logs.String())
	}
}

// restart stops the process with sig and boots it again on the same data.
func (s *server) restart(sig syscall.Signal) {
	s.t.Helper()
	s.stop(sig)
	s.start()
}

// startExpectExit boots the server on its data and expects it to refuse:
// it returns the exit error (nil if the process published its address and
// kept running, which the caller treats as a failure).
func (s *server) startExpectExit() error {
	s.t.Helper()
	env := baseEnv(s.dataDir)
	s.cmd = exec.Command(serverBinary, append([]string{"--with-default-root-credentials"}, s.args...)...)
	s.cmd.Env = append(env, s.env...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start server: %v", err)
	}
	s.exited = make(chan struct{})
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-s.exited:
		return s.exitErr
	case <-time.After(bootTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return nil
	}
}
