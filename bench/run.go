package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/lodestream/lodestream/client"
)

// cleanupTimeout bounds deleting the bench streams after the run (also after Ctrl-C).
const cleanupTimeout = 30 * time.Second

// Output tells Run where the live progress line goes.
type Output struct {
	Progress         io.Writer // nil: no progress line
	ProgressTerminal bool      // rewrite the line in place with \r
	Logger           *slog.Logger
}

// Run executes one benchmark: normalise cfg, set up streams, run actors until they finish, hit
// cfg.DurationMax or ctx ends (Ctrl-C), delete the streams unless cfg.Keep, and return the summary.
// A Summary is returned alongside an actor error so partial figures can still be shown; setup
// failures return no summary.
func Run(ctx context.Context, cfg Config, out Output) (*Summary, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	logger := out.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	admin, err := connect(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer admin.Close()

	var streams []streamRef
	if cfg.Workload.Produces() {
		streams, err = createStreams(ctx, admin, &cfg)
		if !cfg.Keep {
			defer func() {
				cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
				defer cancel()
				if err := deleteStreams(cleanupCtx, admin, streams); err != nil {
					logger.Warn("bench streams were not all deleted", "err", err)
				}
			}()
		}
	} else {
		streams, err = findStreams(ctx, admin, &cfg)
	}
	if err != nil {
		return nil, err
	}

	var producers []producerPlan
	var perStream []uint64
	if cfg.Workload.Produces() {
		producers = planProducers(&cfg, streams)
		perStream = producedPerStream(&cfg, producers, len(streams))
	}
	var consumers []consumerPlan
	if cfg.Workload.Consumes() {
		consumers = planConsumers(&cfg, streams, perStream)
	}

	conns, err := connectActors(ctx, &cfg, len(producers)+len(consumers))
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	runCtx, cancel := context.WithTimeout(ctx, cfg.DurationMax)
	defer cancel()
	live := &liveCounters{}
	started := time.Now()
	rec := recorder{runStart: started, warmupEnd: started.Add(cfg.Warmup)}
	var batchInterval time.Duration
	if cfg.RateLimitMBps > 0 && len(producers) > 0 {
		perProducerBytesPerSecond := cfg.RateLimitMBps * bytesPerMB / float64(len(producers))
		batchInterval = time.Duration(float64(cfg.BatchPayloadBytes()) / perProducerBytesPerSecond * float64(time.Second))
	}

	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	if out.Progress != nil {
		p := newProgress(out.Progress, out.ProgressTerminal, live, started)
		go func() { defer close(progressDone); p.run(stopProgress) }()
	} else {
		close(progressDone)
	}

	results := make([]actorResult, len(producers)+len(consumers))
	var wg sync.WaitGroup
	for i, plan := range producers {
		wg.Go(func() {
			results[i] = runProducer(runCtx, conns[i], &cfg, streams[plan.Stream], plan, rec, batchInterval, live)
			if results[i].Err != nil {
				cancel() // fail fast: consumers would otherwise wait for messages that never come
			}
		})
	}
	for j, plan := range consumers {
		k := len(producers) + j
		wg.Go(func() {
			results[k] = runConsumer(runCtx, conns[k], &cfg, streams, plan, rec, live)
			if results[k].Err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(started)
	close(stopProgress)
	<-progressDone

	summary := summarize(&cfg, results, started, elapsed)
	switch {
	case ctx.Err() != nil:
		summary.Complete, summary.StopReason = false, "interrupted"
	case len(summary.Errors) > 0:
		summary.Complete, summary.StopReason = false, "an actor failed; the others were stopped"
	case runCtx.Err() != nil:
		summary.Complete, summary.StopReason = false, fmt.Sprintf("--duration-max %s reached", cfg.DurationMax)
	}
	if len(summary.Errors) > 0 {
		return &summary, fmt.Errorf("%d of %d actors failed; first: %s", len(summary.Errors), len(results), summary.Errors[0])
	}
	return &summary, nil
}

// connectActors opens one signed-in connection per actor; on failure it closes what it opened.
func connectActors(ctx context.Context, cfg *Config, n int) ([]*client.Client, error) {
	conns := make([]*client.Client, 0, n)
	for range n {
		c, err := connect(ctx, cfg)
		if err != nil {
			for _, open := range conns {
				open.Close()
			}
			return nil, errors.Join(fmt.Errorf("connect actor %d of %d", len(conns)+1, n), err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}
