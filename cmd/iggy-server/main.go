// Command iggy-server is the Apache-Iggy-compatible, VSR-replicated
// message-streaming server. Flags, configuration and boot checks live in
// command.go and boot*.go; this file hands the checked boot to the node.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lodestream/lodestream/httpapi"
	"github.com/lodestream/lodestream/node"
)

func main() { os.Exit(execute(os.Args[1:], runNode)) }

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
