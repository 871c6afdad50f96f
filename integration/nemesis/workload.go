package nemesis

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// The workload's names.
var (
	streamID = wire.NamedID("nemesis")
	topicID  = wire.NamedID("t")
	groupID  = wire.NamedID("g")
)

const (
	attemptsMax     = 6                // sends of one batch before it is given up (left to the checker as "unknown")
	requestBudget   = 10 * time.Second // a client's budget per request (WithResponseTimeout)
	rawReplyTimeout = 10 * time.Second
)

// WorkloadConfig sizes the clients.
type WorkloadConfig struct {
	Partitions       uint32
	LeaderProducers  int
	SDKProducers     int
	Consumers        int
	BatchMessagesMax int
	PayloadBytes     int // padding after the unique tag
	// Pace is the pause between two sends of one producer (0: none).
	Pace time.Duration
	// ExactlyOnce: the leader-aware producers re-send a batch only after a
	// 58 (never admitted); after any other failure the client has already
	// replayed it under the same request id, so a new send could store it
	// twice (client.ExactlyOnceError), and the batch is given up.
	ExactlyOnce bool
	// Durability is the topic's durability and consumer_offset_durability
	// ("replicated" or "persisted"; "" is the server's default, replicated).
	Durability string
}

// Workload runs the clients against a cluster and records into a History.
type Workload struct {
	cfg   WorkloadConfig
	addrs []string
	nodes []*Node
	hist  *History
	log   *slog.Logger
	wg    sync.WaitGroup

	storeMu   []sync.Mutex // per partition: stores are sent one at a time, each above every earlier one
	storeHigh []uint64
	storeAny  []bool
}

// NewWorkload prepares the clients (Setup creates the topic and the group).
func NewWorkload(cfg WorkloadConfig, c *Cluster, hist *History, log *slog.Logger) *Workload {
	return &Workload{cfg: cfg, addrs: c.Addrs(), nodes: c.Nodes, hist: hist, log: log,
		storeMu: make([]sync.Mutex, cfg.Partitions), storeHigh: make([]uint64, cfg.Partitions), storeAny: make([]bool, cfg.Partitions)}
}

func (w *Workload) dialCluster(ctx context.Context, opts ...client.Option) (*client.Client, error) {
	return client.DialCluster(ctx, w.addrs, append([]client.Option{client.WithCredentials("iggy", "iggy"),
		client.WithResponseTimeout(requestBudget), client.WithDialTimeout(2 * time.Second)}, opts...)...)
}

// Setup creates the stream, the topic and the consumer group, retrying
// until within passes (an "already exists" answer to a retry is success).
func (w *Workload) Setup(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	step := func(name string, f func(c *client.Client) error) error {
		var last error
		for time.Now().Before(deadline) {
			c, err := w.dialCluster(ctx)
			if err == nil {
				err = f(c)
				c.Close()
				if err == nil {
					return nil
				}
			}
			last = err
			time.Sleep(300 * time.Millisecond)
		}
		return fmt.Errorf("setup: %s: %w", name, last)
	}
	exists := func(err error) bool {
		code := client.CodeOf(err)
		return code == wire.ErrStreamNameAlreadyExists || code == wire.ErrTopicNameAlreadyExists || code == wire.ErrConsumerGroupNameAlreadyExists
	}
	if err := step("create stream", func(c *client.Client) error {
		_, err := c.CreateStream(ctx, "nemesis")
		if exists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	if err := step("create topic", func(c *client.Client) error {
		var opts []wire.Option
		if d := w.cfg.Durability; d != "" {
			opts = append(opts, wire.Option{Key: "durability", Kind: wire.KindString, Value: []byte(d)},
				wire.Option{Key: "consumer_offset_durability", Kind: wire.KindString, Value: []byte(d)})
		}
		_, err := c.CreateTopic(ctx, streamID, "t", w.cfg.Partitions, opts...)
		if exists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	return step("create group", func(c *client.Client) error {
		_, err := c.CreateConsumerGroup(ctx, streamID, topicID, "g")
		if exists(err) {
			return nil
		}
		return err
	})
}

// Start launches every client; they run until ctx ends. Wait waits for them.
func (w *Workload) Start(ctx context.Context) {
	for i := 0; i < w.cfg.LeaderProducers; i++ {
		w.wg.Add(1)
		go w.leaderProducer(ctx, i)
	}
	for i := 0; i < w.cfg.SDKProducers; i++ {
		w.wg.Add(1)
		go w.sdkProducer(ctx, i)
	}
	for i := 0; i < w.cfg.Consumers; i++ {
		w.wg.Add(1)
		go w.consumer(ctx, i)
	}
	w.wg.Add(1)
	go w.offsetMonitor(ctx)
}

// Wait waits for the clients to stop (bounded by their request budgets).
func (w *Workload) Wait() { w.wg.Wait() }

// newBatch builds the next batch of a producer: payloads "<name>-<seq>-<i>"
// padded to PayloadBytes, unique in the run.
func (w *Workload) newBatch(name string, kind ProducerKind, seq int) (*Batch, []wire.BatchMessageInput) {
	n := 1 + seq%w.cfg.BatchMessagesMax
	b := &Batch{Producer: name, Seq: seq, N: n, Kind: kind, Partition: uint32(seq) % w.cfg.Partitions}
	msgs := make([]wire.BatchMessageInput, n)
	for i := range msgs {
		msgs[i] = wire.BatchMessageInput{OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: w.hist.Payload(b, i)}
		_, _ = rand.Read(msgs[i].ID[:])
	}
	w.hist.NewBatch(b)
	return b, msgs
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// definitive reports an error that says the request was refused for good
// (a validation or permission error), as opposed to one whose outcome is
// unknown or that invites a retry.
func definitive(err error) bool {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Eviction != nil {
		return false
	}
	switch ce.Code {
	case wire.ErrTransientNotAccepted, wire.ErrTransientNotCommitted, wire.ErrDisconnected,
		wire.ErrCannotEstablishConnection, wire.ErrError, wire.ErrUnauthenticated:
		return false
	}
	return ce.Code != 0
}

// leaderProducer sends with our leader-aware client: every failed send is
// sent again (the same bytes from the client's point of view), up to
// attemptsMax times.
func (w *Workload) leaderProducer(ctx context.Context, idx int) {
	defer w.wg.Done()
	name := fmt.Sprintf("A%d", idx)
	events := newClientEvents()
	var c *client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for seq := 0; ctx.Err() == nil; seq++ {
		b, msgs := w.newBatch(name, LeaderAware, seq)
		for attempt := 0; attempt < attemptsMax && ctx.Err() == nil; attempt++ {
			if c == nil {
				var err error
				if c, err = w.dialCluster(ctx, client.WithLogger(slog.New(events))); err != nil {
					c = nil
					sleepCtx(ctx, 200*time.Millisecond)
					attempt-- // nothing was sent
					continue
				}
			}
			start := time.Now()
			events.take()
			conf, err := c.SendMessages(ctx, streamID, topicID, wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: b.Partition}, msgs)
			replays, resends, trace := events.take()
			if err != nil {
				trace = append(trace, fmt.Sprintf("call returned: %v", err))
			}
			w.hist.ClientEvents(b, replays, resends, trace)
			if err == nil && len(conf) == 1 {
				w.hist.Attempt(b, true, conf[0].BaseOffset, time.Since(start))
				break
			}
			if client.CodeOf(err) == wire.ErrTransientNotAccepted && replays == 0 {
				w.hist.Refused(b) // every node answered 58: never admitted
			} else {
				w.hist.Attempt(b, false, 0, 0)
			}
			if err == nil {
				w.hist.Violate("%s: send answered %d confirmations", name, len(conf))
				break
			}
			if definitive(err) {
				w.log.Warn("producer: send refused", "producer", name, "err", err)
				break
			}
			if w.cfg.ExactlyOnce && client.CodeOf(err) != wire.ErrTransientNotAccepted {
				break // outcome unknown after the client's own replays: stored once or not at all
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
		if w.cfg.Pace > 0 {
			sleepCtx(ctx, w.cfg.Pace)
		}
	}
}

// rawSession is one SDK-style connection: a fresh client id, the request
// id reused for every partition write (the Aug 2026 Go SDK).
type rawSession struct {
	conn    net.Conn
	client  wire.Uint128
	session uint64
}

func (w *Workload) rawDial(ctx context.Context, addr string) (*rawSession, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	s := &rawSession{conn: conn, client: wire.Uint128{Lo: binary.LittleEndian.Uint64(id[:]) | 1, Hi: binary.LittleEndian.Uint64(id[8:])}}
	body, err := wire.RegisterRequest{Kind: wire.RegisterWithPassword,
		Version:  wire.ClientVersionInfo{ProtocolVersion: wire.ProtocolVersion, SDKName: "nemesis-sdk-style", SDKVersion: "0.0.1"},
		Username: "iggy", Password: "iggy"}.Encode()
	if err != nil {
		conn.Close()
		return nil, err
	}
	status, payload, err := s.exchange(wire.RequestHeader{Operation: wire.OpRegister}, body)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if status != wire.OK {
		conn.Close()
		return nil, fmt.Errorf("register: status %s", status)
	}
	code, rest, err := wire.DecodeResult(payload)
	if err != nil || code != wire.OK {
		conn.Close()
		return nil, fmt.Errorf("register: result %s %v", code, err)
	}
	reply, err := wire.DecodeRegisterReply(rest)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s.session = reply.Session
	return s, nil
}

func (s *rawSession) exchange(h wire.RequestHeader, body []byte) (wire.ErrorCode, []byte, error) {
	if h.Client.IsZero() {
		h.Client = s.client
	}
	_ = s.conn.SetDeadline(time.Now().Add(rawReplyTimeout))
	if _, err := s.conn.Write(wire.EncodeRequest(nil, h, body)); err != nil {
		return 0, nil, err
	}
	for {
		f, err := wire.ReadFrame(s.conn, wire.FrameSizeMax)
		if err != nil {
			return 0, nil, err
		}
		if f.Command() == wire.CommandEviction {
			return 0, nil, errors.New("evicted")
		}
		rh, err := wire.DecodeReplyHeader(f.Header[:])
		if err != nil {
			return 0, nil, err
		}
		if rh.Request != h.Request {
			continue // a stale answer to an earlier replay
		}
		return rh.Status, f.Body, nil
	}
}

// sdkProducer sends like the upstream Go SDK: raw frames, request id 1 on
// every partition write, a new client id on every connection; 58 moves to
// the next node; 57 and lost connections are re-sent (at-least-once).
func (w *Workload) sdkProducer(ctx context.Context, idx int) {
	defer w.wg.Done()
	name := fmt.Sprintf("B%d", idx)
	node := idx % len(w.addrs)
	var s *rawSession
	drop := func() {
		if s != nil {
			s.conn.Close()
			s = nil
		}
	}
	defer drop()
	for seq := 0; ctx.Err() == nil; seq++ {
		b, msgs := w.newBatch(name, SDKStyle, seq)
		body, err := wire.AppendSendMessages(nil, streamID, topicID, wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: b.Partition}, msgs)
		if err != nil {
			w.hist.Violate("%s: encode: %v", name, err)
			return
		}
		for attempt := 0; attempt < attemptsMax && ctx.Err() == nil; attempt++ {
			if s == nil {
				if s, err = w.rawDial(ctx, w.addrs[node]); err != nil {
					s = nil
					node = (node + 1) % len(w.addrs)
					sleepCtx(ctx, 200*time.Millisecond)
					attempt--
					continue
				}
			}
			start := time.Now()
			status, payload, err := s.exchange(wire.RequestHeader{Operation: wire.OpSendMessages, Session: s.session, Request: 1}, body)
			if err == nil && status == wire.OK {
				conf, derr := wire.DecodeSendMessagesReply(payload)
				if derr != nil || len(conf) != 1 {
					w.hist.Attempt(b, false, 0, 0)
					w.hist.Violate("%s: bad confirmation %v %v", name, conf, derr)
					break
				}
				w.hist.Attempt(b, true, conf[0].BaseOffset, time.Since(start))
				break
			}
			if err == nil && status == wire.ErrTransientNotAccepted {
				w.hist.Refused(b)
			} else {
				w.hist.Attempt(b, false, 0, 0)
			}
			switch {
			case err != nil: // outcome unknown: a new connection, a new identity
				drop()
				node = (node + 1) % len(w.addrs)
			case status == wire.ErrTransientNotAccepted:
				drop()
				node = (node + 1) % len(w.addrs)
			case status == wire.ErrTransientNotCommitted:
				// replay the same bytes on the same connection
			case status == wire.ErrUnauthenticated || status == wire.ErrStaleClient:
				drop()
			default:
				w.log.Warn("sdk producer: send refused", "producer", name, "status", status)
				attempt = attemptsMax
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
		if w.cfg.Pace > 0 {
			sleepCtx(ctx, w.cfg.Pace)
		}
	}
}

// consumer is one member of group g on its own leader-aware client. It
// stores offsets manually through storeOffset (monotonic per partition
// across all members), and records every message it receives.
func (w *Workload) consumer(ctx context.Context, idx int) {
	defer w.wg.Done()
	for ctx.Err() == nil {
		c, err := w.dialCluster(ctx)
		if err != nil {
			sleepCtx(ctx, 300*time.Millisecond)
			continue
		}
		k, err := client.NewGroupConsumer(ctx, c, groupID, client.ConsumerConfig{Stream: streamID, Topic: topicID,
			BatchSize: 100, PollInterval: 50 * time.Millisecond, Commit: client.CommitManual})
		if err != nil {
			c.Close()
			sleepCtx(ctx, 300*time.Millisecond)
			continue
		}
		pending := map[uint32]uint64{}
		lastStore := time.Now()
		for ctx.Err() == nil {
			m, err := k.Next(ctx)
			if err != nil {
				break
			}
			w.hist.Polled(m.Partition, m.Offset, m.Payload)
			pending[m.Partition] = m.Offset
			if len(pending) > 0 && time.Since(lastStore) > 300*time.Millisecond {
				for p, off := range pending {
					if err := w.storeOffset(ctx, k, p, off); err != nil {
						break
					}
				}
				pending = map[uint32]uint64{}
				lastStore = time.Now()
			}
		}
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = k.Close(cctx)
		cancel()
		c.Close()
	}
}

// storeOffset stores offset for partition p only if it is above every
// store sent before (acknowledged or not), one store per partition at a
// time: whatever the server ends with, a decrease can only be its doing.
func (w *Workload) storeOffset(ctx context.Context, k *client.Consumer, p uint32, offset uint64) error {
	if p >= w.cfg.Partitions {
		return nil
	}
	w.storeMu[p].Lock()
	defer w.storeMu[p].Unlock()
	if w.storeAny[p] && offset <= w.storeHigh[p] {
		return nil
	}
	w.storeHigh[p], w.storeAny[p] = offset, true // sent: it may apply even if no ack comes
	if err := k.StoreOffset(ctx, p, offset); err != nil {
		return err
	}
	w.hist.OffsetStored(p, offset)
	return nil
}

// offsetMonitor reads the group's stored offsets on every running node, on
// connections to one process each, so that a reading belongs to one
// incarnation of the node.
func (w *Workload) offsetMonitor(ctx context.Context) {
	defer w.wg.Done()
	type conn struct {
		c           *client.Client
		incarnation int
	}
	conns := make([]conn, len(w.nodes))
	defer func() {
		for _, cn := range conns {
			if cn.c != nil {
				cn.c.Close()
			}
		}
	}()
	consumer := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: groupID}
	for ctx.Err() == nil {
		for i, n := range w.nodes {
			if !n.Running() || n.Paused() {
				continue
			}
			if conns[i].c == nil || conns[i].incarnation != n.Incarnation() {
				if conns[i].c != nil {
					conns[i].c.Close()
					conns[i].c = nil
				}
				before := n.Incarnation()
				c, err := client.Dial(ctx, n.Addr(), client.WithResponseTimeout(2*time.Second), client.WithDialTimeout(time.Second))
				if err != nil {
					continue
				}
				if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil || n.Incarnation() != before {
					c.Close()
					continue
				}
				conns[i] = conn{c: c, incarnation: before}
			}
			for p := uint32(0); p < w.cfg.Partitions; p++ {
				off, err := conns[i].c.GetConsumerOffset(ctx, consumer, streamID, topicID, wire.SomePartition(p))
				if err != nil {
					if client.CodeOf(err) == wire.ErrDisconnected || client.IsTimeout(err) {
						conns[i].c.Close()
						conns[i].c = nil
						break
					}
					continue
				}
				if off != nil {
					w.hist.OffsetRead(i, conns[i].incarnation, p, off.StoredOffset)
				}
			}
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}
