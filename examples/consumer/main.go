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
	"strings"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "server TCP address (comma-separated seeds for a cluster)")
	user := flag.String("username", "iggy", "user name")
	pass := flag.String("password", "iggy", "password")
	stream := flag.String("stream", "demo", "stream ID or name")
	topic := flag.String("topic", "events", "topic ID or name")
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
	if err := run(ctx, *addr, *user, *pass, *stream, *topic, *group, uint32(*batch), *interval, mode, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, user, pass, stream, topic, group string, batch uint32, interval time.Duration, mode client.CommitMode, limit int) error {
	var ids [3]wire.Identifier
	for i, s := range []string{stream, topic, group} {
		id, err := client.ParseIdentifier(s)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	c, err := client.DialCluster(ctx, strings.Split(addr, ","), client.WithCredentials(user, pass))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	defer c.Close()
	k, err := client.NewGroupConsumer(ctx, c, ids[2], client.ConsumerConfig{
		Stream: ids[0], Topic: ids[1], BatchSize: batch, PollInterval: interval, Commit: mode,
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
