//go:build race

package node

// raceEnabled: built with -race. The whole-node simulator runs in one
// goroutine, so its long tests skip under -race (make test runs them
// without it too).
const raceEnabled = true
