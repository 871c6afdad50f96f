// Command iggy-bench is a load generator for Iggy-compatible servers: iggy-bench-style workloads
// (pinned and balanced producers/consumers) reporting msgs/s, MB/s and per-batch latency
// percentiles, with a live progress line on stderr and a text or JSON summary on stdout.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
