package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// fakeResult builds an actor that completed batches of 1000 messages / 1 MB every 100 ms with a fixed
// latency, from start for span.
func fakeResult(kind string, index int, rec recorder, span, latency time.Duration) actorResult {
	r := actorResult{Kind: kind, Index: index, Streams: []string{StreamName(index)}}
	for at := rec.runStart.Add(100 * time.Millisecond); !at.After(rec.runStart.Add(span)); at = at.Add(100 * time.Millisecond) {
		rec.record(&r, at, latency, 1000, 1_000_000)
	}
	return r
}

func TestSummaryRatesAndWarmup(t *testing.T) {
	cfg := DefaultConfig(PinnedProducerAndConsumer)
	cfg.Producers, cfg.Consumers, cfg.Warmup = 2, 1, time.Second
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	rec := recorder{runStart: start, warmupEnd: start.Add(cfg.Warmup)}
	results := []actorResult{
		fakeResult(actorKindProducer, 0, rec, 3*time.Second, 2*time.Millisecond),
		fakeResult(actorKindProducer, 1, rec, 3*time.Second, 4*time.Millisecond),
		fakeResult(actorKindConsumer, 0, rec, 3*time.Second, time.Millisecond),
	}
	s := summarize(&cfg, results, start, 3*time.Second)
	if !s.WarmupApplied {
		t.Fatal("warm-up not applied though every kind has batches after it")
	}
	// After the 1 s warm-up: batches at 1.0 .. 3.0 s = 21 per actor over a 2 s window.
	p := s.Producers
	if p == nil || p.Actors != 2 || p.Messages != 42_000 || p.Bytes != 42_000_000 {
		t.Fatalf("producers = %+v, want 2 actors, 42000 messages, 42 MB", p)
	}
	if math.Abs(p.MBPerSecond-21) > 1e-9 || math.Abs(p.MessagesPerSecond-21_000) > 1e-6 {
		t.Errorf("producer rates %.3f MB/s %.1f msg/s, want 21 MB/s and 21000 msg/s", p.MBPerSecond, p.MessagesPerSecond)
	}
	// Percentiles are bucket values (≤ 0.8 % high); the max is exact.
	if math.Abs(p.Latency.P50Ms-2) > 0.02 || p.Latency.P99Ms != 4 || p.Latency.MaxMs != 4 || p.Latency.Samples != 42 {
		t.Errorf("producer latency %+v, want p50 ≈2 ms, p99 4 ms, max 4 ms over 42 samples", p.Latency)
	}
	if math.Abs(s.Aggregate.MBPerSecond-31.5) > 1e-9 || s.Aggregate.Messages != 63_000 {
		t.Errorf("aggregate %.3f MB/s %d messages, want 31.5 MB/s and 63000", s.Aggregate.MBPerSecond, s.Aggregate.Messages)
	}
	if len(s.Actors) != 3 || math.Abs(s.Actors[0].MBPerSecond-10.5) > 1e-9 {
		t.Errorf("actors %+v, want 3 with producer 0 at 10.5 MB/s", s.Actors)
	}

	// A run that ends inside the warm-up reports the whole run instead of nothing.
	short := []actorResult{fakeResult(actorKindProducer, 0, rec, 500*time.Millisecond, time.Millisecond)}
	s = summarize(&cfg, short, start, 500*time.Millisecond)
	if s.WarmupApplied || s.Producers.Messages != 5000 {
		t.Errorf("short run: warm-up applied %v, %d messages; want false and 5000", s.WarmupApplied, s.Producers.Messages)
	}
}

func TestSummaryJSONShape(t *testing.T) {
	cfg := DefaultConfig(BalancedProducerAndConsumer)
	cfg.Warmup = 0
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	rec := recorder{runStart: start, warmupEnd: start}
	failed := fakeResult(actorKindConsumer, 0, rec, time.Second, time.Millisecond)
	failed.Err = errors.New("boom")
	failed.EmptyPolls = 3
	results := []actorResult{fakeResult(actorKindProducer, 0, rec, time.Second, time.Millisecond), failed}
	s := summarize(&cfg, results, start, time.Second)
	var buf bytes.Buffer
	if err := s.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, buf.String())
	}
	for _, key := range []string{"tool", "workload", "address", "params", "started_at", "elapsed_seconds",
		"warmup_applied", "complete", "producers", "consumers", "aggregate", "actors", "errors"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON lacks %q:\n%s", key, buf.String())
		}
	}
	if doc["workload"] != "balanced-producer-and-consumer" {
		t.Errorf("workload = %v", doc["workload"])
	}
	producers := doc["producers"].(map[string]any)
	for _, key := range []string{"actors", "messages", "bytes", "seconds", "messages_per_second", "mb_per_second", "batch_latency"} {
		if _, ok := producers[key]; !ok {
			t.Errorf("producers lacks %q", key)
		}
	}
	latency := producers["batch_latency"].(map[string]any)
	for _, key := range []string{"samples", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms"} {
		if _, ok := latency[key]; !ok {
			t.Errorf("batch_latency lacks %q", key)
		}
	}
	params := doc["params"].(map[string]any)
	if params["partitions"] != float64(DefaultBalancedPartitions) || params["durability"] != "replicated" {
		t.Errorf("params = %v", params)
	}
	actors := doc["actors"].([]any)
	if len(actors) != 2 || actors[1].(map[string]any)["error"] != "boom" || actors[1].(map[string]any)["empty_polls"] != float64(3) {
		t.Errorf("actors = %v, want the consumer's error and empty polls", actors)
	}
	// The text form names every kind and the error.
	buf.Reset()
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"producers", "consumers", "aggregate", "p999", "error: boom"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestProgressLineTerminalAndPlain(t *testing.T) {
	live := &liveCounters{}
	start := time.Unix(100, 0)
	var plain, term bytes.Buffer
	p := newProgress(&plain, false, live, start)
	q := newProgress(&term, true, live, start)
	live.producedBytes.Store(50_000_000)
	live.producedMessages.Store(50_000)
	p.tick(start.Add(time.Second))
	q.tick(start.Add(time.Second))
	live.producedBytes.Store(150_000_000)
	p.tick(start.Add(2 * time.Second))
	q.tick(start.Add(2 * time.Second))
	q.finish()
	lines := strings.Split(strings.TrimSpace(plain.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "100.0 MB/s now") || !strings.Contains(lines[1], "75.0 MB/s avg") {
		t.Errorf("plain progress:\n%s\nwant two lines, the second at 100 MB/s now and 75 MB/s avg", plain.String())
	}
	if strings.Count(term.String(), "\r") != 2 || !strings.HasSuffix(term.String(), "\n") {
		t.Errorf("terminal progress %q: want two \\r rewrites and a final newline", term.String())
	}
}
