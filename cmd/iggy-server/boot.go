package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/logfile"
)

// withDefaultRootCredentials fills IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD
// with "iggy" where unset, so exported values keep winning over the flag.
func withDefaultRootCredentials(env config.Env) config.Env {
	filled := make(config.Env, len(env)+2)
	for name, value := range env {
		filled[name] = value
	}
	for _, name := range []string{config.RootUsernameEnv, config.RootPasswordEnv} {
		if filled[name] == "" {
			filled[name] = config.DefaultRootUsername
		}
	}
	return filled
}

// bootInput gathers CheckBoot's inputs. An empty root variable counts as
// unset, like every other IGGY_* variable.
func bootInput(env config.Env, parsed flags, metadataExists bool) config.BootInput {
	username, password := env[config.RootUsernameEnv], env[config.RootPasswordEnv]
	return config.BootInput{
		ReplicaID:          parsed.replicaID,
		ReplicaIDSet:       parsed.replicaIDSet,
		RootUsername:       username,
		RootUsernameSet:    username != "",
		RootPassword:       password,
		RootPasswordSet:    password != "",
		MetadataExists:     metadataExists,
		UnservedTransports: unservedTransports,
	}
}

// wipeSystemPath implements --fresh: delete system.path and nothing else.
// It refuses paths whose removal would take the filesystem root, the current
// directory or one of its ancestors with it. remove is os.RemoveAll outside
// tests.
func wipeSystemPath(systemPath string, remove func(string) error) error {
	if strings.TrimSpace(systemPath) == "" {
		return fmt.Errorf("--fresh: system.path is empty; refusing to delete")
	}
	target, err := filepath.Abs(systemPath)
	if err != nil {
		return fmt.Errorf("--fresh: resolving system.path %q: %w", systemPath, err)
	}
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		target = resolved
	}
	if target == filepath.Dir(target) {
		return fmt.Errorf("--fresh: system.path %q resolves to the filesystem root %q; refusing to delete", systemPath, target)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("--fresh: reading the current directory: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = resolved
	}
	if rel, err := filepath.Rel(target, cwd); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return fmt.Errorf("--fresh: system.path %q resolves to %q, which is the current directory or contains it; refusing to delete", systemPath, target)
	}
	if err := remove(target); err != nil {
		return fmt.Errorf("--fresh: deleting system.path %q: %w", target, err)
	}
	return nil
}

// newLogger builds the stderr text logger at system.logging.level (info
// when the level does not parse; Validate refuses such a configuration).
func newLogger(w io.Writer, level string) *slog.Logger {
	parsed, err := config.ParseLogLevel(level)
	if err != nil {
		parsed = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: parsed}))
}

// logDir is where system.logging writes: system.logging.path under
// system.path, or the path itself when absolute (as upstream).
func logDir(cfg *config.Config) string {
	if filepath.IsAbs(cfg.System.Logging.Path) {
		return cfg.System.Logging.Path
	}
	return filepath.Join(cfg.System.Path, cfg.System.Logging.Path)
}

// openLogFile opens the rotating log file of [system.logging]; rotation and
// cleanup failures are reported on stderr (the log cannot log about itself).
func openLogFile(cfg *config.Config, stderr io.Writer) (*logfile.Writer, error) {
	l := cfg.System.Logging
	w, err := logfile.Open(logfile.Config{
		Dir:           logDir(cfg),
		MaxFileSize:   l.MaxFileSize.Bytes(),
		MaxTotalSize:  l.MaxTotalSize.Bytes(),
		Retention:     l.Retention.Duration,
		CheckInterval: l.RotationCheckInterval.Duration,
		OnError:       func(err error) { fmt.Fprintf(stderr, "iggy-server: %v\n", err) },
	})
	if err != nil {
		return nil, fmt.Errorf("system.logging.file_enabled = true: %w", err)
	}
	return w, nil
}

// rootPasswordAlphabet avoids characters that need quoting in shells.
const rootPasswordAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// generateRootPassword returns a random password of 20..39 characters, as
// upstream generates for a single node started without root credentials.
func generateRootPassword() (string, error) {
	extra, err := rand.Int(rand.Reader, big.NewInt(20))
	if err != nil {
		return "", err
	}
	length := 20 + int(extra.Int64())
	var b strings.Builder
	for range length {
		index, err := rand.Int(rand.Reader, big.NewInt(int64(len(rootPasswordAlphabet))))
		if err != nil {
			return "", err
		}
		b.WriteByte(rootPasswordAlphabet[index.Int64()])
	}
	return b.String(), nil
}
