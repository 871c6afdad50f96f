package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
