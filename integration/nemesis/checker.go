package nemesis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// CheckReport is the outcome of the final read-back.
type CheckReport struct {
	Messages       map[uint32]int // per partition, as stored after heal
	Duplicates     int            // extra stored copies (each allowed: the batch was re-sent after a failure)
	UnknownStored  int            // batches never acknowledged that are stored
	UnknownMissing int            // batches never acknowledged that are not stored
	ConvergedAfter time.Duration
	Violations     []string
}

func (r *CheckReport) violate(format string, args ...any) {
	if len(r.Violations) < 1000 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}
}

// partitionDir is node's directory of partition p of the only topic.
func partitionDir(n *Node, p uint32) string {
	matches, _ := filepath.Glob(filepath.Join(n.DataDir, "streams", "*", "topics", "*", "partitions", fmt.Sprint(p)))
	if len(matches) == 1 {
		return matches[0]
	}
	return ""
}

// segmentFiles reads partition p's segment files on node n (nil if one
// vanished while reading: a replica still cutting).
func segmentFiles(n *Node, p uint32) map[string][]byte {
	dir := partitionDir(n, p)
	if dir == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	out := map[string][]byte{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		out[filepath.Base(path)] = b
	}
	return out
}

func sameFiles(a, b map[string][]byte) bool {
	if a == nil || b == nil || len(a) != len(b) {
		return false
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			return false
		}
	}
	return true
}

func fileSummary(m map[string][]byte) string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s:%dB", k, len(m[k])))
	}
	return strings.Join(parts, " ")
}

// WaitConverged waits until every node's segment files of every partition
// are byte-identical to node 0's, and the same on two looks in a row.
func WaitConverged(c *Cluster, partitions uint32, within time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(within)
	stable := 0
	for {
		ok := true
		var why string
		for p := uint32(0); p < partitions && ok; p++ {
			ref := segmentFiles(c.Nodes[0], p)
			for i := 1; i < c.N && ok; i++ {
				got := segmentFiles(c.Nodes[i], p)
				if !sameFiles(ref, got) {
					ok = false
					why = fmt.Sprintf("partition %d: node 0 [%s] vs node %d [%s]", p, fileSummary(ref), i, fileSummary(got))
				}
			}
		}
		if ok {
			stable++
			if stable >= 2 {
				return time.Since(start), nil
			}
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("segment files still differ %s after heal: %s", within, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func loginNode(ctx context.Context, addr string) (*client.Client, error) {
	c, err := client.Dial(ctx, addr, client.WithResponseTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	if _, err := c.LoginUser(ctx, "iggy", "iggy"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// origin is where a stored message came from.
type origin struct {
	b *Batch // nil: no producer sent it (or a hole)
	i int32
	// hole: the offset is in a hole the partition skipped after a primary
	// change (node/partition_reserve.go): no message is stored there.
	hole bool
}

// holeHash stands for an offset in a skipped hole in a replica's log;
// holeMax bounds one hole (a reservation chunk, reserveChunkMax).
const (
	holeHash = ^uint64(0)
	holeMax  = 1 << 20
)

// Replicas is the final read-back: one hash per stored message, per node
// and partition, and for the reference node (the first) where each
// message came from.
type Replicas struct {
	Hashes  map[int]map[uint32][]uint64
	Origins map[uint32][]origin
	Ref     int
}

// readPartition polls every message of partition p from one node's local
// log, by offset from 0; visit sees each payload. Offsets only go up: an
// offset the log skipped (a hole a new primary left, never handed out)
// reads as holeHash, and visit sees nil for it.
func readPartition(ctx context.Context, c *client.Client, p uint32, visit func(payload []byte)) ([]uint64, error) {
	var out []uint64
	for {
		r, err := c.PollMessages(ctx, wire.PollMessagesRequest{
			Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: wire.NumericID(1)},
			Stream:   streamID, Topic: topicID, Partition: wire.SomePartition(p),
			Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: uint64(len(out))}, Count: 1000})
		if err != nil {
			return out, fmt.Errorf("poll partition %d from %d: %w", p, len(out), err)
		}
		if len(r.Messages) == 0 {
			return out, nil
		}
		for _, m := range r.Messages {
			if m.Offset < uint64(len(out)) || m.Offset-uint64(len(out)) > holeMax {
				return out, fmt.Errorf("partition %d: offset %d where %d was next (a repeat, or a hole above the bound)", p, m.Offset, len(out))
			}
			for uint64(len(out)) < m.Offset {
				out = append(out, holeHash)
				if visit != nil {
					visit(nil)
				}
			}
			out = append(out, hashOf(m.Payload))
			if visit != nil {
				visit(m.Payload)
			}
		}
	}
}

// ReadBack reads every partition from every node.
func ReadBack(ctx context.Context, c *Cluster, h *History, partitions uint32) (*Replicas, error) {
	rs := &Replicas{Hashes: map[int]map[uint32][]uint64{}, Origins: map[uint32][]origin{}}
	for i, n := range c.Nodes {
		var cl *client.Client
		var err error
		for try := 0; try < 20; try++ {
			if cl, err = loginNode(ctx, n.Addr()); err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			return rs, fmt.Errorf("read back: node %d: %w", i, err)
		}
		rs.Hashes[i] = map[uint32][]uint64{}
		for p := uint32(0); p < partitions; p++ {
			var visit func([]byte)
			if i == rs.Ref {
				visit = func(payload []byte) {
					if payload == nil {
						rs.Origins[p] = append(rs.Origins[p], origin{hole: true})
						return
					}
					b, k := h.Lookup(payload)
					rs.Origins[p] = append(rs.Origins[p], origin{b: b, i: int32(k)})
				}
			}
			log, err := readPartition(ctx, cl, p, visit)
			if err != nil {
				cl.Close()
				return rs, fmt.Errorf("read back: node %d: %w", i, err)
			}
			rs.Hashes[i][p] = log
		}
		cl.Close()
	}
	return rs, nil
}

// finalOffsets reads the group's stored offsets from every node.
func finalOffsets(ctx context.Context, c *Cluster, partitions uint32) (map[int]map[uint32]*wire.ConsumerOffset, error) {
	out := map[int]map[uint32]*wire.ConsumerOffset{}
	consumer := wire.Consumer{Kind: wire.ConsumerKindGroup, ID: groupID}
	for i, n := range c.Nodes {
		cl, err := loginNode(ctx, n.Addr())
		if err != nil {
			return out, fmt.Errorf("consumer offsets: node %d: %w", i, err)
		}
		out[i] = map[uint32]*wire.ConsumerOffset{}
		for p := uint32(0); p < partitions; p++ {
			off, err := cl.GetConsumerOffset(ctx, consumer, streamID, topicID, wire.SomePartition(p))
			if err != nil {
				cl.Close()
				return out, fmt.Errorf("consumer offsets: node %d partition %d: %w", i, p, err)
			}
			out[i][p] = off
		}
		cl.Close()
	}
	return out, nil
}

// Check runs every checker on the replicas' final logs and the history.
// exactlyOnce makes any second copy of a leader-aware producer's batch a
// violation.
func Check(h *History, rs *Replicas, offsets map[int]map[uint32]*wire.ConsumerOffset, partitions uint32, exactlyOnce bool) *CheckReport {
	r := &CheckReport{Messages: map[uint32]int{}}
	if rs == nil || len(rs.Hashes) == 0 {
		r.violate("read back: no replica read")
		return r
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	nodes := make([]int, 0, len(rs.Hashes))
	for i := range rs.Hashes {
		nodes = append(nodes, i)
	}
	sort.Ints(nodes)
	ref := rs.Hashes[rs.Ref]
	describe := func(p uint32, off int) string {
		if off < len(rs.Origins[p]) {
			if o := rs.Origins[p][off]; o.b != nil {
				return fmt.Sprintf("%s batch %d message %d", o.b.Producer, o.b.Seq, o.i)
			} else if o.hole {
				return "a skipped hole"
			}
			return "a message no producer sent"
		}
		return "nothing"
	}

	// Replicas agree message for message (the segment files were compared
	// byte for byte before).
	for _, i := range nodes {
		if i == rs.Ref {
			continue
		}
		for p := uint32(0); p < partitions; p++ {
			a, b := ref[p], rs.Hashes[i][p]
			if len(a) != len(b) {
				r.violate("replicas differ: partition %d holds %d messages on node %d, %d on node %d", p, len(a), rs.Ref, len(b), i)
			}
			for off := 0; off < len(a) && off < len(b); off++ {
				if a[off] != b[off] {
					r.violate("replicas differ: partition %d offset %d: %s on node %d, another message on node %d", p, off, describe(p, off), rs.Ref, i)
					break
				}
			}
		}
	}

	// Every acknowledged message at its acknowledged offset on every
	// replica; no offset acknowledged to two batches.
	claims := map[uint32]map[uint64]*Batch{}
	for _, b := range h.batches {
		for _, base := range b.Acks {
			for i := 0; i < b.N; i++ {
				off := base + uint64(i)
				if claims[b.Partition] == nil {
					claims[b.Partition] = map[uint64]*Batch{}
				}
				if other, taken := claims[b.Partition][off]; taken && other != b {
					r.violate("offset reused: partition %d offset %d acknowledged to %s batch %d and to %s batch %d", b.Partition, off, other.Producer, other.Seq, b.Producer, b.Seq)
				}
				claims[b.Partition][off] = b
				sum := hashOf(h.Payload(b, i))
				for _, n := range nodes {
					log := rs.Hashes[n][b.Partition]
					if off >= uint64(len(log)) {
						r.violate("acknowledged message lost: partition %d offset %d (%s batch %d message %d) beyond node %d's %d messages", b.Partition, off, b.Producer, b.Seq, i, n, len(log))
					} else if log[off] == holeHash {
						r.violate("acknowledged message lost: partition %d offset %d (%s batch %d message %d) is in a hole node %d skipped", b.Partition, off, b.Producer, b.Seq, i, n)
					} else if log[off] != sum {
						r.violate("acknowledged message moved: partition %d offset %d was acknowledged to %s batch %d message %d; node %d holds another message there (%s on node %d)", b.Partition, off, b.Producer, b.Seq, i, n, describe(b.Partition, int(off)), rs.Ref)
					}
				}
			}
		}
	}

	// Copies: each stored message belongs to a batch that was sent; a second
	// copy only where the batch was re-sent after an ambiguous outcome; a
	// batch is stored whole.
	count := map[*Batch][]int{}
	for p := uint32(0); p < partitions; p++ {
		for off, o := range rs.Origins[p] {
			if o.hole {
				continue
			}
			r.Messages[p]++
			switch {
			case o.b == nil:
				r.violate("phantom message: partition %d offset %d holds a message no producer sent", p, off)
			case o.b.Partition != p:
				r.violate("misplaced message: partition %d offset %d holds %s batch %d, sent to partition %d", p, off, o.b.Producer, o.b.Seq, o.b.Partition)
			default:
				c := count[o.b]
				if c == nil {
					c = make([]int, o.b.N)
					count[o.b] = c
				}
				c[o.i]++
			}
		}
	}
	for _, b := range h.batches {
		c := count[b]
		n := 0
		if c != nil {
			n = c[0]
			for i := 1; i < len(c); i++ {
				if c[i] != n {
					r.violate("batch partially stored: %s batch %d: message 0 stored %d times, message %d %d times", b.Producer, b.Seq, n, i, c[i])
					break
				}
			}
		}
		// Every copy needs a send that may have stored it: the
		// acknowledged one, each failed call whose outcome is unknown, and
		// each of the client's 57 replays inside a call. A send answered 58
		// was never admitted and stores nothing (nor do the client's 58
		// resends inside a call: the walk resends only after a 58).
		ambiguous := b.Failed - b.Refused + b.Replays57
		allowed := len(b.Acks) + ambiguous
		if exactlyOnce && b.Kind == LeaderAware {
			allowed = 1
		}
		switch {
		case n > 1 && ambiguous == 0:
			r.violate("duplicate without a re-send after an ambiguous outcome: %s batch %d stored %d times; %d calls, %d 58-resends inside them; client trace %q", b.Producer, b.Seq, n, b.Attempts, b.Resends58, b.Trace)
		case n > allowed:
			r.violate("too many copies: %s (%s) batch %d stored %d times, %d attempts (%d failed, %d of them 58), %d 57-replays, allowed %d; client trace %q", b.Producer, b.Kind, b.Seq, n, b.Attempts, b.Failed, b.Refused, b.Replays57, allowed, b.Trace)
		}
		if n > 1 {
			r.Duplicates += n - 1
		}
		if !b.Acked && b.Attempts > 0 {
			if n > 0 {
				r.UnknownStored++
			} else {
				r.UnknownMissing++
			}
		}
	}

	// Polls returned only committed data: whatever a consumer received at
	// an offset is what every replica holds there at the end.
	for p, m := range h.polled {
		for off, sum := range m {
			if p >= partitions || off >= uint64(len(ref[p])) {
				r.violate("poll returned data that is not in the log: partition %d offset %d", p, off)
			} else if ref[p][off] != sum {
				r.violate("poll returned uncommitted data: partition %d offset %d was polled as another message than the log's %s", p, off, describe(p, int(off)))
			}
		}
	}

	// Consumer offsets: the same on every replica, at least the highest
	// acknowledged store, inside the log.
	for p := uint32(0); p < partitions; p++ {
		var first *wire.ConsumerOffset
		for _, n := range nodes {
			off := offsets[n][p]
			if n == nodes[0] {
				first = off
			} else if (off == nil) != (first == nil) || (off != nil && off.StoredOffset != first.StoredOffset) {
				r.violate("consumer offset differs between replicas: partition %d node %d %+v, node %d %+v", p, nodes[0], first, n, off)
			}
			if high, ok := h.offsetStores[p]; ok {
				if off == nil || off.StoredOffset < high {
					r.violate("acknowledged consumer offset lost: partition %d node %d holds %+v, %d was acknowledged", p, n, off, high)
				}
			}
			if off != nil && off.StoredOffset >= uint64(len(ref[p])) {
				r.violate("consumer offset beyond the log: partition %d node %d %d, %d messages", p, n, off.StoredOffset, len(ref[p]))
			}
		}
	}
	return r
}

// ScanLogs looks for panics, data races and fatal errors in the nodes' logs.
func ScanLogs(c *Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		b, err := os.ReadFile(n.LogPath)
		if err != nil {
			continue
		}
		for _, marker := range []string{"panic:", "WARNING: DATA RACE", "BUG: panic", "fatal error:"} {
			if i := bytes.Index(b, []byte(marker)); i >= 0 {
				end := min(len(b), i+2000)
				out = append(out, fmt.Sprintf("node %d log has %q:\n%s", n.ID, marker, b[i:end]))
			}
		}
	}
	return out
}
