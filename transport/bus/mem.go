package bus

import (
	"sync"

	"github.com/lodestream/lodestream/consensus"
)

// MemNetwork joins in-memory buses for a deterministic whole-node
// simulator. Send encodes the message with the real codec and queues the
// frame (bounded per ordered pair by peer_queue_capacity, drops counted as
// on the TCP bus); nothing moves until the driver calls Deliver, which
// decodes and hands frames over in global send order. Faults (drop, delay,
// reorder) are the driver's: it decides when and how much to deliver, and
// Drop can discard frames in flight.
type MemNetwork struct {
	codec           *Codec
	capacity        int
	maxMessageBytes uint64

	mu      sync.Mutex
	buses   map[uint8]*MemBus
	queue   []memFrame
	inQueue map[[2]uint8]int
}

type memFrame struct {
	from, to uint8
	frame    []byte
}

// NewMemNetwork returns an empty network for cluster with the TCP bus's
// per-peer queue bound and frame size bound.
func NewMemNetwork(cluster consensus.Uint128, peerQueueCapacity int, maxMessageBytes uint64) *MemNetwork {
	return &MemNetwork{codec: NewCodec(cluster), capacity: max(peerQueueCapacity, 1), maxMessageBytes: maxMessageBytes,
		buses: map[uint8]*MemBus{}, inQueue: map[[2]uint8]int{}}
}

// Join attaches replica id; onMessage receives its frames during Deliver.
// Forward and fetch frames to it are counted (FramesDroppedNoHandler) and
// dropped.
func (n *MemNetwork) Join(id uint8, onMessage func(consensus.Message)) *MemBus {
	return n.JoinWithForward(id, onMessage, nil)
}

// JoinWithForward attaches replica id; during Deliver, onMessage receives
// its consensus messages and onForward its forward frames (nil: counted and
// dropped, as on the TCP bus without Options.OnForward). Fetch frames to it
// are counted and dropped.
func (n *MemNetwork) JoinWithForward(id uint8, onMessage func(consensus.Message), onForward func(Forward)) *MemBus {
	return n.JoinWithFetch(id, onMessage, onForward, nil)
}

// JoinWithFetch attaches replica id; during Deliver, onMessage receives its
// consensus messages, onForward its forward frames and onFetch its fetch
// frames (a nil handler: its frames are counted and dropped, as on the TCP
// bus without Options.OnForward / Options.OnFetch).
func (n *MemNetwork) JoinWithFetch(id uint8, onMessage func(consensus.Message), onForward func(Forward),
	onFetch func(Fetch)) *MemBus {
	b := &MemBus{net: n, id: id, onMessage: onMessage, onForward: onForward, onFetch: onFetch}
	n.mu.Lock()
	n.buses[id] = b
	n.mu.Unlock()
	return b
}

// Pending is the number of frames in flight.
func (n *MemNetwork) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.queue)
}

// Drop discards the in-flight frames for which drop(from, to) is true.
func (n *MemNetwork) Drop(drop func(from, to uint8) bool) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	kept := n.queue[:0]
	dropped := 0
	for _, f := range n.queue {
		if drop(f.from, f.to) {
			n.inQueue[[2]uint8{f.from, f.to}]--
			dropped++
			continue
		}
		kept = append(kept, f)
	}
	clear(n.queue[len(kept):])
	n.queue = kept
	return dropped
}

// Deliver hands over up to limit frames (all if limit <= 0) in send order
// and returns how many it delivered. Callbacks run on the caller's
// goroutine, outside the network's lock (they may Send).
func (n *MemNetwork) Deliver(limit int) int {
	delivered := 0
	for limit <= 0 || delivered < limit {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.mu.Unlock()
			break
		}
		f := n.queue[0]
		n.queue[0] = memFrame{}
		n.queue = n.queue[1:]
		n.inQueue[[2]uint8{f.from, f.to}]--
		dst := n.buses[f.to]
		n.mu.Unlock()
		delivered++
		if dst == nil || dst.isClosed() {
			continue
		}
		if IsForwardCommand(FrameCommand(f.frame)) {
			dst.receiveForward(n.codec, f)
			continue
		}
		if IsFetchCommand(FrameCommand(f.frame)) {
			dst.receiveFetch(n.codec, f)
			continue
		}
		m, err := n.codec.Decode(f.frame)
		if err != nil || m.From != f.from {
			dst.stats.framesInvalid.Add(1)
			continue
		}
		m.To = f.to
		dst.stats.framesReceived.Add(1)
		dst.onMessage(m)
	}
	return delivered
}

func (b *MemBus) receiveForward(codec *Codec, f memFrame) {
	fw, err := codec.DecodeForward(f.frame)
	if err != nil || fw.From != f.from {
		b.stats.framesInvalid.Add(1)
		return
	}
	if b.onForward == nil {
		b.stats.droppedNoHandler.Add(1)
		return
	}
	fw.To = f.to
	b.stats.framesReceived.Add(1)
	b.onForward(fw)
}

func (b *MemBus) receiveFetch(codec *Codec, f memFrame) {
	ft, err := codec.DecodeFetch(f.frame)
	if err != nil || ft.From != f.from {
		b.stats.framesInvalid.Add(1)
		return
	}
	if b.onFetch == nil {
		b.stats.droppedNoHandler.Add(1)
		return
	}
	ft.To = f.to
	b.stats.framesReceived.Add(1)
	b.onFetch(ft)
}

// MemBus is one replica's endpoint on a MemNetwork.
type MemBus struct {
	net       *MemNetwork
	id        uint8
	onMessage func(consensus.Message)
	onForward func(Forward)
	onFetch   func(Fetch)
	stats     counters
	mu        sync.Mutex
	closed    bool
}

var _ Bus = (*MemBus)(nil)

// Send implements Bus.
func (b *MemBus) Send(to uint8, m *consensus.Message) {
	n := b.net
	if !b.Connected(to) {
		b.stats.droppedNotConnected.Add(1)
		return
	}
	if size := EncodedSize(m); uint64(size) > n.maxMessageBytes {
		b.stats.droppedOversize.Add(1)
		return
	}
	frame, err := n.codec.Encode(nil, m)
	if err != nil {
		b.stats.droppedEncode.Add(1)
		return
	}
	b.enqueue(to, frame)
}

// SendForward implements Bus.
func (b *MemBus) SendForward(to uint8, f *Forward) {
	if !b.Connected(to) {
		b.stats.droppedNotConnected.Add(1)
		return
	}
	frame, err := b.net.codec.EncodeForward(nil, f)
	if err != nil {
		b.stats.droppedEncode.Add(1)
		return
	}
	if uint64(len(frame)) > b.net.maxMessageBytes {
		b.stats.droppedOversize.Add(1)
		return
	}
	b.enqueue(to, frame)
}

// SendFetch implements Bus: as on the TCP bus, a frame above
// max_message_size is dropped as oversize before it is encoded.
func (b *MemBus) SendFetch(to uint8, f *Fetch) {
	if !b.Connected(to) {
		b.stats.droppedNotConnected.Add(1)
		return
	}
	if size := FetchEncodedSize(f); uint64(size) > b.net.maxMessageBytes {
		b.stats.droppedOversize.Add(1)
		return
	}
	frame, err := b.net.codec.EncodeFetch(nil, f)
	if err != nil {
		b.stats.droppedEncode.Add(1)
		return
	}
	b.enqueue(to, frame)
}

// enqueue queues a frame from b to replica to, or drops and counts it when
// that ordered pair already holds peer_queue_capacity frames.
func (b *MemBus) enqueue(to uint8, frame []byte) {
	n := b.net
	n.mu.Lock()
	defer n.mu.Unlock()
	key := [2]uint8{b.id, to}
	if n.inQueue[key] >= n.capacity {
		b.stats.droppedQueueFull.Add(1)
		return
	}
	n.inQueue[key]++
	n.queue = append(n.queue, memFrame{from: b.id, to: to, frame: frame})
	b.stats.noteBatch(1)
}

// Connected implements Bus: the peer joined and neither side closed.
func (b *MemBus) Connected(to uint8) bool {
	if to == b.id || b.isClosed() {
		return false
	}
	b.net.mu.Lock()
	peer := b.net.buses[to]
	b.net.mu.Unlock()
	return peer != nil && !peer.isClosed()
}

// Stats implements Bus.
func (b *MemBus) Stats() Stats { return b.stats.snapshot() }

// Close implements Bus: the endpoint leaves the network.
func (b *MemBus) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.net.mu.Lock()
	if b.net.buses[b.id] == b {
		delete(b.net.buses, b.id)
	}
	b.net.mu.Unlock()
	return nil
}

func (b *MemBus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
