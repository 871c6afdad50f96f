//go:build race

package nemesis

// raceEnabled: this test binary runs under the race detector (the
// servers it starts are plain builds: only the test process is checked).
const raceEnabled = true
