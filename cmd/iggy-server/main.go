// Command iggy-server is the Apache-Iggy-compatible, VSR-replicated
// message-streaming server. Flags, configuration and boot checks live in
// command.go and boot*.go; this file hands the checked boot to the node.
package main

import (
	"context"
	"os"

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
	return node.Run(ctx, opts)
}
