//go:build race

package integration

// Under -race the server binary is built with the race detector too, so
// the tests exercise the server's own concurrency, not just the client's.
func init() { serverBuildFlags = append(serverBuildFlags, "-race") }
