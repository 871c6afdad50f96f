package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvPathEnv names the variable pointing at a .env file to load.
const EnvPathEnv = "IGGY_ENV_PATH"

// dotEnvLinesMax bounds how many lines a .env file may hold.
const dotEnvLinesMax = 10000

// WithDotEnv returns env merged with a .env file, as upstream loads one at
// startup: the file named by IGGY_ENV_PATH (an error when it is missing), else
// ".env" in dir when present. Variables already in env win over the file.
func WithDotEnv(env Env, dir string) (Env, error) {
	path, explicit := env[EnvPathEnv], true
	if path == "" {
		path, explicit = filepath.Join(dir, ".env"), false
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && !explicit:
		return env, nil
	case err != nil:
		return nil, fmt.Errorf(".env file %s: %w", path, err)
	case info.IsDir():
		if !explicit {
			return env, nil
		}
		return nil, fmt.Errorf(".env file %s (from %s) is a directory", path, EnvPathEnv)
	case info.Size() > configFileBytesMax:
		return nil, fmt.Errorf(".env file %s is %d bytes; the limit is %d", path, info.Size(), configFileBytesMax)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf(".env file %s: %w", path, err)
	}
	fromFile, err := parseDotEnv(string(text))
	if err != nil {
		return nil, fmt.Errorf(".env file %s: %w", path, err)
	}
	merged := make(Env, len(env)+len(fromFile))
	for name, value := range fromFile {
		merged[name] = value
	}
	for name, value := range env {
		merged[name] = value
	}
	return merged, nil
}

// parseDotEnv reads NAME=value lines; blank lines and # comments are
// skipped, an "export " prefix is allowed, and a value may be wrapped in
// single or double quotes.
func parseDotEnv(text string) (Env, error) {
	env := Env{}
	lines := strings.Split(text, "\n")
	if len(lines) > dotEnvLinesMax {
		return nil, fmt.Errorf("%d lines; the limit is %d", len(lines), dotEnvLinesMax)
	}
	for number, line := range lines {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, found := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !found || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("line %d: expected NAME=value", number+1)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'') {
			value = value[1 : len(value)-1]
		} else if i := strings.Index(value, " #"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		env[name] = value
	}
	return env, nil
}
