package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/consensus"
)

// Bus is what the node needs from the replica transport. The TCP bus and
// an in-memory bus (a deterministic whole-node simulator) both satisfy it.
// Received messages arrive through the OnMessage callback the bus was
// built with, forward frames through OnForward, fetch frames through
// OnFetch.
type Bus interface {
	// Send queues m for replica to without blocking. A message that cannot
	// be queued (no connection, full queue, too large) is dropped and
	// counted; VSR retransmission covers the loss.
	Send(to uint8, m *consensus.Message)
	// SendShared queues m for every replica of to, encoded once (a
	// broadcast prepare); each peer is dropped and counted as Send would.
	SendShared(to []uint8, m *consensus.Message)
	// SendForward queues a forward frame for replica to, without blocking,
	// on the same queue as Send and with the same drop accounting. A lost
	// forward is the sender's to retry (it parks with a deadline).
	SendForward(to uint8, f *Forward)
	// SendFetch queues a fetch frame for replica to, without blocking, on
	// the same queue as Send and with the same drop accounting (a reply
	// above max_message_size is dropped as oversize). A lost fetch is the
	// requester's to retry.
	SendFetch(to uint8, f *Fetch)
	// Connected reports whether a live connection to replica to exists.
	Connected(to uint8) bool
	// Stats snapshots the counters.
	Stats() Stats
	// Close stops the bus and waits (bounded) for its goroutines.
	Close() error
}

// Options configures a TCP bus.
type Options struct {
	Cluster consensus.Uint128 // ClusterID([cluster] name)
	SelfID  uint8
	// Peers maps every roster replica id (self included, replica ids are
	// exactly 0..n-1) to its tcp_replica address "ip:port".
	Peers map[uint8]string
	// Listener, if set, is used instead of binding Peers[SelfID] (tests
	// bind port 0). The bus closes it.
	Listener net.Listener

	MessageBus config.MessageBusConfig
	Auth       *Auth      // nil: [cluster.auth] off
	TLS        *TLSConfig // nil: [cluster.tls] off
	Logger     *slog.Logger
	// OnMessage receives every valid frame, on the connection's reader
	// goroutine, in arrival order per peer; To is set to SelfID. It must
	// not block for long (hand the message to an inbox).
	OnMessage func(consensus.Message)
	// OnForward receives every valid forward frame (commands 26–29), on
	// the same reader goroutine as OnMessage and in the same per-peer
	// order; To is set to SelfID. It must not block for long. Nil: forward
	// frames are counted (FramesDroppedNoHandler) and dropped.
	OnForward func(Forward)
	// OnFetch receives every valid fetch frame (commands 30–31), on the
	// same reader goroutine and in the same per-peer order as OnMessage;
	// To is set to SelfID. A reply's Records are freshly allocated per
	// frame. It must not block for long. Nil: fetch frames are counted
	// (FramesDroppedNoHandler) and dropped.
	OnFetch func(Fetch)
}

// OptionsFromConfig builds the options of replica selfID from a validated
// cluster configuration (roster, [message_bus], [cluster.auth],
// [cluster.tls]). Logger, OnMessage, OnForward and OnFetch are left to the
// caller.
func OptionsFromConfig(cfg *config.Config, selfID uint8) (Options, error) {
	opts := Options{Cluster: ClusterID(cfg.Cluster.Name), SelfID: selfID, Peers: map[uint8]string{},
		MessageBus: cfg.MessageBus}
	var selfIP string
	for _, node := range cfg.Cluster.Nodes {
		port, ok := node.Ports.Get(config.TransportTCPReplica)
		if !ok {
			return opts, fmt.Errorf("replica bus: cluster node %q has no ports.tcp_replica", node.Name)
		}
		ip, err := netip.ParseAddr(node.IP)
		if err != nil {
			return opts, fmt.Errorf("replica bus: cluster node %q ip %q: %w", node.Name, node.IP, err)
		}
		opts.Peers[node.ReplicaID] = netip.AddrPortFrom(ip, port).String()
		if node.ReplicaID == selfID {
			selfIP = ip.String()
		}
	}
	if _, ok := opts.Peers[selfID]; !ok {
		return opts, fmt.Errorf("replica bus: replica id %d is not in the roster", selfID)
	}
	if a := cfg.Cluster.Auth; a.Enabled {
		opts.Auth = NewAuth([]byte(a.SharedSecret.Reveal()), []byte(a.PreviousSharedSecret.Reveal()))
	}
	if cfg.Cluster.TLS.Enabled {
		t, err := NewTLSConfig(cfg.Cluster.TLS, selfIP)
		if err != nil {
			return opts, err
		}
		opts.TLS = t
	}
	return opts, nil
}

// pendingHandshakesMax bounds inbound connections in their handshake at
// once (per roster peer, plus slack for a reconnect overlapping a stale
// socket); more are closed on accept.
const pendingHandshakesPerPeer = 4

// acceptBackoffMax bounds the pause after a failed Accept.
const acceptBackoffMax = time.Second

type peerSlot struct {
	id   uint8
	addr string
	ip   string
	conn atomic.Pointer[peerConn]
	// redial wakes this slot's dial loop (capacity 1) when its connection
	// is lost: a live peer that dropped a connection is back within a
	// round trip instead of a reconnect_period, so a lost connection
	// means a gone peer (metadata primary failure detection, node/).
	redial chan struct{}
}

// TCPBus is the replica bus over TCP (optionally TLS 1.3): one connection
// per replica pair, dialed by the lower id.
type TCPBus struct {
	codec     *Codec
	hs        handshaker
	tls       *TLSConfig
	log       *slog.Logger
	onMessage func(consensus.Message)
	onForward func(Forward) // nil: forward frames are dropped
	onFetch   func(Fetch)   // nil: fetch frames are dropped
	selfID    uint8
	peers     []*peerSlot // index = replica id; nil for self
	listener  net.Listener
	listenAt  string

	maxBatch         int
	queueCapacity    int
	queueBytesMax    int64
	maxMessageBytes  uint64
	reconnectPeriod  time.Duration
	closePeerTimeout time.Duration
	closeGrace       time.Duration
	handshakeGrace   time.Duration

	stats counters

	mu        sync.Mutex
	closed    bool
	cancel    context.CancelFunc
	pending   map[net.Conn]struct{} // connections in their handshake
	pendingMu chan struct{}         // semaphore of inbound handshakes
	wg        sync.WaitGroup        // accept loop, dial loops, handshakes, connection goroutines
}

var _ Bus = (*TCPBus)(nil)

// New builds a TCP bus; Start binds and runs it.
func New(opts Options) (*TCPBus, error) {
	n := len(opts.Peers)
	if n == 0 || n > consensusReplicasMax {
		return nil, fmt.Errorf("replica bus: roster of %d replicas (want 1..%d)", n, consensusReplicasMax)
	}
	for id := range opts.Peers {
		if int(id) >= n {
			return nil, fmt.Errorf("replica bus: replica id %d outside 0..%d", id, n-1)
		}
	}
	if _, ok := opts.Peers[opts.SelfID]; !ok {
		return nil, fmt.Errorf("replica bus: self replica id %d is not in the roster", opts.SelfID)
	}
	mb := opts.MessageBus
	if mb.MaxBatch == 0 || mb.PeerQueueCapacity == 0 || mb.PeerQueueBytesMax.Bytes() == 0 || mb.MaxMessageSize.Bytes() <= HeaderBytes ||
		mb.ReconnectPeriod.Duration <= 0 || mb.ClosePeerTimeout.Duration <= 0 ||
		mb.CloseGrace.Duration <= 0 || mb.HandshakeGrace.Duration <= 0 {
		return nil, errors.New("replica bus: [message_bus] has a zero value (config validation should have refused it)")
	}
	if opts.OnMessage == nil {
		return nil, errors.New("replica bus: OnMessage is nil")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &TCPBus{
		codec:            NewCodec(opts.Cluster),
		hs:               handshaker{cluster: opts.Cluster, selfID: opts.SelfID, replicaCount: uint8(n), auth: opts.Auth},
		tls:              opts.TLS,
		log:              log.With("component", "replica_bus", "replica", opts.SelfID),
		onMessage:        opts.OnMessage,
		onForward:        opts.OnForward,
		onFetch:          opts.OnFetch,
		selfID:           opts.SelfID,
		peers:            make([]*peerSlot, n),
		listener:         opts.Listener,
		listenAt:         opts.Peers[opts.SelfID],
		maxBatch:         int(min(mb.MaxBatch, 1<<16)),
		queueCapacity:    int(min(mb.PeerQueueCapacity, 1<<24)),
		queueBytesMax:    int64(min(mb.PeerQueueBytesMax.Bytes(), 1<<62)),
		maxMessageBytes:  mb.MaxMessageSize.Bytes(),
		reconnectPeriod:  mb.ReconnectPeriod.Duration,
		closePeerTimeout: mb.ClosePeerTimeout.Duration,
		closeGrace:       mb.CloseGrace.Duration,
		handshakeGrace:   mb.HandshakeGrace.Duration,
		pending:          map[net.Conn]struct{}{},
		pendingMu:        make(chan struct{}, pendingHandshakesPerPeer*n),
	}
	for id, addr := range opts.Peers {
		if id == opts.SelfID {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("replica bus: replica %d address %q: %w", id, addr, err)
		}
		b.peers[id] = &peerSlot{id: id, addr: addr, ip: host, redial: make(chan struct{}, 1)}
	}
	return b, nil
}

// consensusReplicasMax is the replica ceiling (server-design §1.1).
const consensusReplicasMax = 32

// Addr is the bound listener address (after Start).
func (b *TCPBus) Addr() net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listener == nil {
		return nil
	}
	return b.listener.Addr()
}

// Start binds the tcp_replica listener (unless Options.Listener was given)
// and starts accepting and dialing every higher replica id. ctx cancels
// the loops; Close also does.
func (b *TCPBus) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("replica bus: start after close")
	}
	if b.cancel != nil {
		return errors.New("replica bus: started twice")
	}
	if b.listener == nil {
		ln, err := net.Listen("tcp", b.listenAt)
		if err != nil {
			return fmt.Errorf("replica bus: listen on tcp_replica %s: %w", b.listenAt, err)
		}
		b.listener = ln
	}
	ctx, b.cancel = context.WithCancel(ctx)
	b.log.Info("replica bus listening", "addr", b.listener.Addr().String(),
		"auth", b.hs.auth != nil, "tls", b.tls != nil)
	b.wg.Add(1)
	go b.acceptLoop(ctx, b.listener)
	for _, p := range b.peers {
		if p != nil && p.id > b.selfID {
			b.wg.Add(1)
			go b.dialLoop(ctx, p)
		}
	}
	return nil
}

// SendShared implements Bus: one encoding, the same (read-only) frame in
// every peer's queue.
func (b *TCPBus) SendShared(to []uint8, m *consensus.Message) {
	if size := EncodedSize(m); uint64(size) > b.maxMessageBytes {
		b.stats.droppedOversize.Add(uint64(len(to)))
		b.log.Warn("dropping replica frame above max_message_size", "peers", to, "kind", m.Kind,
			"size", size, "max_message_size", b.maxMessageBytes)
		return
	}
	var frame outFrame
	for _, t := range to {
		if int(t) >= len(b.peers) || b.peers[t] == nil {
			b.stats.droppedNotConnected.Add(1)
			continue
		}
		pc := b.peers[t].conn.Load()
		if pc == nil {
			b.stats.droppedNotConnected.Add(1)
			continue
		}
		if frame.head == nil {
			var err error
			if frame.head, frame.body, err = b.codec.EncodeSplit(m); err != nil {
				b.stats.droppedEncode.Add(uint64(len(to)))
				b.log.Error("dropping replica message that does not encode", "kind", m.Kind, "err", err)
				return
			}
		}
		if !pc.enqueue(frame) {
			b.stats.droppedQueueFull.Add(1)
		}
	}
}

// Send implements Bus.
func (b *TCPBus) Send(to uint8, m *consensus.Message) {
	b.sendFrame(to, EncodedSize(m), "replica message", m.Kind, func() (outFrame, error) {
		head, body, err := b.codec.EncodeSplit(m)
		return outFrame{head, body}, err
	})
}

// SendForward implements Bus. A forward frame is HeaderBytes long, below
// any max_message_size New accepts, so it is never dropped as oversize.
func (b *TCPBus) SendForward(to uint8, f *Forward) {
	b.sendFrame(to, HeaderBytes, "forward frame", f.Kind, func() (outFrame, error) {
		head, err := b.codec.EncodeForward(nil, f)
		return outFrame{head: head}, err
	})
}

// SendFetch implements Bus. A reply whose frame exceeds max_message_size is
// dropped (FramesDroppedOversize) before it is encoded.
func (b *TCPBus) SendFetch(to uint8, f *Fetch) {
	b.sendFrame(to, FetchEncodedSize(f), "fetch frame", f.Kind, func() (outFrame, error) {
		head, err := b.codec.EncodeFetch(nil, f)
		return outFrame{head: head}, err
	})
}

// sendFrame is the one path of Send, SendForward and SendFetch: dropped
// and counted when replica to is unknown or not connected, when the frame
// (size bytes) is above max_message_size, or when it does not encode;
// otherwise queued without blocking (a full queue drops and counts).
func (b *TCPBus) sendFrame(to uint8, size int, what string, kind any, encode func() (outFrame, error)) {
	if int(to) >= len(b.peers) || b.peers[to] == nil {
		b.stats.droppedNotConnected.Add(1)
		return
	}
	if uint64(size) > b.maxMessageBytes {
		b.stats.droppedOversize.Add(1)
		b.log.Warn("dropping "+what+" above max_message_size", "peer", to, "kind", kind,
			"size", size, "max_message_size", b.maxMessageBytes)
		return
	}
	pc := b.peers[to].conn.Load()
	if pc == nil {
		b.stats.droppedNotConnected.Add(1)
		return
	}
	frame, err := encode()
	if err != nil {
		b.stats.droppedEncode.Add(1)
		b.log.Error("dropping "+what+" that does not encode", "peer", to, "kind", kind, "err", err)
		return
	}
	if !pc.enqueue(frame) {
		b.stats.droppedQueueFull.Add(1)
	}
}

// Connected implements Bus.
func (b *TCPBus) Connected(to uint8) bool {
	return int(to) < len(b.peers) && b.peers[to] != nil && b.peers[to].conn.Load() != nil
}

// Stats implements Bus.
func (b *TCPBus) Stats() Stats { return b.stats.snapshot() }

// QueueDepth is how many frames wait in the send queue to replica to
// (0 without a live connection); a gauge for metrics.
func (b *TCPBus) QueueDepth(to uint8) int {
	if int(to) >= len(b.peers) || b.peers[to] == nil {
		return 0
	}
	if pc := b.peers[to].conn.Load(); pc != nil {
		return len(pc.queue)
	}
	return 0
}

// Close stops accepting and dialing, closes every connection gracefully
// (flush within close_peer_timeout, shutdown within close_grace) and waits
// for the bus's goroutines, at most close_peer_timeout + close_grace + 1s.
func (b *TCPBus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if b.cancel != nil {
		b.cancel()
	}
	var err error
	if b.listener != nil {
		err = b.listener.Close()
	}
	for nc := range b.pending {
		_ = nc.Close()
	}
	b.mu.Unlock()

	deadline := time.NewTimer(b.closePeerTimeout + b.closeGrace + time.Second)
	defer deadline.Stop()
	var conns []*peerConn
	for _, p := range b.peers {
		if p == nil {
			continue
		}
		if pc := p.conn.Load(); pc != nil {
			conns = append(conns, pc)
		}
	}
	var closing sync.WaitGroup
	for _, pc := range conns {
		closing.Add(1)
		go func() {
			defer closing.Done()
			pc.close(true)
		}()
	}
	closing.Wait()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-deadline.C:
		b.log.Warn("replica bus goroutines still running after close")
		return errors.Join(err, errors.New("replica bus: close timed out"))
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (b *TCPBus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// track registers a connection in its handshake so Close can cut it;
// false when the bus is closed.
func (b *TCPBus) track(nc net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.pending[nc] = struct{}{}
	return true
}

func (b *TCPBus) untrack(nc net.Conn) {
	b.mu.Lock()
	delete(b.pending, nc)
	b.mu.Unlock()
}

func (b *TCPBus) acceptLoop(ctx context.Context, ln net.Listener) {
	defer b.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			b.log.Warn("replica accept failed", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, acceptBackoffMax)
			continue
		}
		backoff = 5 * time.Millisecond
		select {
		case b.pendingMu <- struct{}{}:
		default:
			b.stats.acceptsShed.Add(1)
			b.log.Warn("too many replica handshakes pending: closing inbound connection", "remote", nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() { <-b.pendingMu }()
			b.acceptConn(nc)
		}()
	}
}

// acceptConn runs TLS (if on) and the acceptor handshake within
// handshake_grace, then installs the connection.
func (b *TCPBus) acceptConn(raw net.Conn) {
	if !b.track(raw) {
		_ = raw.Close()
		return
	}
	defer b.untrack(raw)
	remote := raw.RemoteAddr().String()
	_ = raw.SetDeadline(time.Now().Add(b.handshakeGrace))
	conn := raw
	var binding Binding
	if b.tls != nil {
		tc := tls.Server(raw, b.tls.Server)
		var err error
		if binding, err = tlsBinding(tc); err != nil {
			b.refused(&HandshakeError{Reason: tlsRefusal(err), Err: err}, "acceptor", remote)
			_ = raw.Close()
			return
		}
		conn = tc
	}
	peer, herr := b.hs.accept(conn, binding)
	if herr != nil {
		b.refused(herr, "acceptor", remote)
		_ = raw.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	b.install(peer, conn, remote, "acceptor")
}

func tlsRefusal(err error) Refusal {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return RefusedTimeout
	}
	return RefusedTLS
}

// refused counts and logs a failed handshake. Only the reason, the peer id
// and the remote address are logged: never keys, nonces or MACs.
func (b *TCPBus) refused(e *HandshakeError, side, remote string) {
	b.stats.refused[e.Reason].Add(1)
	attrs := []any{"side", side, "peer", e.Peer, "remote", remote, "reason", e.Reason.String()}
	if e.Reason == RefusedByPeer {
		attrs = append(attrs, "status", e.Status.String())
	}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err)
	}
	b.log.Warn("replica handshake refused", attrs...)
}

func (b *TCPBus) dialLoop(ctx context.Context, p *peerSlot) {
	defer b.wg.Done()
	timer := time.NewTimer(b.reconnectPeriod)
	defer timer.Stop()
	var lastDial time.Time
	// Until the peer was first reached, failed dials are retried after
	// firstDialGap, doubling up to reconnect_period: nodes started
	// together otherwise waited a whole period for a peer whose listener
	// was a millisecond late, and a quorum could form and take writes
	// without it, so that it then joined as a replica that lost its
	// storage (bench/cost.sh runs saw it).
	gap, reached := firstDialGap, false
	for {
		if p.conn.Load() == nil {
			lastDial = time.Now()
			b.dialOnce(ctx, p)
		}
		wait := b.reconnectPeriod
		if p.conn.Load() != nil {
			reached = true
		} else if !reached {
			wait, gap = min(gap, b.reconnectPeriod), min(2*gap, b.reconnectPeriod)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.redial:
			// A connection that keeps dropping is redialed at most every
			// redialGapMin.
			if wait := redialGapMin - time.Since(lastDial); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}
}

// redialGapMin spaces redials that lost connections trigger.
const redialGapMin = 100 * time.Millisecond

// firstDialGap is the first pause after a failed dial of a peer never
// reached yet (dialLoop).
const firstDialGap = 50 * time.Millisecond

// dialOnce connects to p and runs TLS (if on) and the dialer handshake, all
// within handshake_grace.
func (b *TCPBus) dialOnce(ctx context.Context, p *peerSlot) {
	ctx, cancel := context.WithTimeout(ctx, b.handshakeGrace)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		b.stats.dialFailures.Add(1)
		b.log.Debug("replica dial failed", "peer", p.id, "addr", p.addr, "err", err)
		return
	}
	if !b.track(raw) {
		_ = raw.Close()
		return
	}
	defer b.untrack(raw)
	deadline, _ := ctx.Deadline()
	_ = raw.SetDeadline(deadline)
	conn := raw
	var binding Binding
	if b.tls != nil {
		tc := tls.Client(raw, b.tls.Client(p.ip))
		if binding, err = tlsBinding(tc); err != nil {
			b.refused(&HandshakeError{Reason: tlsRefusal(err), Peer: p.id, Err: err}, "dialer", p.addr)
			_ = raw.Close()
			return
		}
		conn = tc
	}
	if herr := b.hs.dial(conn, p.id, binding); herr != nil {
		b.refused(herr, "dialer", p.addr)
		_ = raw.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	b.install(p.id, conn, p.addr, "dialer")
}

// install makes conn the live connection to peer, replacing (and closing)
// an older one: a peer that restarted reconnects before the old socket
// notices.
func (b *TCPBus) install(peer uint8, conn net.Conn, remote, side string) {
	slot := b.peers[peer]
	pc := newPeerConn(b, peer, conn)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = conn.Close()
		return
	}
	old := slot.conn.Swap(pc)
	pc.start()
	b.mu.Unlock()
	if side == "dialer" {
		b.stats.dialed.Add(1)
	} else {
		b.stats.accepted.Add(1)
	}
	b.log.Info("replica connected", "peer", peer, "remote", remote, "side", side)
	if old != nil {
		old.close(false)
	}
}

// forget drops pc from its slot if it is still the live connection.
func (b *TCPBus) forget(pc *peerConn) {
	slot := b.peers[pc.peer]
	if slot != nil && slot.conn.CompareAndSwap(pc, nil) {
		select {
		case slot.redial <- struct{}{}:
		default: // one is pending already
		}
	}
}

// PeersFromAddrs is a helper for tests and tools: replica id i at addrs[i].
func PeersFromAddrs(addrs ...string) map[uint8]string {
	m := make(map[uint8]string, len(addrs))
	for i, a := range addrs {
		m[uint8(i)] = a
	}
	return m
}
