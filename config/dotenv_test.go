package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithDotEnv(t *testing.T) {
	dir := t.TempDir()
	text := "# comment\n\nIGGY_TCP_ADDRESS=127.0.0.1:7777\nexport IGGY_SYSTEM_PATH=\"/data/x\"\nIGGY_HTTP_ENABLED=false # trailing\nIGGY_CLUSTER_NAME='from file'\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := WithDotEnv(Env{"IGGY_CLUSTER_NAME": "from process"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Env{"IGGY_TCP_ADDRESS": "127.0.0.1:7777", "IGGY_SYSTEM_PATH": "/data/x", "IGGY_HTTP_ENABLED": "false", "IGGY_CLUSTER_NAME": "from process"}
	for name, value := range want {
		if env[name] != value {
			t.Errorf("%s = %q, want %q", name, env[name], value)
		}
	}

	if env, err := WithDotEnv(Env{"A": "1"}, t.TempDir()); err != nil || len(env) != 1 {
		t.Errorf("absent .env in dir must be ignored: %v %v", env, err)
	}
	if _, err := WithDotEnv(Env{EnvPathEnv: filepath.Join(dir, "absent.env")}, dir); err == nil || !strings.Contains(err.Error(), "absent.env") {
		t.Errorf("missing IGGY_ENV_PATH file must be an error naming it, got %v", err)
	}
	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("JUST A LINE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WithDotEnv(Env{EnvPathEnv: bad}, dir); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed line must be an error naming it, got %v", err)
	}
}
