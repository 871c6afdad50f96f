package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Measurements for issue 15's targets (not part of the normal suite: they
// report figures and assert nothing about timing). Run with
//
//	LODESTREAM_MEASURE=1 go test -count=1 -v -run 'TestMeasure' -timeout 10m ./integration/
//
// Each prints the healthy neighbour's ping/send/poll latencies without and
// with the attack, and the server's peak RSS.

func measureEnabled(t *testing.T) {
	if os.Getenv("LODESTREAM_MEASURE") == "" {
		t.Skip("set LODESTREAM_MEASURE=1 to run the issue-15 measurements")
	}
}

func measureDuration() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LODESTREAM_MEASURE_DURATION")); err == nil {
		return d
	}
	return 20 * time.Second
}

// rssBytes reads the server process's resident set (VmRSS) and peak (VmHWM).
func rssBytes(pid int) (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// sampleRSS records the largest VmRSS until stop is closed.
func sampleRSS(pid int, stop <-chan struct{}) *atomic.Int64 {
	var maxRSS atomic.Int64
	go func() {
		for {
			if rss, _ := rssBytes(pid); rss > maxRSS.Load() {
				maxRSS.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return &maxRSS
}

type latencies struct{ ping, send, poll []time.Duration }

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) String() string {
	all := slices.Concat(l.ping, l.send, l.poll)
	return fmt.Sprintf("%d loops; ping p50 %v p99 %v; send p50 %v p99 %v; poll p50 %v p99 %v; all p50 %v p99 %v max %v",
		len(l.ping), pct(l.ping, .5), pct(l.ping, .99), pct(l.send, .5), pct(l.send, .99),
		pct(l.poll, .5), pct(l.poll, .99), pct(all, .5), pct(all, .99), pct(all, 1))
}

// healthyLoop runs ping, send (10 × 1000 B), poll (10 messages) in lockstep
// for d on an already logged-in client and records each latency.
func healthyLoop(t *testing.T, c *client.Client, d time.Duration) latencies {
	t.Helper()
	ctx := testCtx(t)
	msgs := makeLargeMessages(10, 1000)
	poll := wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
		Partition: wire.SomePartition(1), Strategy: wire.PollingStrategy{Kind: wire.PollLast}, Count: 10}
	var l latencies
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		start := time.Now()
		must(t, c.Ping(ctx))
		l.ping = append(l.ping, time.Since(start))
		start = time.Now()
		_, err := c.SendMessages(ctx, id(0), id(0), partitionID(1), msgs)
		must(t, err)
		l.send = append(l.send, time.Since(start))
		start = time.Now()
		_, err = c.PollMessages(ctx, poll)
		must(t, err)
		l.poll = append(l.poll, time.Since(start))
	}
	return l
}

// measureServer boots a server with a topic of two partitions: partition 0
// holds fill MB of 1000-byte messages for the attackers, partition 1 is the
// healthy neighbour's.
func measureServer(t *testing.T, fillMB int) (*server, *client.Client) {
	// Extra server env for experiments: LODESTREAM_MEASURE_ENV="K=V K=V".
	srv := startServer(t, "", strings.Fields(os.Getenv("LODESTREAM_MEASURE_ENV"))...)
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)
	batch := makeLargeMessages(1000, 1000)
	for range fillMB {
		_, err := c.SendMessages(ctx, id(0), id(0), partitionID(0), batch)
		must(t, err)
	}
	sendOK(t, c, id(0), id(0), partitionID(1), makeLargeMessages(10, 1000))
	return srv, c
}

// Target of point 2: 16 clients that pipeline large polls and never read
// keep the server under 1 GB RSS, and a healthy neighbour's ping/send/poll
// p99 under 5 ms.
func TestMeasureNeverReadingPollers(t *testing.T) {
	measureEnabled(t)
	srv, c := measureServer(t, 64)
	pid := srv.cmd.Process.Pid
	d := measureDuration()
	t.Logf("baseline: %s", healthyLoop(t, c, d/4))

	stop := make(chan struct{})
	maxRSS := sampleRSS(pid, stop)
	var wg sync.WaitGroup
	var reconnects atomic.Int64
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := dialRawFrom(t, srv.addr, fmt.Sprintf("127.0.0.%d", 2+i%4))
				session := p.login()
				poll := wire.PollMessagesRequest{Consumer: firstConsumer, Stream: id(0), Topic: id(0),
					Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: uint64(i) * 1000}, Count: 7000}
				frame := p.request(wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CodePollMessages,
					Session: session, Request: 1}, poll.Append(nil))
				closed := context.AfterFunc(stopCtx(stop), func() { _ = p.c.Close() })
				for {
					_ = p.c.SetWriteDeadline(time.Time{})
					if _, err := p.c.Write(frame); err != nil {
						break
					}
				}
				closed()
				_ = p.c.Close()
				reconnects.Add(1)
			}
		}()
	}
	time.Sleep(3 * time.Second) // let the queues fill
	under := healthyLoop(t, c, d)
	close(stop)
	wg.Wait()
	_, peak := rssBytes(pid)
	t.Logf("16 never-reading pollers (7 MB replies): %s", under)
	t.Logf("server RSS: max sampled %d MB, VmHWM %d MB; attacker reconnects %d",
		maxRSS.Load()>>20, peak>>20, reconnects.Load()-16)
}

func stopCtx(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	return ctx
}

// Target of point 4: with eight wrong-password loops running (eight source
// addresses, eight usernames), a logged-in client's p99 stays under 5 ms.
func TestMeasureLoginStorm(t *testing.T) {
	measureEnabled(t)
	srv, c := measureServer(t, 1)
	d := measureDuration()
	t.Logf("baseline: %s", healthyLoop(t, c, d/4))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var attempts, evictions atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := dialRawFrom(t, srv.addr, fmt.Sprintf("127.0.0.%d", 2+i))
				a.registerAs(fmt.Sprintf("iggy%d", i), "wrong-password")
				attempts.Add(1)
				if f, err := a.tryRead(30 * time.Second); err == nil {
					if _, err := wire.DecodeEviction(f); err == nil {
						evictions.Add(1)
					}
				}
				_ = a.c.Close()
			}
		}()
	}
	time.Sleep(time.Second)
	under := healthyLoop(t, c, d)
	close(stop)
	wg.Wait()
	t.Logf("8 wrong-password loops: %s", under)
	t.Logf("login attempts %d, answered by eviction %d (%.0f/s)", attempts.Load(), evictions.Load(),
		float64(attempts.Load())/(d+time.Second).Seconds())
}
