package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/lodestream/lodestream/config"
)

// Partition-write retry across nodes (seed 003, DESIGN "HTTP"): an
// acknowledged partition write (send messages, store or delete a consumer
// offset) first runs on the contacted node. When that node answers
// TransientNotAccepted (58) — the request provably never entered any
// pipeline — it is sent to each other roster node at most once, within
// partitionRetryWindow, the metadata primary first (partition groups
// prefer it). A node that provably did not admit it either (connect
// refused, 503 with id 58) passes the request on to the next; any other
// answer is relayed. An outcome that is unknown after the request was
// sent (a broken connection: 502 forward_failed; no answer in the window:
// 504 with the route's timeout code) is returned without a replay: HTTP
// sends carry no request identity, so a replay could apply twice.
// ack=none sends are not retried (their 202 acknowledges nothing).
const partitionRetryWindow = 10 * time.Second

// retryPartitionWrite runs after the local attempt answered 58. It
// reports false when no retry applies (the caller answers 58 itself);
// otherwise it has answered.
func (c *call) retryPartitionWrite(body []byte, timeoutCode, timeoutReason string) bool {
	f := c.s.forward
	if f == nil || !c.s.cfg.Cluster.Enabled || c.r.Header.Get(forwardedHeader) != "" {
		return false // forwarding inactive (no cluster-wide key) or already one hop
	}
	targets := c.retryTargets()
	if len(targets) == 0 {
		return false
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		return false // as busy as forwarding allows: the local 58 stands
	}
	deadline := time.Now().Add(partitionRetryWindow)
	for _, n := range targets {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		if c.s.metrics != nil {
			c.s.metrics.partitionRetries.Inc()
		}
		resp, retry, err := f.attempt(c, n, body, remaining)
		switch {
		case err != nil && retry:
			continue // connect failure: not admitted there
		case err != nil && (errors.Is(err, context.DeadlineExceeded) || c.r.Context().Err() != nil):
			writeHTTPError(c.w, http.StatusGatewayTimeout, timeoutCode, timeoutReason)
			return true
		case err != nil:
			writeHTTPError(c.w, http.StatusBadGateway, "forward_failed", "Partition write failed after it was sent to another node (it may still commit)")
			return true
		case retry:
			continue // that node is no primary of the partition either
		}
		relayReply(c.w, resp)
		return true
	}
	return false
}

// retryTargets: the other roster nodes with an HTTP port, the metadata
// primary first.
func (c *call) retryTargets() []config.NodeConfig {
	peers := c.s.node.PeerNodes()
	primary, self, known := c.s.node.MetadataPrimary()
	out := make([]config.NodeConfig, 0, len(peers))
	if known && !self && primary.Ports.HTTP != nil {
		out = append(out, primary)
	}
	for _, p := range peers {
		if p.Ports.HTTP == nil || (known && !self && p.ReplicaID == primary.ReplicaID) {
			continue
		}
		out = append(out, p)
	}
	return out
}
