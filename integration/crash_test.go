package integration

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// ackedBatch is one acknowledged send: where the server said it stored it.
type ackedBatch struct {
	partition  uint32
	baseOffset uint64
	payloads   []string
}

// produceUntilKilled runs producers against a topic until the server is
// SIGKILLed after killAfter acknowledged batches; it returns every ack.
func produceUntilKilled(t *testing.T, srv *server, topic wire.Identifier, partitions uint32, producers, killAfter int) []ackedBatch {
	t.Helper()
	acks := produceUntil(t, srv.addr, topic, partitions, producers, killAfter,
		func() { _ = srv.cmd.Process.Signal(syscall.SIGKILL) })
	<-srv.exited
	return acks
}

// produceUntil runs producers against a topic through addr; after
// killAfter acknowledged batches it calls kill once, and the producers
// stop at their next send (or when a send fails). It returns every ack.
func produceUntil(t *testing.T, addr string, topic wire.Identifier, partitions uint32, producers, killAfter int, kill func()) []ackedBatch {
	t.Helper()
	var (
		mu     sync.Mutex
		acks   []ackedBatch
		wg     sync.WaitGroup
		once   sync.Once
		start  = make(chan struct{})
		killed = make(chan struct{})
	)
	killOnce := func() { once.Do(func() { kill(); close(killed) }) }
	for g := 0; g < producers; g++ {
		c := rootClient(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for seq := 0; ; seq++ {
				select {
				case <-killed:
					return
				default:
				}
				p := uint32(g) % partitions
				msgs := make([]wire.BatchMessageInput, 10)
				payloads := make([]string, len(msgs))
				for i := range msgs {
					payloads[i] = fmt.Sprintf("producer-%d-seq-%d-msg-%d", g, seq, i)
					msgs[i] = wire.BatchMessageInput{OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: []byte(payloads[i])}
					msgs[i].ID[0], msgs[i].ID[1], msgs[i].ID[2] = byte(g), byte(seq), byte(i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				conf, err := c.SendMessages(ctx, id(0), topic, partitionID(p), msgs)
				cancel()
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acks = append(acks, ackedBatch{partition: conf[0].PartitionID, baseOffset: conf[0].BaseOffset, payloads: payloads})
				n := len(acks)
				mu.Unlock()
				if n >= killAfter {
					killOnce()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	killOnce() // every producer failed before the kill: kill anyway
	mu.Lock()
	defer mu.Unlock()
	return append([]ackedBatch(nil), acks...)
}

// checkAcked polls every partition after the restart and checks each
// acknowledged message at its acknowledged offset, then that new sends get
// offsets above everything handed out before.
func checkAcked(t *testing.T, c *client.Client, topic wire.Identifier, partitions uint32, acks []ackedBatch) {
	t.Helper()
	stored := make(map[uint32]map[uint64]string)
	for p := uint32(0); p < partitions; p++ {
		stored[p] = make(map[uint64]string)
		for next := uint64(0); ; {
			r := pollAt(t, c, firstConsumer, id(0), topic, wire.SomePartition(p), wire.PollingStrategy{Kind: wire.PollOffset, Value: next}, 1000, false)
			if r.MessagesCount == 0 {
				break
			}
			for _, m := range r.Messages {
				if _, dup := stored[p][m.Offset]; dup {
					t.Fatalf("partition %d: offset %d polled twice", p, m.Offset)
				}
				stored[p][m.Offset] = string(m.Payload)
				next = m.Offset + 1
			}
		}
	}
	highest := make(map[uint32]uint64)
	for _, a := range acks {
		for i, want := range a.payloads {
			off := a.baseOffset + uint64(i)
			if got, ok := stored[a.partition][off]; !ok || got != want {
				t.Fatalf("acknowledged message partition %d offset %d: stored %q (present %v), want %q", a.partition, off, got, ok, want)
			}
			highest[a.partition] = max(highest[a.partition], off)
		}
	}
	for p := uint32(0); p < partitions; p++ {
		conf := sendOK(t, c, id(0), topic, partitionID(p), makeMessages("after-crash", 0, 1))
		if h, ok := highest[p]; ok && conf.BaseOffset <= h {
			t.Fatalf("partition %d: offset %d handed out again after the crash (highest acknowledged %d)", p, conf.BaseOffset, h)
		}
		if uint64(len(stored[p])) != conf.BaseOffset {
			t.Fatalf("partition %d: %d messages recovered but the next offset is %d", p, len(stored[p]), conf.BaseOffset)
		}
	}
}

func TestCrashMidProduceKeepsEveryAcknowledgedMessage(t *testing.T) {
	for _, durability := range []string{"persisted", "replicated"} {
		t.Run(durability, func(t *testing.T) {
			srv := startServer(t, "")
			c := rootClient(t, srv.addr)
			_, err := c.CreateStream(testCtx(t), "s")
			must(t, err)
			_, err = c.CreateTopic(testCtx(t), id(0), "t", 2, stringOption("durability", durability),
				stringOption("consumer_offset_durability", durability))
			must(t, err)
			acks := produceUntilKilled(t, srv, id(0), 2, 4, 300)
			if len(acks) < 300 {
				t.Fatalf("only %d batches acknowledged before the kill", len(acks))
			}
			srv.start()
			checkAcked(t, rootClient(t, srv.addr), id(0), 2, acks)
			t.Logf("%s: %d acknowledged batches all recovered", durability, len(acks))
		})
	}
}
