// Command producer sends numbered messages to a topic with client.Producer, batching by size and
// linger time:
//
//	go run ./examples/producer --addr 127.0.0.1:8090 --stream demo --topic events --count 1000
//
// The stream and topic must exist (iggy stream create demo; iggy topic create demo events 3 none).
package main

import (
	"context"
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
	count := flag.Int("count", 100, "messages to send")
	batch := flag.Int("batch", 100, "messages per batch")
	linger := flag.Duration("linger", 10*time.Millisecond, "longest wait before a partial batch is sent")
	partition := flag.Int("partition", -1, "send to this partition (default: balanced, or by --key)")
	key := flag.String("key", "", "partition by this message key instead")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, conn, *count, *batch, *linger, *partition, *key); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, conn *exampleconn.Flags, count, batch int, linger time.Duration, partition int, key string) error {
	c, stream, topic, err := conn.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	strategy := client.PartitionBalanced()
	switch {
	case key != "":
		strategy = client.PartitionByKey()
	case partition >= 0:
		strategy = client.PartitionByID(uint32(partition))
	}
	p, err := client.NewProducer(c, client.ProducerConfig{
		Stream: stream, Topic: topic, Partitioning: strategy, BatchMessages: batch, Linger: linger,
	})
	if err != nil {
		return err
	}
	for i := range count {
		m := client.Message{Payload: []byte(fmt.Sprintf("message %d", i))}
		if key != "" {
			m.Key = []byte(key)
		}
		if err := p.Send(ctx, m); err != nil {
			return err
		}
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("sent %d message(s) to %s\n", count, conn.Where())
	return nil
}
