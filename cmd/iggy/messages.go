package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Batching of stdin input: a send carries at most this many messages or payload bytes.
const (
	sendBatchMessagesMax = 1000
	sendBatchBytesMax    = 1 << 20
)

// Follow-mode poll interval bounds.
const (
	pollIntervalDefault = 500 * time.Millisecond
	pollIntervalMin     = 10 * time.Millisecond
	pollIntervalMax     = time.Minute
)

func (a *app) messageCommand() *cobra.Command {
	return group("message", "m", "message operations", a.sendCommand(), a.pollCommand())
}

// partitioning builds the send partitioning from -p and -m (at most one of them).
func partitioning(cmd *cobra.Command, partition uint32, key string) (wire.Partitioning, error) {
	p, m := cmd.Flags().Changed("partition-id"), cmd.Flags().Changed("message-key")
	switch {
	case p && m:
		return wire.Partitioning{}, usagef("--partition-id and --message-key cannot be used together")
	case p:
		return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: partition}, nil
	case m:
		if len(key) == 0 || len(key) > 255 {
			return wire.Partitioning{}, usagef("--message-key must be 1..255 bytes")
		}
		return wire.Partitioning{Kind: wire.PartitioningMessagesKey, Key: []byte(key)}, nil
	}
	return wire.Partitioning{Kind: wire.PartitioningBalanced}, nil
}

// newMessage stamps a payload with a random 128-bit ID (the server never mints IDs) and the
// current time.
func newMessage(payload []byte) wire.BatchMessageInput {
	m := wire.BatchMessageInput{OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: payload}
	_, _ = rand.Read(m.ID[:])
	return m
}

// readLineBatches reads stdin one message per line (empty lines skipped) and calls fn with
// batches bounded by sendBatchMessagesMax and sendBatchBytesMax.
func readLineBatches(r io.Reader, fn func([]wire.BatchMessageInput) error) (int, error) {
	br := bufio.NewReader(r)
	var batch []wire.BatchMessageInput
	size, total := 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := fn(batch)
		total += len(batch)
		batch, size = nil, 0
		return err
	}
	for {
		line, err := br.ReadString('\n')
		if text := strings.TrimRight(line, "\r\n"); text != "" {
			batch = append(batch, newMessage([]byte(text)))
			size += len(text)
			if len(batch) >= sendBatchMessagesMax || size >= sendBatchBytesMax {
				if ferr := flush(); ferr != nil {
					return total, ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return total, flush()
		}
		if err != nil {
			return total, fmt.Errorf("read stdin: %w", err)
		}
	}
}

func (a *app) sendCommand() *cobra.Command {
	var (
		partition uint32
		key       string
	)
	cmd := &cobra.Command{
		Use:     "send STREAM_ID TOPIC_ID [MESSAGES...]",
		Aliases: []string{"s"},
		Short:   "Send messages to given topic ID and given stream ID",
		Long: "Send each MESSAGES argument as one message. With no MESSAGES, read standard input and send\n" +
			"each non-empty line as one message. Without -p or -m the server balances across partitions.",
		Example: "  iggy message send 1 2 message\n  iggy message send prod sensors \"long message\" second\n" +
			"  iggy message send -p 0 prod sensors hello\n  tail -f app.log | iggy message send prod logs",
		Args: rangeArgs(2, -1, "STREAM_ID", "TOPIC_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIdentifiers(args, "stream ID", "topic ID")
			if err != nil {
				return err
			}
			part, err := partitioning(cmd, partition, key)
			if err != nil {
				return err
			}
			var fromArgs []wire.BatchMessageInput
			for i, m := range args[2:] {
				if m == "" {
					return usagef("message %d is empty; the server refuses empty payloads", i+1)
				}
				fromArgs = append(fromArgs, newMessage([]byte(m)))
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				send := func(batch []wire.BatchMessageInput) error {
					_, err := c.SendMessages(ctx, ids[0], ids[1], part, batch)
					return err
				}
				n := len(fromArgs)
				if n > 0 {
					err = send(fromArgs)
				} else {
					n, err = readLineBatches(a.stdin, send)
				}
				if err != nil {
					return err
				}
				if n == 0 {
					return usagef("no messages to send: pass MESSAGES after STREAM_ID TOPIC_ID or pipe one message per line on stdin")
				}
				a.say("Sent %d message(s) to topic with ID: %s in stream with ID: %s", n, args[1], args[0])
				return nil
			})
		},
	}
	cmd.Flags().Uint32VarP(&partition, "partition-id", "p", 0, "partition ID to send to")
	cmd.Flags().StringVarP(&key, "message-key", "m", "", "messages key; the server hashes it to pick the partition")
	return cmd
}

// pollOptions are message poll's flags.
type pollOptions struct {
	count        uint32
	autoCommit   bool
	offset       uint64
	first, last  bool
	next         bool
	consumer     string
	follow       bool
	pollInterval time.Duration
}

// strategy returns the one polling strategy the flags chose (upstream requires exactly one).
func (o *pollOptions) strategy(cmd *cobra.Command) (wire.PollingStrategy, error) {
	var chosen []wire.PollingStrategy
	if cmd.Flags().Changed("offset") {
		chosen = append(chosen, wire.PollingStrategy{Kind: wire.PollOffset, Value: o.offset})
	}
	if o.first {
		chosen = append(chosen, wire.PollingStrategy{Kind: wire.PollFirst})
	}
	if o.last {
		chosen = append(chosen, wire.PollingStrategy{Kind: wire.PollLast})
	}
	if o.next {
		chosen = append(chosen, wire.PollingStrategy{Kind: wire.PollNext})
	}
	if len(chosen) != 1 {
		return wire.PollingStrategy{}, usagef("choose exactly one polling strategy: --offset N, --first, --last or --next")
	}
	return chosen[0], nil
}

// nextStrategy is where a follow-mode poll continues after polling with s and getting msgs.
func nextStrategy(s wire.PollingStrategy, msgs []wire.PolledMessage) wire.PollingStrategy {
	if len(msgs) > 0 {
		return wire.PollingStrategy{Kind: wire.PollOffset, Value: msgs[len(msgs)-1].Offset + 1}
	}
	if s.Kind == wire.PollLast {
		// Nothing there yet: take whatever arrives first.
		return wire.PollingStrategy{Kind: wire.PollFirst}
	}
	return s
}

type messageJSON struct {
	Offset          uint64 `json:"offset"`
	Timestamp       uint64 `json:"timestamp"`
	OriginTimestamp uint64 `json:"origin_timestamp"`
	ID              string `json:"id"`
	PartitionID     uint32 `json:"partition_id"`
	Length          int    `json:"length"`
	Payload         string `json:"payload"`
	PayloadBase64   string `json:"payload_base64"`
}

// payloadText renders a payload as text, or as 0x-hex when it is not UTF-8.
func payloadText(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	return "0x" + hex.EncodeToString(p)
}

func toMessageJSON(partition uint32, m *wire.PolledMessage) messageJSON {
	return messageJSON{Offset: m.Offset, Timestamp: m.Timestamp, OriginTimestamp: m.OriginTimestamp,
		ID: hex.EncodeToString(m.ID[:]), PartitionID: partition, Length: len(m.Payload),
		Payload: payloadText(m.Payload), PayloadBase64: base64.StdEncoding.EncodeToString(m.Payload)}
}

var messageHeaders = []string{"Offset", "Timestamp", "ID", "Length", "Payload"}

func messageRow(j messageJSON) []string {
	return []string{u64s(j.Offset), formatMicros(j.Timestamp), j.ID, fmt.Sprint(j.Length), j.Payload}
}

func (a *app) pollCommand() *cobra.Command {
	o := pollOptions{}
	cmd := &cobra.Command{
		Use:     "poll STREAM_ID TOPIC_ID PARTITION_ID (--offset N | --first | --last | --next)",
		Aliases: []string{"p"},
		Short:   "Poll messages from given topic ID and given stream ID",
		Long: "Poll up to --message-count messages from one partition. With --follow, keep polling every\n" +
			"--poll-interval for new messages until interrupted (Ctrl-C exits cleanly).\n" +
			"--output json prints one JSON object per message per line.",
		Example: "  iggy message poll --offset 0 1 2 0\n  iggy message poll --first -m 10 prod sensors 0\n" +
			"  iggy message poll --next --auto-commit -c 7 prod sensors 0\n  iggy message poll --last --follow prod logs 0",
		Args: exactArgs(3, "STREAM_ID", "TOPIC_ID", "PARTITION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIdentifiers(args, "stream ID", "topic ID")
			if err != nil {
				return err
			}
			var partition uint32
			if _, err := fmt.Sscanf(args[2], "%d", &partition); err != nil || fmt.Sprint(partition) != args[2] {
				return usagef("PARTITION_ID %q is not a whole number", args[2])
			}
			strategy, err := o.strategy(cmd)
			if err != nil {
				return err
			}
			if o.count == 0 {
				return usagef("--message-count must be at least 1")
			}
			if o.pollInterval < pollIntervalMin || o.pollInterval > pollIntervalMax {
				return usagef("--poll-interval must be within %s..%s", pollIntervalMin, pollIntervalMax)
			}
			consumerID, err := parseIdentifier("consumer", o.consumer)
			if err != nil {
				return err
			}
			f, err := a.format("")
			if err != nil {
				return err
			}
			req := wire.PollMessagesRequest{
				Consumer:   wire.Consumer{Kind: wire.ConsumerKindSingle, ID: consumerID},
				Stream:     ids[0],
				Topic:      ids[1],
				Partition:  wire.SomePartition(partition),
				Strategy:   strategy,
				Count:      o.count,
				AutoCommit: o.autoCommit,
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				return a.poll(ctx, c, req, f, o)
			})
		},
	}
	fl := cmd.Flags()
	fl.Uint32VarP(&o.count, "message-count", "m", 1, "number of messages to poll (per poll in --follow mode)")
	fl.BoolVarP(&o.autoCommit, "auto-commit", "a", false, "store the consumer offset on the server after polling")
	fl.Uint64VarP(&o.offset, "offset", "o", 0, "polling strategy: start at this offset")
	fl.BoolVarP(&o.first, "first", "f", false, "polling strategy: start at the first message in the partition")
	fl.BoolVarP(&o.last, "last", "l", false, "polling strategy: the last --message-count messages in the partition")
	fl.BoolVarP(&o.next, "next", "n", false, "polling strategy: continue after the consumer's stored offset")
	fl.StringVarP(&o.consumer, "consumer", "c", "0", "consumer ID (a number or a name)")
	fl.BoolVar(&o.follow, "follow", false, "keep polling for new messages until interrupted")
	fl.DurationVar(&o.pollInterval, "poll-interval", pollIntervalDefault, "wait between polls that return nothing new in --follow mode (10ms..1m)")
	return cmd
}

// poll runs one poll, or with --follow polls until ctx ends.
func (a *app) poll(ctx context.Context, c *client.Client, req wire.PollMessagesRequest, format string, o pollOptions) error {
	enc := json.NewEncoder(a.stdout)
	headerShown := false
	for {
		reply, err := c.PollMessages(ctx, req)
		if err != nil {
			if o.follow && ctx.Err() != nil {
				return nil // interrupted: a clean stop
			}
			return err
		}
		var rows [][]string
		for i := range reply.Messages {
			j := toMessageJSON(reply.PartitionID, &reply.Messages[i])
			switch format {
			case formatJSON:
				if err := enc.Encode(j); err != nil {
					return err
				}
			case formatList:
				fmt.Fprintln(a.stdout, strings.Join(messageRow(j), "|"))
			default:
				rows = append(rows, messageRow(j))
			}
		}
		if format == formatTable {
			if !o.follow {
				if !a.globals.quiet {
					fmt.Fprintf(a.stdout, "Polled %d message(s) from partition %d, current offset %d\n",
						len(reply.Messages), reply.PartitionID, reply.CurrentOffset)
				}
				writeTable(a.stdout, messageHeaders, rows)
			} else {
				// A table cannot grow: follow mode prints a header once, then "|"-separated rows.
				if !headerShown {
					fmt.Fprintln(a.stdout, strings.Join(messageHeaders, "|"))
					headerShown = true
				}
				for _, r := range rows {
					fmt.Fprintln(a.stdout, strings.Join(r, "|"))
				}
			}
		}
		if !o.follow {
			return nil
		}
		req.Strategy = nextStrategy(req.Strategy, reply.Messages)
		if uint32(len(reply.Messages)) >= req.Count {
			continue // a full batch: more may be waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.pollInterval):
		}
	}
}
