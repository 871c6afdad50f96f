// Command iggy-server is the Apache-Iggy-compatible, VSR-replicated
// message-streaming server. Flags, configuration and boot checks live in
// command.go and boot*.go; this file hands the checked boot to the node.
package main

import (
	"context"
	"os"

	"github.com/lodestream/lodestream/node"
)

func main() { os.Exit(execute(os.Args[1:], runNode)) }

// runNode runs one node until ctx is cancelled (SIGINT/SIGTERM).
func runNode(ctx context.Context, boot Boot) error {
	return node.Run(ctx, node.Options{
		Config:       boot.Config,
		ReplicaID:    boot.ReplicaID,
		RootUsername: boot.RootUsername,
		RootPassword: boot.RootPassword,
		Logger:       boot.Logger,
	})
}
