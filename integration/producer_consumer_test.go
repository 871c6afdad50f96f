package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// TestProducerConsumerHelpers runs client.Producer and two client.Consumer members of one group
// against the real server: every message produced is consumed exactly once across the group,
// and the committed offsets make a later member start after them.
func TestProducerConsumerHelpers(t *testing.T) {
	s := startServer(t, "")
	ctx := testCtx(t)
	admin := rootClient(t, s.addr)
	_, err := admin.CreateStream(ctx, "pc")
	must(t, err)
	_, err = admin.CreateTopic(ctx, named("pc"), "events", 3)
	must(t, err)
	_, err = admin.CreateConsumerGroup(ctx, named("pc"), named("events"), "workers")
	must(t, err)

	p, err := client.NewProducer(admin, client.ProducerConfig{Stream: named("pc"), Topic: named("events"),
		Partitioning: client.PartitionByKey(), BatchMessages: 7, Linger: client.LingerMax})
	must(t, err)
	const total = 60
	want := make([]string, 0, total)
	for i := range total {
		payload := fmt.Sprintf("m%02d", i)
		want = append(want, payload)
		must(t, p.Send(ctx, client.Message{Payload: []byte(payload), Key: []byte{byte(i % 5)}}))
	}
	must(t, p.Close(ctx))

	cfg := client.ConsumerConfig{Stream: named("pc"), Topic: named("events"), BatchSize: 4, PollInterval: 5 * time.Millisecond}
	var members []*client.Consumer
	for range 2 {
		k, err := client.NewGroupConsumer(ctx, rootClient(t, s.addr), named("workers"), cfg)
		must(t, err)
		members = append(members, k)
	}
	// Take the assignment after both joined, then drain: each member reads only its partitions.
	got := map[string]int{}
	for len(got) < total {
		progressed := false
		for _, k := range members {
			m, err := k.Next(shortCtx(t))
			if err != nil {
				continue // nothing left on this member's partitions for now
			}
			got[string(m.Payload)]++
			progressed = true
		}
		if !progressed {
			t.Fatalf("consumers stalled after %d of %d messages", len(got), total)
		}
	}
	var seen []string
	for payload, n := range got {
		if n != 1 {
			t.Errorf("%s consumed %d times", payload, n)
		}
		seen = append(seen, payload)
	}
	sort.Strings(seen)
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("consumed %v", seen)
	}
	for _, k := range members {
		must(t, k.Close(ctx))
	}
	// The group's offsets were committed on Close: a new member finds nothing to read.
	late, err := client.NewGroupConsumer(ctx, rootClient(t, s.addr), named("workers"), cfg)
	must(t, err)
	if m, err := late.Next(shortCtx(t)); err == nil {
		t.Fatalf("a new member re-read %s at offset %d", m.Payload, m.Offset)
	}
	must(t, late.Close(ctx))
	var stored int
	for part := uint32(0); part < 3; part++ {
		o, err := admin.GetConsumerOffset(ctx, wire.Consumer{Kind: wire.ConsumerKindGroup, ID: named("workers")}, named("pc"), named("events"), wire.SomePartition(part))
		must(t, err)
		if o != nil {
			stored += int(o.StoredOffset) + 1
		}
	}
	if stored != total {
		t.Fatalf("stored offsets cover %d messages, want %d", stored, total)
	}
}

// shortCtx bounds one Consumer.Next that may find nothing; Next notices the end between polls,
// so the connection survives it.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}
