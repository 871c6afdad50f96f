package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

func tinyConfig(w Workload, addr string) Config {
	cfg := DefaultConfig(w)
	cfg.Address = addr
	cfg.Producers, cfg.Consumers = 3, 3
	cfg.MessageSizeBytes, cfg.MessagesPerBatch, cfg.MessageBatches = 100, 10, 20
	cfg.Warmup = 0
	cfg.DurationMax = 20 * time.Second
	return cfg
}

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (s *fakeServer) streamCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

func TestRunPinnedProducerAndConsumer(t *testing.T) {
	srv := newFakeServer(t)
	var progress bytes.Buffer
	cfg := tinyConfig(PinnedProducerAndConsumer, srv.addr())
	cfg.Durability = DurabilityPersisted
	cfg.Verify = true
	s, err := Run(runCtx(t), cfg, Output{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if s.Producers.Messages != 600 || s.Consumers.Messages != 600 || s.Producers.Bytes != 60_000 || s.Consumers.Bytes != 60_000 {
		t.Fatalf("produced %d msgs/%d B, consumed %d msgs/%d B; want 600/60000 each", s.Producers.Messages,
			s.Producers.Bytes, s.Consumers.Messages, s.Consumers.Bytes)
	}
	if s.Producers.Latency.Samples != 60 || !s.Complete || s.Params.Streams != 3 {
		t.Errorf("samples %d, complete %v, streams %d; want 60, true, 3", s.Producers.Latency.Samples, s.Complete, s.Params.Streams)
	}
	for _, a := range s.Actors {
		if len(a.Streams) != 1 || a.Streams[0] != StreamName(a.Index) || a.Messages != 200 {
			t.Errorf("%s %d: streams %v, %d messages; want only %s and 200", a.Kind, a.Index, a.Streams, a.Messages, StreamName(a.Index))
		}
	}
	if srv.streamCount() != 0 {
		t.Errorf("%d streams left after a run without --keep", srv.streamCount())
	}
	srv.mu.Lock()
	sends := srv.sends
	srv.mu.Unlock()
	if sends != 60 {
		t.Errorf("server saw %d SendMessages, want 60", sends)
	}
}

func TestRunBalancedProducerAndConsumer(t *testing.T) {
	srv := newFakeServer(t)
	cfg := tinyConfig(BalancedProducerAndConsumer, srv.addr())
	cfg.Partitions, cfg.Consumers = 4, 2
	s, err := Run(runCtx(t), cfg, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Producers.Messages != 600 || s.Consumers.Messages != 600 {
		t.Fatalf("produced %d, consumed %d; want 600 each", s.Producers.Messages, s.Consumers.Messages)
	}
}

func TestRunKeepThenConsumeStored(t *testing.T) {
	srv := newFakeServer(t)
	cfg := tinyConfig(PinnedProducer, srv.addr())
	cfg.Keep = true
	if _, err := Run(runCtx(t), cfg, Output{}); err != nil {
		t.Fatal(err)
	}
	if srv.streamCount() != 3 {
		t.Fatalf("--keep left %d streams, want 3", srv.streamCount())
	}
	if _, err := Run(runCtx(t), cfg, Output{}); err == nil || !strings.Contains(err.Error(), "--recreate") {
		t.Errorf("a second producer run over kept streams: %v, want a refusal naming --recreate", err)
	}
	consume := tinyConfig(PinnedConsumer, srv.addr())
	s, err := Run(runCtx(t), consume, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Consumers.Messages != 600 || s.Producers != nil {
		t.Fatalf("pinned-consumer read %d of 600 stored", s.Consumers.Messages)
	}
	missing := tinyConfig(PinnedConsumer, srv.addr())
	missing.Consumers = 5 // bench-4 and bench-5 do not exist
	if _, err := Run(runCtx(t), missing, Output{}); err == nil || !strings.Contains(err.Error(), `"bench-4" does not exist`) {
		t.Errorf("consumer over missing streams: %v", err)
	}
	cfg.Recreate = true
	if _, err := Run(runCtx(t), cfg, Output{}); err != nil {
		t.Errorf("--recreate over kept streams: %v", err)
	}
}

func TestRunStopsAtDurationMax(t *testing.T) {
	srv := newFakeServer(t)
	srv.sendDelay = 20 * time.Millisecond
	cfg := tinyConfig(PinnedProducerAndConsumer, srv.addr())
	cfg.MessageBatches = 10_000
	cfg.DurationMax = 300 * time.Millisecond
	started := time.Now()
	s, err := Run(runCtx(t), cfg, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("run took %s with --duration-max 300ms", took)
	}
	if s.Complete || !strings.Contains(s.StopReason, "--duration-max") || s.Producers.Messages == 0 {
		t.Errorf("complete %v, reason %q, produced %d; want an incomplete run that did some work", s.Complete,
			s.StopReason, s.Producers.Messages)
	}
	if srv.streamCount() != 0 {
		t.Errorf("%d streams left after a stopped run", srv.streamCount())
	}
}

func TestRunInterruptedCleansUp(t *testing.T) {
	srv := newFakeServer(t)
	srv.sendDelay = 20 * time.Millisecond
	cfg := tinyConfig(BalancedProducerAndConsumer, srv.addr())
	cfg.MessageBatches = 10_000
	ctx, cancel := context.WithCancel(runCtx(t))
	time.AfterFunc(300*time.Millisecond, cancel)
	s, err := Run(ctx, cfg, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Complete || s.StopReason != "interrupted" {
		t.Errorf("complete %v, reason %q; want interrupted", s.Complete, s.StopReason)
	}
	if srv.streamCount() != 0 {
		t.Errorf("%d streams left after Ctrl-C", srv.streamCount())
	}
}

func TestRunRateLimit(t *testing.T) {
	srv := newFakeServer(t)
	cfg := tinyConfig(PinnedProducer, srv.addr())
	cfg.Producers, cfg.MessageBatches = 2, 6
	// Batches of 1000 payload bytes at 0.02 MB/s over 2 producers: 10 batches/s each, 6 batches ≈ 0.5 s.
	cfg.RateLimitMBps = 0.02
	started := time.Now()
	s, err := Run(runCtx(t), cfg, Output{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took < 450*time.Millisecond {
		t.Errorf("rate-limited run took %s, want ≥ 0.5 s", took)
	}
	if s.Producers.MBPerSecond > 0.03 {
		t.Errorf("rate-limited producers reached %.4f MB/s, limit 0.02", s.Producers.MBPerSecond)
	}
}

func TestRunFailsFastWhenAnActorFails(t *testing.T) {
	srv := newFakeServer(t)
	srv.sendStatus, srv.failSendAfter = wire.ErrInvalidMessagesCount, 5
	cfg := tinyConfig(PinnedProducerAndConsumer, srv.addr())
	cfg.MessageBatches = 1000
	started := time.Now()
	s, err := Run(runCtx(t), cfg, Output{})
	if err == nil || !strings.Contains(err.Error(), "InvalidMessagesCount") {
		t.Fatalf("Run = %v, want the producer's InvalidMessagesCount", err)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("a failed producer left the run going for %s", took)
	}
	if s == nil || s.Complete || !strings.Contains(s.StopReason, "actor failed") {
		t.Fatalf("summary %+v, want an incomplete run naming the failure", s)
	}
	for _, a := range s.Actors {
		if a.Kind == actorKindConsumer && a.Error != "" {
			t.Errorf("consumer %d reported %q; stopped consumers must not report errors", a.Index, a.Error)
		}
	}
	if srv.streamCount() != 0 {
		t.Errorf("%d streams left after a failed run", srv.streamCount())
	}
}

func TestRunReportsRefusedDurability(t *testing.T) {
	srv := newFakeServer(t)
	srv.refuseDurability = true
	cfg := tinyConfig(PinnedProducer, srv.addr())
	cfg.Durability = DurabilityPersisted
	_, err := Run(runCtx(t), cfg, Output{})
	if !errors.Is(err, ErrDurabilityUnsupported) || !strings.Contains(err.Error(), "durability=persisted") {
		t.Fatalf("Run = %v, want ErrDurabilityUnsupported naming durability=persisted", err)
	}
	if srv.streamCount() != 0 {
		t.Errorf("%d streams left after the refused topic", srv.streamCount())
	}
}
