// Command iggy-bench is a load generator for Iggy-compatible servers: iggy-bench-style workloads
// (pinned and balanced producers/consumers) reporting msgs/s, MB/s and per-batch latency
// percentiles, with a live progress line on stderr and a text or JSON summary on stdout.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// gcPercentDefault replaces Go's 100 unless GOGC is set: every batch allocates a 1 MB frame and the
// live heap is small, so the default collects several times per second of load; 400 measured about
// 1.5x the sink round-trip rate on the 2-core machine (bench.BenchmarkProducerRoundTripToSink).
const gcPercentDefault = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercentDefault)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
