package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/config"
)

// runResult captures what the fake node received.
type runResult struct {
	called bool
	boot   Boot
}

func fakeRun(result *runResult, err error) runFunc {
	return func(ctx context.Context, boot Boot) error {
		result.called = true
		result.boot = boot
		return err
	}
}

// invoke runs the command with env and args, returning exit code and stderr.
func invoke(t *testing.T, env config.Env, run runFunc, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := executeWith(ctx, invocation{args: args, env: env, stdout: &stdout, stderr: &stderr, run: run})
	return code, stderr.String()
}

func dataEnv(t *testing.T) config.Env {
	t.Helper()
	return config.Env{"IGGY_SYSTEM_PATH": filepath.Join(t.TempDir(), "data")}
}

func TestExecuteSingleNodeDefaultCredentials(t *testing.T) {
	var result runResult
	code, stderr := invoke(t, dataEnv(t), fakeRun(&result, nil), "--with-default-root-credentials")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !result.called || !result.boot.FirstBoot || result.boot.RootUsername != "iggy" || result.boot.RootPassword != "iggy" {
		t.Fatalf("boot = %+v", result.boot)
	}
	if result.boot.Node != nil || result.boot.ReplicaID != 0 || result.boot.Logger == nil {
		t.Fatalf("single node boot = %+v", result.boot)
	}
}

func TestExecuteRunErrorExitsOne(t *testing.T) {
	var result runResult
	code, stderr := invoke(t, dataEnv(t), fakeRun(&result, errors.New("disk on fire")), "--with-default-root-credentials")
	if code != exitRunFailed || !strings.Contains(stderr, "iggy-server: server stopped: disk on fire") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestExecuteClusterWithoutReplicaIDRefuses(t *testing.T) {
	env := dataEnv(t)
	env["IGGY_CLUSTER_ENABLED"] = "true"
	env["IGGY_ROOT_USERNAME"] = "admin"
	env["IGGY_ROOT_PASSWORD"] = "secret"
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil))
	if code != exitConfigRefused || result.called {
		t.Fatalf("exit %d called %v, stderr:\n%s", code, result.called, stderr)
	}
	if !strings.HasPrefix(stderr, "iggy-server: ") || !strings.Contains(stderr, "requires --replica-id") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(env["IGGY_SYSTEM_PATH"]); err == nil {
		t.Fatal("a refused boot must not create the data directory")
	}
}

func TestExecuteHelpAndFlagErrors(t *testing.T) {
	var result runResult
	var stdout, stderr bytes.Buffer
	code := executeWith(context.Background(), invocation{args: []string{"--help"}, env: config.Env{}, stdout: &stdout, stderr: &stderr, run: fakeRun(&result, nil)})
	if code != exitOK || result.called || !strings.Contains(stdout.String(), "--replica-id") || !strings.Contains(stdout.String(), "--fresh") {
		t.Fatalf("help: exit %d, stdout:\n%s", code, stdout.String())
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "iggy-server: unknown flag: --bogus"},
		{[]string{"--replica-id", "300"}, `iggy-server: invalid argument "300" for "--replica-id"`},
		{[]string{"--replica-id", "-1"}, `invalid argument "-1"`},
		{[]string{"serve"}, "iggy-server: unknown command"},
	}
	for _, c := range cases {
		code, stderr := invoke(t, dataEnv(t), fakeRun(&result, nil), c.args...)
		if code != exitConfigRefused || result.called || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s", c.args, code, stderr)
		}
	}
}

func TestExecuteConfigurationRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  config.Env
		args []string
		want string
	}{
		{"validation rule", config.Env{"IGGY_CLUSTER_REPAIR_CHUNK_MAX": "2000"}, nil,
			"cluster.repair_chunk_max = 2000: must be between 1 and 1024"},
		{"bad env value", config.Env{"IGGY_TCP_ENABLED": "maybe"}, nil, `IGGY_TCP_ENABLED="maybe"`},
		{"missing config file", config.Env{"IGGY_CONFIG_PATH": "/nonexistent/iggy.toml"}, nil, "/nonexistent/iggy.toml"},
		{"replica id without cluster", nil, []string{"--replica-id", "1"}, "--replica-id 1 requires cluster.enabled = true"},
		{"replica id not in roster", config.Env{"IGGY_CLUSTER_ENABLED": "true"}, []string{"--replica-id", "5"}, "--replica-id 5 matches no cluster.nodes entry"},
		{"cluster first boot without root", config.Env{"IGGY_CLUSTER_ENABLED": "true"}, []string{"--replica-id", "0"}, "requires IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD"},
		{"half credentials", config.Env{"IGGY_ROOT_PASSWORD": "secret"}, nil, "IGGY_ROOT_PASSWORD is set but IGGY_ROOT_USERNAME is not"},
		{"short password", config.Env{"IGGY_ROOT_USERNAME": "admin", "IGGY_ROOT_PASSWORD": "pw"}, nil, "IGGY_ROOT_PASSWORD is 2 bytes"},
		{"unsupported key", config.Env{"IGGY_SYSTEM_RECOVERY_RECREATE_MISSING_STATE": "true"}, nil, "recreate_missing_state = true is not supported"},
		{"bad log level", config.Env{"IGGY_SYSTEM_LOGGING_LEVEL": "chatty"}, nil, `system.logging.level = "chatty"`},
		{"encryption key of 16 bytes", config.Env{"IGGY_SYSTEM_ENCRYPTION_ENABLED": "true", "IGGY_SYSTEM_ENCRYPTION_KEY": "AAAAAAAAAAAAAAAAAAAAAA=="}, nil,
			"system.encryption.key (masked) decodes to 16 bytes, not 32: it must be the base64 (standard alphabet, padded) encoding of exactly 32 bytes"},
		{"encryption key not base64", config.Env{"IGGY_SYSTEM_ENCRYPTION_ENABLED": "true", "IGGY_SYSTEM_ENCRYPTION_KEY": "hunter2-hunter2"}, nil,
			"system.encryption.key (masked) is not valid base64"},
		{"encryption without key", config.Env{"IGGY_SYSTEM_ENCRYPTION_ENABLED": "true"}, nil, "system.encryption.key must be set"},
		{"rebalancing timeout", config.Env{"IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT": "10s"}, nil, "consumer_group.rebalancing_timeout = 10s: only the default 30s is accepted"},
		{"memory pool size", config.Env{"IGGY_SYSTEM_MEMORY_POOL_SIZE": "1 GiB"}, nil, "system.memory_pool.size = 1 GiB"},
		{"log rotation check interval", config.Env{"IGGY_SYSTEM_LOGGING_ROTATION_CHECK_INTERVAL": "0"}, nil, "system.logging.rotation_check_interval = 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := dataEnv(t)
			for name, value := range c.env {
				env[name] = value
			}
			var result runResult
			code, stderr := invoke(t, env, fakeRun(&result, nil), c.args...)
			if code != exitConfigRefused || result.called {
				t.Fatalf("exit %d called %v, stderr:\n%s", code, result.called, stderr)
			}
			if !hasRefusalLine(stderr, c.want) {
				t.Fatalf("stderr lacks an \"iggy-server: \" line containing %q:\n%s", c.want, stderr)
			}
			if strings.Contains(stderr, "hunter2-hunter2") {
				t.Fatalf("the encryption key was echoed:\n%s", stderr)
			}
		})
	}
}

// hasRefusalLine reports whether some stderr line is "iggy-server: ...want...".
func hasRefusalLine(stderr, want string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "iggy-server: ") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

func TestExecuteEveryViolationLineIsPrefixed(t *testing.T) {
	env := dataEnv(t)
	env["IGGY_CLUSTER_REPAIR_CHUNK_MAX"] = "0"
	env["IGGY_METADATA_JOURNAL_SLOTS"] = "3"
	env["IGGY_TPC_ADDRESS"] = "typo"
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil))
	if code != exitConfigRefused {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"cluster.repair_chunk_max = 0: must be between 1 and 1024", "metadata.journal_slots = 3"} {
		if !hasRefusalLine(stderr, want) {
			t.Errorf("no prefixed line with %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stderr, "IGGY_TPC_ADDRESS: unknown configuration variable") {
		t.Errorf("unknown variable warning missing:\n%s", stderr)
	}
}

func TestExecuteClusterFromEnvRoster(t *testing.T) {
	env := dataEnv(t)
	for name, value := range map[string]string{
		"IGGY_CLUSTER_ENABLED":                   "true",
		"IGGY_CLUSTER_AUTH_ENABLED":              "true",
		"IGGY_CLUSTER_AUTH_SHARED_SECRET":        "this-is-a-shared-secret-of-32-bytes!",
		"IGGY_CLUSTER_NODES_0_NAME":              "n0",
		"IGGY_CLUSTER_NODES_0_IP":                "127.0.0.1",
		"IGGY_CLUSTER_NODES_0_REPLICA_ID":        "0",
		"IGGY_CLUSTER_NODES_0_PORTS_TCP":         "18090",
		"IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA": "19090",
		"IGGY_CLUSTER_NODES_0_PORTS_HTTP":        "13000",
		"IGGY_CLUSTER_NODES_0_PORTS_QUIC":        "18080",
		"IGGY_CLUSTER_NODES_0_PORTS_WEBSOCKET":   "18092",
		"IGGY_CLUSTER_NODES_1_NAME":              "n1",
		"IGGY_CLUSTER_NODES_1_IP":                "127.0.0.1",
		"IGGY_CLUSTER_NODES_1_REPLICA_ID":        "1",
		"IGGY_CLUSTER_NODES_1_PORTS_TCP":         "18091",
		"IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA": "19091",
		"IGGY_CLUSTER_NODES_1_PORTS_HTTP":        "13001",
		"IGGY_CLUSTER_NODES_1_PORTS_QUIC":        "18081",
		"IGGY_CLUSTER_NODES_1_PORTS_WEBSOCKET":   "18093",
		"IGGY_ROOT_USERNAME":                     "admin",
		"IGGY_ROOT_PASSWORD":                     "secret",
		"IGGY_SYSTEM_LOGGING_LEVEL":              "debug",
	} {
		env[name] = value
	}
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil), "--replica-id", "1")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	boot := result.boot
	if boot.ReplicaID != 1 || boot.Node == nil || boot.Node.Name != "n1" || len(boot.Config.Cluster.Nodes) != 2 ||
		boot.RootUsername != "admin" || boot.RootPassword != "secret" || !boot.FirstBoot {
		t.Fatalf("boot = %+v", boot)
	}
	if strings.Contains(stderr, "this-is-a-shared-secret") {
		t.Fatalf("stderr leaks the cluster secret:\n%s", stderr)
	}
	if !strings.Contains(stderr, "effective configuration") {
		t.Fatalf("debug level must log the effective configuration:\n%s", stderr)
	}
}

func TestExecuteGeneratesRootPasswordOnce(t *testing.T) {
	env := dataEnv(t)
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	password := result.boot.RootPassword
	if result.boot.RootUsername != "iggy" || len(password) < 20 || len(password) > 39 || !strings.Contains(stderr, password) {
		t.Fatalf("boot = %+v, stderr:\n%s", result.boot, stderr)
	}
	// Once metadata exists the root user is recovered, nothing generated.
	if err := os.MkdirAll(filepath.Join(env["IGGY_SYSTEM_PATH"], "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	result = runResult{}
	code, stderr = invoke(t, env, fakeRun(&result, nil))
	if code != exitOK || result.boot.FirstBoot || result.boot.RootPassword != "" || strings.Contains(stderr, "generated a root password") {
		t.Fatalf("restart: exit %d boot %+v, stderr:\n%s", code, result.boot, stderr)
	}
}

func TestExecuteFreshWipesSystemPath(t *testing.T) {
	env := dataEnv(t)
	metadata := filepath.Join(env["IGGY_SYSTEM_PATH"], "metadata")
	if err := os.MkdirAll(metadata, 0o755); err != nil {
		t.Fatal(err)
	}
	sibling := filepath.Join(filepath.Dir(env["IGGY_SYSTEM_PATH"]), "keep.txt")
	if err := os.WriteFile(sibling, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil), "-f", "--with-default-root-credentials")
	if code != exitOK || !result.boot.FirstBoot || result.boot.RootPassword != "iggy" {
		t.Fatalf("exit %d boot %+v, stderr:\n%s", code, result.boot, stderr)
	}
	if _, err := os.Stat(metadata); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("metadata survived --fresh: %v", err)
	}
	if _, err := os.Stat(sibling); err != nil {
		t.Fatalf("--fresh touched a sibling of system.path: %v", err)
	}
}

func TestWipeSystemPathRefusesDangerousPaths(t *testing.T) {
	root := t.TempDir()
	inner := filepath.Join(root, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(inner)
	var removed []string
	record := func(path string) error { removed = append(removed, path); return nil }
	for _, path := range []string{"/", ".", inner, root, "..", "  "} {
		if err := wipeSystemPath(path, record); err == nil {
			t.Errorf("wipeSystemPath(%q) allowed", path)
		} else if !strings.Contains(err.Error(), "refusing") {
			t.Errorf("wipeSystemPath(%q) error %q lacks a refusal", path, err)
		}
	}
	if len(removed) != 0 {
		t.Fatalf("removed %v", removed)
	}
	if err := wipeSystemPath("data", record); err != nil || len(removed) != 1 || removed[0] != filepath.Join(inner, "data") {
		t.Fatalf("relative data dir: err %v removed %v", err, removed)
	}
}

type codedError struct{ code int }

func (e codedError) Error() string { return "superblock wedged" }
func (e codedError) ExitCode() int { return e.code }

func TestExecuteRunErrorChoosesExitCode(t *testing.T) {
	var result runResult
	code, _ := invoke(t, dataEnv(t), fakeRun(&result, fmt.Errorf("node: %w", codedError{code: 75})), "--with-default-root-credentials")
	if code != 75 {
		t.Fatalf("exit %d, want 75", code)
	}
}

func TestExecuteStopsOnSIGTERM(t *testing.T) {
	t.Setenv("IGGY_SYSTEM_PATH", filepath.Join(t.TempDir(), "data"))
	t.Setenv("IGGY_ROOT_USERNAME", "admin")
	t.Setenv("IGGY_ROOT_PASSWORD", "secret")
	stopped := make(chan struct{})
	run := func(ctx context.Context, boot Boot) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			close(stopped)
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("context not cancelled by SIGTERM")
		}
	}
	if code := execute(nil, run); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("run did not observe the cancellation")
	}
}

func TestExecuteReadsDotEnvFromIggyEnvPath(t *testing.T) {
	dir := t.TempDir()
	dotEnv := filepath.Join(dir, "server.env")
	text := "IGGY_ROOT_USERNAME=fromfile\nIGGY_ROOT_PASSWORD=filepass\nIGGY_TCP_ADDRESS=127.0.0.1:7070\n"
	if err := os.WriteFile(dotEnv, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := dataEnv(t)
	env["IGGY_ENV_PATH"] = dotEnv
	env["IGGY_TCP_ADDRESS"] = "127.0.0.1:6060"
	var result runResult
	code, stderr := invoke(t, env, fakeRun(&result, nil))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if result.boot.RootUsername != "fromfile" || result.boot.RootPassword != "filepass" || result.boot.Config.TCP.Address != "127.0.0.1:6060" {
		t.Fatalf("boot = %+v (process env must win over the .env file)", result.boot)
	}
}

func TestExecuteCancelledRunIsCleanStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	run := func(runCtx context.Context, boot Boot) error {
		cancel()
		<-runCtx.Done()
		return fmt.Errorf("node: %w", runCtx.Err())
	}
	var stdout, stderr bytes.Buffer
	env := dataEnv(t)
	env["IGGY_ROOT_USERNAME"], env["IGGY_ROOT_PASSWORD"] = "admin", "secret"
	if code := executeWith(ctx, invocation{env: env, stdout: &stdout, stderr: &stderr, run: run}); code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	// Without a shutdown request the same error is a failure.
	var result runResult
	code, _ := invoke(t, env, fakeRun(&result, context.Canceled))
	if code != exitRunFailed {
		t.Fatalf("context.Canceled without shutdown: exit %d, want %d", code, exitRunFailed)
	}
}

// TestExecuteWritesTheLogFile: system.logging.file_enabled (the default)
// writes the same lines as stderr to <system.path>/<logging.path>/iggy-server.log,
// and rotates by max_file_size; file_enabled = false writes no file.
func TestExecuteWritesTheLogFile(t *testing.T) {
	env := dataEnv(t)
	env["IGGY_SYSTEM_LOGGING_MAX_FILE_SIZE"] = "600 B"
	logged := func(ctx context.Context, boot Boot) error {
		for i := range 20 {
			boot.Logger.Info("node line", "i", i)
		}
		return nil
	}
	code, stderr := invoke(t, env, logged, "--with-default-root-credentials")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	dir := filepath.Join(env["IGGY_SYSTEM_PATH"], "logs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	archives := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 600 {
			t.Fatalf("%s is %d bytes, over max_file_size", e.Name(), len(b))
		}
		if e.Name() != "iggy-server.log" {
			archives++
		}
		all.Write(b)
	}
	if archives == 0 || !strings.Contains(all.String(), "msg=\"node line\" i=19") || !strings.Contains(stderr, "msg=\"node line\" i=19") {
		t.Fatalf("%d archives; file logs:\n%s", archives, all.String())
	}

	env = dataEnv(t)
	env["IGGY_SYSTEM_LOGGING_FILE_ENABLED"] = "false"
	if code, stderr := invoke(t, env, logged, "--with-default-root-credentials"); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(env["IGGY_SYSTEM_PATH"], "logs")); !os.IsNotExist(err) {
		t.Fatalf("file_enabled = false still created the log directory: %v", err)
	}
}
