// Command consumer reads a topic as a member of a consumer group with client.Consumer and prints
// each message:
//
//	go run ./examples/consumer --addr 127.0.0.1:8090 --stream demo --topic events --group workers
//
// The group must exist (iggy consumer-group create demo events workers). Run several to see the
// server share the partitions between them. Ctrl-C commits and leaves the group.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/examples/internal/exampleconn"
)

func main() {
	conn := exampleconn.Register()
	group := flag.String("group", "workers", "consumer group ID or name")
	batch := flag.Uint("batch", 100, "messages per poll")
	interval := flag.Duration("poll-interval", 100*time.Millisecond, "wait after a poll round that found nothing")
	commit := flag.String("commit", "consume", "offset commit: consume (after processing), poll (server-side on poll) or manual")
	limit := flag.Int("limit", 0, "stop after this many messages (0: until Ctrl-C)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	modes := map[string]client.CommitMode{"consume": client.CommitAfterConsume, "poll": client.CommitOnPoll, "manual": client.CommitManual}
	mode, ok := modes[*commit]
	if !ok {
		fmt.Fprintf(os.Stderr, "consumer: --commit %q is not consume, poll or manual\n", *commit)
		os.Exit(2)
	}
	if err := run(ctx, conn, *group, uint32(*batch), *interval, mode, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn *exampleconn.Flags, group string, batch uint32, interval time.Duration, mode client.CommitMode, limit int) error {
	groupID, err := client.ParseIdentifier(group)
	if err != nil {
		return err
	}
	c, stream, topic, err := conn.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	k, err := client.NewGroupConsumer(ctx, c, groupID, client.ConsumerConfig{
		Stream: stream, Topic: topic, BatchSize: batch, PollInterval: interval, Commit: mode,
	})
	if err != nil {
		return err
	}
	// Close with a fresh context: ctx is already cancelled after Ctrl-C.
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.Close(closeCtx); err != nil {
			fmt.Fprintln(os.Stderr, "consumer: close:", err)
		}
	}()
	for n := 0; limit == 0 || n < limit; n++ {
		m, err := k.Next(ctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Printf("partition %d offset %d: %s\n", m.Partition, m.Offset, m.Payload)
		if mode == client.CommitManual {
			if err := k.StoreOffset(ctx, m.Partition, m.Offset); err != nil {
				return err
			}
		}
	}
	return nil
}
