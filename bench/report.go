package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// bytesPerMB is the decimal megabyte the MB/s figures use (as upstream iggy-bench and nats bench do).
const bytesPerMB = 1e6

// LatencySummary is a per-batch latency distribution in milliseconds.
type LatencySummary struct {
	Samples uint64  `json:"samples"`
	P50Ms   float64 `json:"p50_ms"`
	P90Ms   float64 `json:"p90_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
	MeanMs  float64 `json:"mean_ms"`
}

// Throughput is a count of messages and payload bytes over a span of seconds.
type Throughput struct {
	Messages          uint64         `json:"messages"`
	Bytes             uint64         `json:"bytes"`
	Seconds           float64        `json:"seconds"`
	MessagesPerSecond float64        `json:"messages_per_second"`
	MBPerSecond       float64        `json:"mb_per_second"`
	Latency           LatencySummary `json:"batch_latency"`
}

// KindSummary sums the actors of one kind (producers or consumers).
type KindSummary struct {
	Actors int `json:"actors"`
	Throughput
	EmptyPolls uint64 `json:"empty_polls,omitempty"`
}

// ActorSummary is one actor's share.
type ActorSummary struct {
	Kind    string   `json:"kind"`
	Index   int      `json:"index"`
	Streams []string `json:"streams"`
	Throughput
	EmptyPolls uint64 `json:"empty_polls,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Params echoes the run's settings.
type Params struct {
	Producers         int     `json:"producers"`
	Consumers         int     `json:"consumers"`
	Streams           int     `json:"streams"`
	Partitions        int     `json:"partitions"`
	MessageSizeBytes  int     `json:"message_size_bytes"`
	MessagesPerBatch  int     `json:"messages_per_batch"`
	MessageBatches    int     `json:"message_batches_per_producer"`
	RateLimitMBps     float64 `json:"rate_limit_mb_per_second"`
	Durability        string  `json:"durability"`
	WarmupSeconds     float64 `json:"warmup_seconds"`
	DurationMaxSecond float64 `json:"duration_max_seconds"`
	Verify            bool    `json:"verify"`
}

// Summary is the result of a run; it is printed as text or JSON.
type Summary struct {
	Tool           string         `json:"tool"`
	Workload       Workload       `json:"workload"`
	Address        string         `json:"address"`
	Transport      string         `json:"transport"`
	Params         Params         `json:"params"`
	StartedAt      time.Time      `json:"started_at"`
	ElapsedSeconds float64        `json:"elapsed_seconds"`
	WarmupApplied  bool           `json:"warmup_applied"`
	Complete       bool           `json:"complete"`
	StopReason     string         `json:"stop_reason,omitempty"`
	Producers      *KindSummary   `json:"producers,omitempty"`
	Consumers      *KindSummary   `json:"consumers,omitempty"`
	Aggregate      Throughput     `json:"aggregate"`
	Actors         []ActorSummary `json:"actors"`
	Errors         []string       `json:"errors,omitempty"`
}

func latencySummary(h *Histogram) LatencySummary {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return LatencySummary{
		Samples: h.Count(),
		P50Ms:   ms(h.Percentile(0.50)),
		P90Ms:   ms(h.Percentile(0.90)),
		P99Ms:   ms(h.Percentile(0.99)),
		P999Ms:  ms(h.Percentile(0.999)),
		MaxMs:   ms(h.Max()),
		MeanMs:  ms(h.Mean()),
	}
}

func throughput(messages, bytes uint64, span time.Duration, h *Histogram) Throughput {
	t := Throughput{Messages: messages, Bytes: bytes, Seconds: span.Seconds(), Latency: latencySummary(h)}
	if span > 0 {
		t.MessagesPerSecond = float64(messages) / span.Seconds()
		t.MBPerSecond = float64(bytes) / bytesPerMB / span.Seconds()
	}
	return t
}

// summarize folds actor results into a Summary. It uses the post-warm-up windows when every kind
// that completed batches has some after the warm-up; otherwise the whole run (WarmupApplied false).
func summarize(cfg *Config, results []actorResult, started time.Time, elapsed time.Duration) Summary {
	s := Summary{
		Tool: "iggy-bench", Workload: cfg.Workload, Address: cfg.Address, Transport: string(cfg.Transport), StartedAt: started.UTC(),
		ElapsedSeconds: elapsed.Seconds(), Complete: true,
		Params: Params{
			Producers: cfg.Producers, Consumers: cfg.Consumers, Streams: cfg.Streams, Partitions: cfg.Partitions,
			MessageSizeBytes: cfg.MessageSizeBytes, MessagesPerBatch: cfg.MessagesPerBatch,
			MessageBatches: cfg.MessageBatches, RateLimitMBps: cfg.RateLimitMBps, Durability: cfg.Durability,
			WarmupSeconds: cfg.Warmup.Seconds(), DurationMaxSecond: cfg.DurationMax.Seconds(), Verify: cfg.Verify,
		},
		Actors: []ActorSummary{},
	}
	s.WarmupApplied = cfg.Warmup > 0
	for _, kind := range []string{actorKindProducer, actorKindConsumer} {
		var all, measured uint64
		for i := range results {
			if results[i].Kind == kind {
				all += results[i].all.Latency.Count()
				measured += results[i].measured.Latency.Count()
			}
		}
		if all > 0 && measured == 0 {
			s.WarmupApplied = false
		}
	}
	pick := func(r *actorResult) *window {
		if s.WarmupApplied {
			return &r.measured
		}
		return &r.all
	}
	var aggregateLatency Histogram
	for _, kind := range []string{actorKindProducer, actorKindConsumer} {
		var ks KindSummary
		var latency Histogram
		var first, last time.Time
		var messages, bytes uint64
		for i := range results {
			r := &results[i]
			if r.Kind != kind {
				continue
			}
			w := pick(r)
			ks.Actors++
			ks.EmptyPolls += r.EmptyPolls
			messages += w.Messages
			bytes += w.Bytes
			latency.Merge(&w.Latency)
			if w.Latency.Count() > 0 {
				if first.IsZero() || w.First.Before(first) {
					first = w.First
				}
				if w.Last.After(last) {
					last = w.Last
				}
			}
			a := ActorSummary{Kind: kind, Index: r.Index, Streams: r.Streams, EmptyPolls: r.EmptyPolls,
				Throughput: throughput(w.Messages, w.Bytes, w.Last.Sub(w.First), &w.Latency)}
			if r.Err != nil {
				a.Error = r.Err.Error()
				s.Errors = append(s.Errors, r.Err.Error())
			}
			s.Actors = append(s.Actors, a)
		}
		if ks.Actors == 0 {
			continue
		}
		ks.Throughput = throughput(messages, bytes, last.Sub(first), &latency)
		aggregateLatency.Merge(&latency)
		s.Aggregate.Messages += ks.Messages
		s.Aggregate.Bytes += ks.Bytes
		s.Aggregate.MessagesPerSecond += ks.MessagesPerSecond
		s.Aggregate.MBPerSecond += ks.MBPerSecond
		s.Aggregate.Seconds = max(s.Aggregate.Seconds, ks.Seconds)
		if kind == actorKindProducer {
			s.Producers = &ks
		} else {
			s.Consumers = &ks
		}
	}
	s.Aggregate.Latency = latencySummary(&aggregateLatency)
	return s
}

// WriteJSON prints the summary as one indented JSON document.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write JSON summary: %w", err)
	}
	return nil
}

// WriteText prints the human summary.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	p := s.Params
	fmt.Fprintf(&b, "iggy-bench %s against %s over %s\n", s.Workload, s.Address, s.Transport)
	rate := "unlimited"
	if p.RateLimitMBps > 0 {
		rate = fmt.Sprintf("%.1f MB/s", p.RateLimitMBps)
	}
	batches := "reading what is stored"
	if p.Producers > 0 {
		batches = fmt.Sprintf("%d batches/producer", p.MessageBatches)
	}
	fmt.Fprintf(&b, "  %d producers, %d consumers, %d streams x %d partitions, %d-byte messages, %d messages/batch, "+
		"%s, durability=%s, rate limit %s\n", p.Producers, p.Consumers, p.Streams, p.Partitions,
		p.MessageSizeBytes, p.MessagesPerBatch, batches, p.Durability, rate)
	warm := fmt.Sprintf("warm-up %.1f s not applied (the run ended inside it): figures cover the whole run", p.WarmupSeconds)
	switch {
	case p.WarmupSeconds == 0:
		warm = "no warm-up"
	case s.WarmupApplied:
		warm = fmt.Sprintf("warm-up %.1f s excluded from the figures", p.WarmupSeconds)
	}
	fmt.Fprintf(&b, "  elapsed %.2f s, %s\n", s.ElapsedSeconds, warm)
	if !s.Complete {
		fmt.Fprintf(&b, "  INCOMPLETE: %s\n", s.StopReason)
	}
	line := func(label string, t Throughput) {
		l := t.Latency
		fmt.Fprintf(&b, "  %-9s %11d msgs %10.1f MB in %7.2f s: %12.0f msg/s %9.2f MB/s | batch latency ms p50 %.3f p90 %.3f p99 %.3f p999 %.3f max %.3f\n",
			label, t.Messages, float64(t.Bytes)/bytesPerMB, t.Seconds, t.MessagesPerSecond, t.MBPerSecond,
			l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs)
	}
	if s.Producers != nil {
		line("producers", s.Producers.Throughput)
	}
	if s.Consumers != nil {
		line("consumers", s.Consumers.Throughput)
		if s.Consumers.EmptyPolls > 0 {
			fmt.Fprintf(&b, "            (%d empty polls)\n", s.Consumers.EmptyPolls)
		}
	}
	line("aggregate", s.Aggregate)
	for _, a := range s.Actors {
		line(fmt.Sprintf("%s %d", a.Kind[:4], a.Index), a.Throughput)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
