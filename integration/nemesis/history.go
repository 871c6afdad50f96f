package nemesis

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"time"
)

// ProducerKind says how a producer identifies its sends.
type ProducerKind int

const (
	// LeaderAware is our client (client.DialCluster): a stable identity is
	// the plan (issue 10); today it re-mints the client id on reconnect.
	LeaderAware ProducerKind = iota
	// SDKStyle is the upstream Go SDK's way: raw frames, the request id
	// reused for every partition write, a new client id per connection.
	SDKStyle
)

func (k ProducerKind) String() string {
	if k == LeaderAware {
		return "leader-aware"
	}
	return "sdk-style"
}

// Batch is one producer batch and what became of it. Its payloads are
// unique in the run, so every stored copy can be traced back to it.
type Batch struct {
	Producer  string
	Seq       int
	N         int // messages
	Kind      ProducerKind
	Partition uint32
	Attempts  int // sends of these bytes (first send and every re-send)
	Failed    int // attempts that ended without an acknowledgement (outcome unknown or refused)
	Refused   int // of those, refused with 58 (TransientNotAccepted: never admitted)
	Acked     bool
	Base      uint64 // the acknowledged base offset (the last ack, if several)
	Acks      []uint64
	Latency   time.Duration // of the acknowledged attempt
	// Inside the leader-aware client's calls: replays of the same bytes
	// after 57 (each may store the batch again: no dedup for these sends
	// yet) and resends after 58 (never admitted, by contract).
	Replays57, Resends58 int
	Trace                []string // the client's events during the calls (bounded)
}

// History is everything the clients saw, for the checkers. Safe for
// concurrent use.
type History struct {
	mu           sync.Mutex
	batches      []*Batch
	byProducer   map[string][]*Batch // indexed by seq
	payloadBytes int
	// polled[p][offset] = hash of the payload a consumer received there.
	polled     map[uint32]map[uint64]uint64
	pollCount  int
	violations []string
	// Consumer-offset observations per (node, incarnation, partition).
	offsetSeen   map[offsetKey]uint64
	offsetReads  int
	offsetStores map[uint32]uint64 // highest acknowledged stored offset per partition
	storesAcked  int
	crossRestart []string // a node's offset lower after its restart than before it
	lastByNode   map[[2]uint64]nodeMax
	noted        map[offsetKey]bool
	ackLatencies []time.Duration // since the last Drain (soak)
	ackedMsgs    int             // since the last Drain (soak)
}

type offsetKey struct {
	node, incarnation int
	partition         uint32
}

// NewHistory returns an empty history.
func NewHistory(payloadBytes int) *History {
	return &History{byProducer: map[string][]*Batch{}, payloadBytes: payloadBytes, polled: map[uint32]map[uint64]uint64{},
		offsetSeen: map[offsetKey]uint64{}, offsetStores: map[uint32]uint64{}, lastByNode: map[[2]uint64]nodeMax{}, noted: map[offsetKey]bool{}}
}

// NewBatch registers a batch before its first send.
func (h *History) NewBatch(b *Batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batches = append(h.batches, b)
	list := h.byProducer[b.Producer]
	if b.Seq != len(list) {
		h.violateLocked("history: %s batch %d registered after %d batches", b.Producer, b.Seq, len(list))
		return
	}
	h.byProducer[b.Producer] = append(list, b)
}

// Payload is message i of b.
func (h *History) Payload(b *Batch, i int) []byte {
	return payloadOf(b.Producer, b.Seq, i, h.payloadBytes)
}

// Lookup is lookup under the history's lock.
func (h *History) Lookup(payload []byte) (*Batch, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lookup(payload)
}

// lookup finds the batch and index a stored payload came from (nil: no
// producer sent it).
func (h *History) lookup(payload []byte) (*Batch, int) {
	name, seq, i, ok := parseTag(payload)
	if !ok {
		return nil, 0
	}
	list := h.byProducer[name]
	if seq >= len(list) || i >= list[seq].N || !bytes.Equal(payload, h.Payload(list[seq], i)) {
		return nil, 0
	}
	return list[seq], i
}

// ClientEvents records what the client did inside one call for b.
func (h *History) ClientEvents(b *Batch, replays, resends int, trace []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b.Replays57 += replays
	b.Resends58 += resends
	for _, l := range trace {
		if len(b.Trace) < 64 {
			b.Trace = append(b.Trace, l)
		}
	}
}

// Attempt records one send of b's bytes and its outcome.
func (h *History) Attempt(b *Batch, acked bool, base uint64, latency time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b.Attempts++
	if !acked {
		b.Failed++
		return
	}
	h.ackLocked(b, base, latency)
}

// Refused records one send of b's bytes answered 58: never admitted, so it
// cannot have stored a copy.
func (h *History) Refused(b *Batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b.Attempts++
	b.Failed++
	b.Refused++
}

func (h *History) ackLocked(b *Batch, base uint64, latency time.Duration) {
	b.Acked, b.Base, b.Latency = true, base, latency
	b.Acks = append(b.Acks, base)
	h.ackLatencies = append(h.ackLatencies, latency)
	h.ackedMsgs += b.N
}

// Polled records a message a consumer received.
func (h *History) Polled(p uint32, offset uint64, payload []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pollCount++
	m := h.polled[p]
	if m == nil {
		m = map[uint64]uint64{}
		h.polled[p] = m
	}
	sum := hashOf(payload)
	if prev, ok := m[offset]; ok && prev != sum {
		h.violateLocked("poll: partition %d offset %d returned two different messages (the later %.40q)", p, offset, payload)
	}
	m[offset] = sum
}

// OffsetRead records a consumer-group offset a node reported.
func (h *History) OffsetRead(node, incarnation int, p uint32, stored uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offsetReads++
	k := offsetKey{node, incarnation, p}
	if prev, ok := h.offsetSeen[k]; ok && stored < prev {
		h.violateLocked("consumer offset: node %d (incarnation %d) partition %d went back from %d to %d", node, incarnation, p, prev, stored)
	}
	if prev, ok := h.offsetSeen[k]; !ok || stored > prev {
		h.offsetSeen[k] = stored
	}
	nk := [2]uint64{uint64(node), uint64(p)}
	last, ok := h.lastByNode[nk]
	if ok && stored < last.max && incarnation != last.incarnation && len(h.crossRestart) < 100 && !h.noted[k] {
		h.noted[k] = true
		h.crossRestart = append(h.crossRestart, fmt.Sprintf("node %d partition %d: %d in incarnation %d, %d in incarnation %d", node, p, stored, incarnation, last.max, last.incarnation))
	}
	if !ok || stored >= last.max {
		h.lastByNode[nk] = nodeMax{stored, incarnation}
	}
}

type nodeMax struct {
	max         uint64
	incarnation int
}

// OffsetStored records an acknowledged consumer-offset store.
func (h *History) OffsetStored(p uint32, offset uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.storesAcked++
	if offset > h.offsetStores[p] {
		h.offsetStores[p] = offset
	}
}

// MaxStored is the highest acknowledged store of partition p.
func (h *History) MaxStored(p uint32) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.offsetStores[p]
	return v, ok
}

// Violate records a checker failure.
func (h *History) Violate(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violateLocked(format, args...)
}

func (h *History) violateLocked(format string, args ...any) {
	if len(h.violations) < 1000 {
		h.violations = append(h.violations, fmt.Sprintf(format, args...))
	}
}

// Violations returns the checker failures so far.
func (h *History) Violations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.violations...)
}

// Drain returns, and resets, the acknowledged messages and the latencies
// of acknowledged sends since the last call (soak sampling).
func (h *History) Drain() (msgs int, p99 time.Duration, sends int) {
	h.mu.Lock()
	lat := h.ackLatencies
	msgs = h.ackedMsgs
	h.ackLatencies, h.ackedMsgs = nil, 0
	h.mu.Unlock()
	if len(lat) == 0 {
		return msgs, 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return msgs, lat[(len(lat)*99)/100], len(lat)
}

// Summary counts what the clients did.
type Summary struct {
	Batches, AckedBatches, AckedMessages, Attempts, FailedAttempts int
	Polled, OffsetReads, OffsetStores                              int
	CrossRestartOffsetDrops                                        []string
}

// Summary returns the counters.
func (h *History) Summary() Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Summary{Batches: len(h.batches), Polled: h.pollCount, OffsetReads: h.offsetReads, OffsetStores: h.storesAcked,
		CrossRestartOffsetDrops: append([]string(nil), h.crossRestart...)}
	for _, b := range h.batches {
		s.Attempts += b.Attempts
		s.FailedAttempts += b.Failed
		if b.Acked {
			s.AckedBatches++
			s.AckedMessages += b.N
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("batches=%d acked_batches=%d acked_messages=%d attempts=%d failed_attempts=%d polled=%d offset_reads=%d offset_stores_acked=%d",
		s.Batches, s.AckedBatches, s.AckedMessages, s.Attempts, s.FailedAttempts, s.Polled, s.OffsetReads, s.OffsetStores)
}
