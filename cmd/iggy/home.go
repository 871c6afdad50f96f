package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The CLI's home directory holds named contexts and stored tokens, as upstream's: $IGGY_HOME, or
// ~/.iggy when IGGY_HOME is unset.
const (
	envIggyHome        = "IGGY_HOME"
	defaultIggyHomeDir = ".iggy"
)

// errNoHome is returned when neither IGGY_HOME nor HOME is set: nothing can be stored.
var errNoHome = errors.New("no iggy home directory: set IGGY_HOME (or HOME)")

// iggyHome returns the home directory, or "" when neither variable is set.
func (a *app) iggyHome() string {
	if h := a.getenv(envIggyHome); h != "" {
		return h
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, defaultIggyHomeDir)
	}
	return ""
}

// homeFile returns the path of name in the home directory, creating the directory (0700) when
// create is true.
func (a *app) homeFile(name string, create bool) (string, error) {
	home := a.iggyHome()
	if home == "" {
		return "", errNoHome
	}
	if create {
		if err := os.MkdirAll(home, 0o700); err != nil {
			return "", fmt.Errorf("create iggy home directory %s: %w", home, err)
		}
	}
	return filepath.Join(home, name), nil
}

// writePrivateFile replaces path with data, readable by the owner only, through a temporary
// file and a rename so a crash never leaves half a file.
func writePrivateFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
