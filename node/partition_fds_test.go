//go:build linux

package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

const (
	fdsChildEnv = "LODESTREAM_TEST_FDS_CHILD"
	// fdsLimit is the child's RLIMIT_NOFILE: the derived open_files_max is
	// 256 - 128 = 128 descriptors.
	fdsLimit = 256
	// fdsPartitions is the partition count of a default run (2,048 segment
	// files, 16 times the bound); LODESTREAM_TEST_FDS_PARTITIONS=4096 runs
	// the figure (BENCHMARKS.md has its timings).
	fdsPartitions = 1024
	fdsWorkers    = 4
)

// TestManyPartitionsUnderALowDescriptorLimit (issue 15 point 8): a node
// whose RLIMIT_NOFILE is 256 creates 1,024 partitions (4,096 with
// LODESTREAM_TEST_FDS_PARTITIONS=4096; topics of at most 1,000, replicated
// and persisted in turn), serves a send and a poll on every one, restarts,
// boots and serves them again. Before the open-file cache each partition held its
// segment files open for good: the creation was refused (3000) or, past the
// limit, the node could not boot. The limit is set in a child process (the
// test binary again), so other tests keep theirs.
func TestManyPartitionsUnderALowDescriptorLimit(t *testing.T) {
	if os.Getenv(fdsChildEnv) == "" {
		start := time.Now()
		cmd := exec.Command(os.Args[0], "-test.run=^TestManyPartitionsUnderALowDescriptorLimit$", "-test.count=1",
			"-test.v", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), fdsChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "fds:") {
				t.Log(strings.TrimSpace(line))
			}
		}
		t.Logf("child ran in %s", time.Since(start).Round(time.Millisecond))
		return
	}
	limit := uint64(fdsLimit)
	if v, err := strconv.ParseUint(os.Getenv("LODESTREAM_TEST_FDS_LIMIT"), 10, 64); err == nil && v > 0 {
		limit = v // a comparison run with room for every file
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	total := fdsPartitions
	if v, err := strconv.Atoi(os.Getenv("LODESTREAM_TEST_FDS_PARTITIONS")); err == nil && v > 0 {
		total = v
	}
	var topics []uint32 // partitions per topic
	for left := total; left > 0; left -= 1000 {
		topics = append(topics, uint32(min(left, 1000)))
	}
	dir := fdsDataDir(t)
	var peak atomic.Int64
	stopSampling := sampleFDs(&peak)
	defer stopSampling()

	addr, stop := startNode(t, dir)
	c := fdsClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := c.CreateStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for topic, count := range topics {
		durability := []string{"replicated", "persisted"}[topic%2]
		if _, err := c.CreateTopic(ctx, wire.NumericID(0), fmt.Sprintf("t%d-%s", topic, durability), count,
			wire.Option{Key: "durability", Kind: wire.KindString, Value: []byte(durability)}); err != nil {
			t.Fatalf("create %d partitions of the %s topic under RLIMIT_NOFILE %d: %v", count, durability, limit, err)
		}
	}
	t.Logf("fds: created %d partitions in %s", total, time.Since(began).Round(time.Millisecond))
	began = time.Now()
	fdsEveryPartition(t, addr, topics, func(c *client.Client, topic, p uint32) error { return fdsSend(ctx, c, topic, p, 0) })
	fdsEveryPartition(t, addr, topics, func(c *client.Client, topic, p uint32) error { return fdsPoll(ctx, c, topic, p, 1) })
	fdsEveryPartition(t, addr, topics, func(c *client.Client, topic, p uint32) error { return fdsSend(ctx, c, topic, p, 1) })
	t.Logf("fds: sent, polled and sent again on every partition in %s", time.Since(began).Round(time.Millisecond))
	c.Close()
	began = time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	t.Logf("fds: stopped in %s", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	addr, stop = startNode(t, dir)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("stop after restart: %v", err)
		}
	}()
	fdsEveryPartition(t, addr, topics, func(c *client.Client, topic, p uint32) error { return fdsPoll(ctx, c, topic, p, 2) })
	fdsEveryPartition(t, addr, topics, func(c *client.Client, topic, p uint32) error { return fdsSend(ctx, c, topic, p, 2) })
	t.Logf("fds: rebooted, polled and sent on every partition in %s", time.Since(began).Round(time.Millisecond))
	t.Logf("fds: at most %d descriptors open in the process (limit %d; %d segment files)", peak.Load(), limit,
		2*total)
}

// fdsDataDir is a data directory on tmpfs when there is one (the test is
// about descriptors, not fsync latency), else a temporary directory.
func fdsDataDir(t *testing.T) string {
	if dir, err := os.MkdirTemp("/dev/shm", "lodestream-fds-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// sampleFDs records the largest number of open descriptors seen until the
// returned function is called.
func sampleFDs(peak *atomic.Int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if entries, err := os.ReadDir("/proc/self/fd"); err == nil && int64(len(entries)) > peak.Load() {
				peak.Store(int64(len(entries)))
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func fdsClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	return c
}

// fdsEveryPartition runs fn on every partition of every topic, spread over
// fdsWorkers connections.
func fdsEveryPartition(t *testing.T, addr string, topics []uint32, fn func(c *client.Client, topic, p uint32) error) {
	t.Helper()
	type partition struct{ topic, p uint32 }
	var all []partition
	for topic, count := range topics {
		for p := range count {
			all = append(all, partition{uint32(topic), p})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, fdsWorkers)
	for w := range fdsWorkers {
		c := fdsClient(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for i := w; i < len(all); i += fdsWorkers {
				if err := fn(c, all[i].topic, all[i].p); err != nil {
					errs <- fmt.Errorf("topic %d partition %d: %w", all[i].topic, all[i].p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func fdsPayload(topic, p uint32, n int) string { return fmt.Sprintf("t%d-p%d-m%d", topic, p, n) }

// fdsRetry repeats call while it answers 58: a partition still being
// opened (after its creation, or at boot while the openers work through
// thousands of partitions) answers 58 once a request waited 10 s for it.
func fdsRetry(ctx context.Context, call func() error) error {
	for {
		err := call()
		if client.CodeOf(err) != wire.ErrTransientNotAccepted || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fdsSend(ctx context.Context, c *client.Client, topic, p uint32, n int) error {
	return fdsRetry(ctx, func() error {
		_, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(topic),
			wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: p},
			[]wire.BatchMessageInput{{Payload: []byte(fdsPayload(topic, p, n))}})
		return err
	})
}

// fdsPoll checks that the partition holds exactly messages 0..want-1.
func fdsPoll(ctx context.Context, c *client.Client, topic, p uint32, want int) error {
	var r *wire.PollMessagesReply
	err := fdsRetry(ctx, func() (err error) {
		r, err = c.PollMessages(ctx, wire.PollMessagesRequest{
			Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)},
			Stream:   wire.NumericID(0), Topic: wire.NumericID(topic), Partition: wire.SomePartition(p),
			Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 10})
		return err
	})
	if err != nil {
		return err
	}
	if len(r.Messages) != want {
		return fmt.Errorf("polled %d messages, want %d", len(r.Messages), want)
	}
	for i, m := range r.Messages {
		if m.Offset != uint64(i) || string(m.Payload) != fdsPayload(topic, p, i) {
			return fmt.Errorf("message %d: offset %d payload %q", i, m.Offset, m.Payload)
		}
	}
	return nil
}
