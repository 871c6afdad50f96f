package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

const (
	// transientRetriesMax bounds replays of TransientNotCommitted/NotAccepted for one batch.
	transientRetriesMax   = 200
	transientRetryPause   = 10 * time.Millisecond
	emptyPollPauseMin     = 500 * time.Microsecond
	emptyPollPauseMax     = 20 * time.Millisecond
	actorKindProducer     = "producer"
	actorKindConsumer     = "consumer"
	rateLimitCatchUpMax   = 4 // batches a paced producer may send back to back after falling behind
	consumerIDBase        = 1 // single consumers are numbered from 1
	pollRepliesPrefixSize = wire.PollMessagesReplyPrefixSize
)

// liveCounters are the totals the progress line reads while actors run.
type liveCounters struct {
	producedMessages atomic.Uint64
	producedBytes    atomic.Uint64
	consumedMessages atomic.Uint64
	consumedBytes    atomic.Uint64
}

// actorResult is what one actor did. Bytes count message payload only.
type actorResult struct {
	Kind       string
	Index      int
	Streams    []string
	all        window
	measured   window
	EmptyPolls uint64
	Err        error
}

// window accumulates completed batches over a span of time.
type window struct {
	Messages uint64
	Bytes    uint64
	First    time.Time // start of the window (run start or warm-up end)
	Last     time.Time // completion of the last batch
	Latency  Histogram
}

func (w *window) add(start, done time.Time, latency time.Duration, messages, bytes uint64) {
	if w.Latency.Count() == 0 && w.First.IsZero() {
		w.First = start
	}
	w.Messages += messages
	w.Bytes += bytes
	w.Last = done
	w.Latency.Record(latency)
}

// recorder splits samples into the whole run and the post-warm-up window.
type recorder struct {
	runStart  time.Time
	warmupEnd time.Time
}

func (r recorder) record(res *actorResult, done time.Time, latency time.Duration, messages, bytes uint64) {
	res.all.add(r.runStart, done, latency, messages, bytes)
	if !done.Before(r.warmupEnd) {
		res.measured.add(r.warmupEnd, done, latency, messages, bytes)
	}
}

// exchange sends one pre-encoded request frame (wire.HeaderSize bytes the client stamps, then the
// body) and returns the reply payload, read into *replyBuf (reused across calls; the payload aliases
// it), replaying transient rejections a bounded number of times. Any other non-OK status or result
// is an error.
func exchange(ctx context.Context, c *client.Client, code wire.CommandCode, frame []byte, replyBuf *[]byte) ([]byte, error) {
	op, _ := code.Operation()
	for attempt := 1; ; attempt++ {
		r, err := c.RawPrepared(ctx, op, code, frame, replyBuf)
		if err != nil {
			return nil, err // a *client.Error, which names the command
		}
		failed := r.Status
		if failed == wire.OK {
			failed = r.Result
		}
		switch {
		case failed == wire.OK:
			return r.Payload, nil
		case (failed == wire.ErrTransientNotCommitted || failed == wire.ErrTransientNotAccepted) && attempt < transientRetriesMax:
			if err := sleepCtx(ctx, transientRetryPause); err != nil {
				return nil, &client.Error{Code: failed, Command: code, Err: err}
			}
		default:
			return nil, &client.Error{Code: failed, Command: code}
		}
	}
}

// stopped reports whether ctx has ended or reached its deadline: the client sets the socket deadline
// to the context's, so a read can time out a moment before ctx.Err() turns non-nil.
func stopped(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// buildBatchFrame encodes one SendMessages request frame once (header space, then the body); the
// producer resends it with only the header restamped. Message ids
// are non-zero and distinct within the batch (producer index in the high half, position in the
// low); they repeat across batches, which is fine because the server neither mints nor deduplicates
// message ids. Payloads are a fixed pseudo-random pattern so compression-free paths see real bytes.
func buildBatchFrame(cfg *Config, stream streamRef, plan producerPlan) ([]byte, error) {
	payload := make([]byte, cfg.MessageSizeBytes)
	for i := range payload {
		payload[i] = byte('a' + (i*7+plan.Index)%26)
	}
	origin := uint64(time.Now().UnixMicro())
	messages := make([]wire.BatchMessageInput, cfg.MessagesPerBatch)
	for i := range messages {
		binary.LittleEndian.PutUint64(messages[i].ID[0:], uint64(i)+1)
		binary.LittleEndian.PutUint64(messages[i].ID[8:], uint64(plan.Index)+1)
		messages[i].OriginTimestamp = origin
		messages[i].Payload = payload
	}
	frame, err := wire.AppendSendMessages(make([]byte, wire.HeaderSize), wire.NumericID(stream.StreamID),
		wire.NumericID(stream.TopicID), plan.Partitioning, messages)
	if err != nil {
		return nil, fmt.Errorf("encode the producer %d batch: %w", plan.Index, err)
	}
	return frame, nil
}

// runProducer sends plan.Batches copies of its batch, paced when batchInterval > 0.
func runProducer(ctx context.Context, c *client.Client, cfg *Config, stream streamRef, plan producerPlan,
	rec recorder, batchInterval time.Duration, live *liveCounters) actorResult {
	res := actorResult{Kind: actorKindProducer, Index: plan.Index, Streams: []string{stream.Name}}
	frame, err := buildBatchFrame(cfg, stream, plan)
	if err != nil {
		res.Err = err
		return res
	}
	var replyBuf []byte
	messages, bytes := uint64(cfg.MessagesPerBatch), cfg.BatchPayloadBytes()
	// Stagger paced producers over one interval so they do not send in lockstep bursts.
	paceStart := time.Now()
	if batchInterval > 0 && cfg.Producers > 1 {
		paceStart = paceStart.Add(time.Duration(plan.Index) * batchInterval / time.Duration(cfg.Producers))
	}
	for batch := range plan.Batches {
		if batchInterval > 0 {
			due := paceStart.Add(time.Duration(batch) * batchInterval)
			if wait := time.Until(due); wait > 0 {
				if err := sleepCtx(ctx, wait); err != nil {
					break
				}
			} else if -wait > rateLimitCatchUpMax*batchInterval {
				// Fell far behind: restart the schedule instead of bursting to catch up.
				paceStart = time.Now().Add(-time.Duration(batch) * batchInterval)
			}
		}
		if ctx.Err() != nil {
			break
		}
		sent := time.Now()
		if _, err := exchange(ctx, c, wire.CodeSendMessages, frame, &replyBuf); err != nil {
			if !stopped(ctx) {
				res.Err = fmt.Errorf("producer %d batch %d to %s: %w", plan.Index, batch, stream.Name, err)
			}
			break
		}
		done := time.Now()
		rec.record(&res, done, done.Sub(sent), messages, bytes)
		live.producedMessages.Add(messages)
		live.producedBytes.Add(bytes)
	}
	return res
}

// runConsumer polls its partitions by offset, count = messages-per-batch, until its goal is met.
func runConsumer(ctx context.Context, c *client.Client, cfg *Config, streams []streamRef, plan consumerPlan,
	rec recorder, live *liveCounters) actorResult {
	res := actorResult{Kind: actorKindConsumer, Index: plan.Index}
	seen := map[string]bool{}
	for _, t := range plan.Targets {
		if name := streams[t.Stream].Name; !seen[name] {
			seen[name] = true
			res.Streams = append(res.Streams, name)
		}
	}
	if len(plan.Targets) == 0 {
		return res
	}
	offsets := make([]uint64, len(plan.Targets))
	var read uint64
	done := func() bool {
		if plan.Group != nil {
			return plan.Group.done()
		}
		return read >= plan.ExpectedMessages
	}
	emptyPause := emptyPollPauseMin
	roundHadData := false
	frame := make([]byte, wire.HeaderSize, wire.HeaderSize+64)
	var replyBuf []byte
	for next := 0; !done() && ctx.Err() == nil; next = (next + 1) % len(plan.Targets) {
		if next == 0 {
			roundHadData = false
		}
		t := plan.Targets[next]
		s := streams[t.Stream]
		req := wire.PollMessagesRequest{
			Consumer:  wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(uint32(plan.Index + consumerIDBase))},
			Stream:    wire.NumericID(s.StreamID),
			Topic:     wire.NumericID(s.TopicID),
			Partition: wire.SomePartition(t.Partition),
			Strategy:  wire.PollingStrategy{Kind: wire.PollOffset, Value: offsets[next]},
			Count:     uint32(cfg.MessagesPerBatch),
		}
		frame = req.Append(frame[:wire.HeaderSize])
		sent := time.Now()
		payload, err := exchange(ctx, c, wire.CodePollMessages, frame, &replyBuf)
		if err != nil {
			if !stopped(ctx) {
				res.Err = fmt.Errorf("consumer %d poll %s partition %d at offset %d: %w", plan.Index, s.Name,
					t.Partition, offsets[next], err)
			}
			break
		}
		finished := time.Now()
		count, err := checkPollReply(cfg, payload, offsets[next])
		if err != nil {
			res.Err = fmt.Errorf("consumer %d poll %s partition %d at offset %d: %w", plan.Index, s.Name,
				t.Partition, offsets[next], err)
			break
		}
		if count == 0 {
			res.EmptyPolls++
			// Pause only after a whole round over the partitions found nothing.
			if next == len(plan.Targets)-1 && !roundHadData {
				if sleepCtx(ctx, emptyPause) != nil {
					break
				}
				emptyPause = min(2*emptyPause, emptyPollPauseMax)
			}
			continue
		}
		emptyPause = emptyPollPauseMin
		roundHadData = true
		offsets[next] += count
		read += count
		if plan.Group != nil {
			plan.Group.consumed.Add(count)
		}
		bytes := count * uint64(cfg.MessageSizeBytes)
		rec.record(&res, finished, finished.Sub(sent), count, bytes)
		live.consumedMessages.Add(count)
		live.consumedBytes.Add(bytes)
	}
	return res
}

// countPolledMessages checks the reply's records cheaply (headers only, no checksum pass: the bench
// measures the server, not client-side verification) and returns the message count.
func countPolledMessages(payload []byte) (uint64, error) {
	if len(payload) < pollRepliesPrefixSize {
		return 0, fmt.Errorf("poll reply of %d bytes is short of the %d-byte prefix", len(payload), pollRepliesPrefixSize)
	}
	declared := binary.LittleEndian.Uint32(payload[12:])
	var counted uint64
	for pos := pollRepliesPrefixSize; pos < len(payload); {
		h, err := wire.DecodeBatchHeader(payload[pos:])
		if err != nil {
			return 0, fmt.Errorf("poll reply record at byte %d: %w", pos, err)
		}
		if h.BatchLength > uint64(len(payload)-pos) {
			return 0, fmt.Errorf("poll reply record at byte %d: batch_length %d overruns the %d bytes left",
				pos, h.BatchLength, len(payload)-pos)
		}
		counted += uint64(h.MessageCount)
		pos += int(h.BatchLength)
	}
	if counted != uint64(declared) {
		return 0, errors.New("poll reply records hold a different message count than the prefix declares")
	}
	return counted, nil
}

// checkPollReply returns the reply's message count: by record headers only, or with cfg.Verify by a
// full decode (batch checksums) that also requires consecutive offsets from the polled one and
// payloads of --message-size bytes.
func checkPollReply(cfg *Config, payload []byte, from uint64) (uint64, error) {
	if !cfg.Verify {
		return countPolledMessages(payload)
	}
	reply, err := wire.DecodePollMessagesReply(payload)
	if err != nil {
		return 0, fmt.Errorf("verify: %w", err)
	}
	for i, m := range reply.Messages {
		if want := from + uint64(i); m.Offset != want {
			return 0, fmt.Errorf("verify: message %d of the reply has offset %d, want %d", i, m.Offset, want)
		}
		if len(m.Payload) != cfg.MessageSizeBytes {
			return 0, fmt.Errorf("verify: message at offset %d has a %d-byte payload, want %d", m.Offset,
				len(m.Payload), cfg.MessageSizeBytes)
		}
	}
	return uint64(len(reply.Messages)), nil
}
