package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points IGGY_HOME at a fresh directory so no test reads or writes the developer's
// ~/.iggy (contexts and stored tokens).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "iggy-cli-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(envIggyHome, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
