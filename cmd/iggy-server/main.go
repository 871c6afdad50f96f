// Command iggy-server is the Apache-Iggy-compatible, VSR-replicated
// message-streaming server. Flags, configuration and boot checks live in
// command.go and boot*.go; this file hands the checked boot to the node.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/lodestream/lodestream/httpapi"
	"github.com/lodestream/lodestream/node"
)

// gcPercentDefault replaces Go's GOGC=100 unless GOGC is set. The server's
// live heap is mostly the message bodies its consensus journals hold, and
// every produce frame is a new 1 MiB buffer. At GOGC=100 the heap grows to
// twice that before each collection, and between collections the runtime
// hands the freed half back to the kernel (its scavenger keeps about 1.1×
// the live heap), so the next frames are read into pages that fault in
// again, one 4 KiB page at a time: on the 2-core VM that was most of a
// backup's CPU (perf: memclr and the socket copy in page faults). At 20 the
// heap stays within what the scavenger keeps, and the collections, which
// mark few pointers in a heap of byte slices, cost far less than the faults
// did (BENCHMARKS.md, "GOGC 20").
const gcPercentDefault = 20

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercentDefault)
	}
	os.Exit(execute(os.Args[1:], runNode))
}

// runNode runs one node until ctx is cancelled (SIGINT/SIGTERM).
func runNode(ctx context.Context, boot Boot) error {
	opts := node.Options{
		Config:       boot.Config,
		ReplicaID:    boot.ReplicaID,
		RootUsername: boot.RootUsername,
		RootPassword: boot.RootPassword,
		Logger:       boot.Logger,
	}
	var metrics *httpapi.Metrics
	if boot.Config.HTTP.Enabled && boot.Config.HTTP.Metrics.Enabled {
		// Binary requests are counted only when someone can scrape them.
		metrics = httpapi.NewMetrics()
		opts.Requests = metrics
	}
	opts.HTTP = httpapi.Starter(metrics, boot.Logger)
	opts.OnWedged = exitAfterGrace(wedgedShutdownGrace, os.Exit, os.Stderr)
	return node.Run(ctx, opts)
}

// wedgedShutdownGrace is how long a node whose storage is wedged may take
// to shut down before the process exits without it.
const wedgedShutdownGrace = 10 * time.Second

// exitAfterGrace returns the node's OnWedged: storage is wedged, and the
// shutdown Run now begins may wait on it for ever (a write stuck in the
// kernel never returns). Unless Run returns first (and the process exits
// with its status), exit with ExitStorageWedged after grace.
func exitAfterGrace(grace time.Duration, exit func(int), stderr io.Writer) func(error) {
	return func(err error) {
		go func() {
			time.Sleep(grace)
			fmt.Fprintf(stderr, "iggy-server: %v; the shutdown did not finish within %s: exiting\n", err, grace)
			exit(node.ExitStorageWedged)
		}()
	}
}
