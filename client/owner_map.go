package client

import (
	"math/rand/v2"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// The owner map of a DialCluster client (issue 10 point 2, seed 002): which node serves writes of
// each partition. No wire field names a partition's primary, so owners are learned by trying: a
// send with no entry goes to the metadata leader (partition primaries follow it), a send that a
// node accepts records that node, and a not-the-owner refusal (58) removes the entry and is a
// routing signal — the client pulls fresh cluster metadata, tries the leader and then the rest of
// the roster, and backs off (bounded, exponential, with jitter) between rounds. The map is pulled
// on failure, never pushed.

// ownerMapMax bounds the owner map; past it an arbitrary entry is dropped (it is only a routing
// hint: a missing entry costs one send to the leader).
const ownerMapMax = 4096

// Backoff between rounds of the owner walk (every node refused with 58).
const (
	ownerBackoffMin = 50 * time.Millisecond
	ownerBackoffMax = 1 * time.Second
)

// ownerKey names what a send writes to. A send by partition id names its partition; balanced and
// by-key sends are placed by the server, so they share one entry per topic (partitionKnown false).
// Streams and topics are keyed as the caller names them.
type ownerKey struct {
	stream, topic  wire.Identifier
	partition      uint32
	partitionKnown bool
}

func ownerKeyOf(stream, topic wire.Identifier, p wire.Partitioning) ownerKey {
	k := ownerKey{stream: stream, topic: topic}
	if p.Kind == wire.PartitioningPartitionID {
		k.partition, k.partitionKnown = p.PartitionID, true
	}
	return k
}

// ownerMap is the cache, guarded by Client.mu.
type ownerMap struct {
	m map[ownerKey]string
}

func (o *ownerMap) get(k ownerKey) (string, bool) {
	a, ok := o.m[k]
	return a, ok
}

func (o *ownerMap) set(k ownerKey, addr string) {
	if o.m == nil {
		o.m = make(map[ownerKey]string)
	}
	if _, ok := o.m[k]; !ok && len(o.m) >= ownerMapMax {
		for drop := range o.m {
			delete(o.m, drop)
			break
		}
	}
	o.m[k] = addr
}

func (o *ownerMap) drop(k ownerKey) { delete(o.m, k) }

// PartitionOwner returns the node the client last saw accept writes for (stream, topic,
// partitioning) — by partition id: that partition; balanced or by key: the topic — and whether it
// knows one. For tests and diagnostics; always false for a Dial client.
func (c *Client) PartitionOwner(stream, topic wire.Identifier, p wire.Partitioning) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cluster == nil {
		return "", false
	}
	return c.cluster.owners.get(ownerKeyOf(stream, topic, p))
}

// backoffOf is the pause before walk round n (n ≥ 1): ownerBackoffMin doubled per round, at most
// ownerBackoffMax, with jitter in [d/2, d] so clients refused together do not return together.
func backoffOf(n int) time.Duration {
	d := ownerBackoffMin
	for i := 1; i < n && d < ownerBackoffMax; i++ {
		d *= 2
	}
	d = min(d, ownerBackoffMax)
	return d/2 + rand.N(d/2+1)
}
