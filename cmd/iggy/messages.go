package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Follow-mode poll interval bounds.
const (
	pollIntervalDefault = 500 * time.Millisecond
	pollIntervalMin     = 10 * time.Millisecond
	pollIntervalMax     = time.Minute
)

func (a *app) messageCommand() *cobra.Command {
	return group("message", "m", "message operations", a.sendCommand(), a.pollCommand(), a.flushCommand())
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
	showHeaders  bool
	outputFile   string
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
	fl.BoolVarP(&o.showHeaders, "show-headers", "s", false, "include the user headers in the output (one column per key and kind)")
	fl.StringVar(&o.outputFile, "output-file", "", "append the polled messages to this file (binary, upstream's layout) instead of printing them")
	return cmd
}

// poll runs one poll, or with --follow polls until ctx ends.
func (a *app) poll(ctx context.Context, c *client.Client, req wire.PollMessagesRequest, format string, o pollOptions) error {
	out := &pollPrinter{a: a, format: format, o: o}
	for {
		reply, err := c.PollMessages(ctx, req)
		if err != nil {
			if o.follow && ctx.Err() != nil {
				return nil // interrupted: a clean stop
			}
			return err
		}
		for i := range reply.Messages {
			if err := a.open(&reply.Messages[i]); err != nil {
				return err
			}
		}
		if err := out.print(reply); err != nil {
			return err
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
