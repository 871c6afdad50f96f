package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/wire"
)

// Follower → primary forwarding of control-plane routes (spec §12.3,
// server-design §8): a follower relays the request to the metadata
// primary's HTTP listener and answers with the primary's reply. Retried
// only while the request provably never entered the primary's pipeline.
const (
	forwardedHeader      = "iggy-forwarded"
	forwardsInFlightMax  = 128
	forwardAttemptBudget = 35 * time.Second
	forwardDeadline      = 30 * time.Second
	forwardRetryPause    = 50 * time.Millisecond
	forwardReplyBytesMax = 64 << 20
	forwardDialTimeout   = 5 * time.Second
)

// forwardable are the control-plane routes (spec §4 "F"); everything else
// is always served by the receiving node.
var forwardable = map[string]bool{
	"logout_user": true, "get_users": true, "create_user": true, "get_user": true, "update_user": true, "delete_user": true,
	"change_password": true, "update_permissions": true, "get_personal_access_tokens": true,
	"create_personal_access_token": true, "delete_personal_access_token": true, "get_streams": true, "create_stream": true,
	"get_stream": true, "update_stream": true, "delete_stream": true, "purge_stream": true, "get_topics": true,
	"create_topic": true, "get_topic": true, "update_topic": true, "delete_topic": true, "purge_topic": true,
	"create_partitions": true, "delete_partitions": true, "delete_segments": true, "get_consumer_groups": true,
	"create_consumer_group": true, "get_consumer_group": true, "delete_consumer_group": true,
}

// linearizableLocal are the local routes that honour consistency: a
// linearizable one on a follower is redirected to the primary (§12.2).
var linearizableLocal = map[string]bool{
	"get_stats": true, "get_clients": true, "get_client": true, "get_snapshot": true, "poll_messages": true,
	"get_consumer_offset": true,
}

type forwarder struct {
	client *http.Client
	scheme string
	slots  chan struct{}
}

// newForwarder is nil unless forwarding is active: a cluster with a
// cluster-wide JWT key (a PSK with cluster.auth, or an explicit secret).
func newForwarder(cfg *config.Config) (*forwarder, error) {
	if !cfg.Cluster.Enabled || !config.HTTPForwardingKeyMaterial(cfg) {
		return nil, nil
	}
	tr := &http.Transport{
		DialContext:            (&net.Dialer{Timeout: forwardDialTimeout}).DialContext,
		DisableKeepAlives:      true, // a failure is then a connect failure or a sent request, never a stale connection
		ResponseHeaderTimeout:  forwardAttemptBudget,
		MaxResponseHeaderBytes: headerBytesMax,
	}
	f := &forwarder{scheme: "http", slots: make(chan struct{}, forwardsInFlightMax)}
	if cfg.HTTP.TLS.Enabled {
		pin, err := leafDER(cfg.HTTP.TLS.CertFile)
		if err != nil {
			return nil, err
		}
		f.scheme = "https"
		tr.TLSClientConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// The peer is accepted only with our own certificate (all nodes
			// share the HTTP certificate): verified by pinning, not by a CA.
			InsecureSkipVerify: true,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || !bytes.Equal(raw[0], pin) {
					return errors.New("forward target's certificate is not this cluster's HTTP certificate")
				}
				return nil
			},
		}
	}
	f.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f, nil
}

func leafDER(certFile string) ([]byte, error) {
	raw, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("http.tls.cert_file for forwarding: %w", err)
	}
	for rest := raw; len(rest) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes, nil
		}
	}
	return nil, fmt.Errorf("http.tls.cert_file %q holds no PEM certificate", certFile)
}

// routeCluster decides, on a cluster node, whether this request is served
// here; otherwise it answers (forwarded reply, redirect or refusal) and
// reports true.
func (c *call) routeCluster(name string, local func(*call)) bool {
	if !c.s.cfg.Cluster.Enabled {
		return false
	}
	primary, self, known := c.s.node.MetadataPrimary()
	if self {
		return false // the primary serves everything; a forwarded request too
	}
	linearizable := hasRawPair(c.r.URL.RawQuery, "consistency=linearizable")
	switch {
	case forwardable[name] && c.s.forward != nil:
		if c.r.Method == http.MethodGet && !linearizable {
			return false
		}
		if c.r.Header.Get(forwardedHeader) != "" {
			writeCode(c.w, wire.ErrTransientNotAccepted) // one hop at most
			return true
		}
		c.s.forward.relay(c, local)
		return true
	case linearizable && (forwardable[name] || linearizableLocal[name]):
		c.redirectToPrimary(primary, known)
		return true
	}
	return false
}

// hasRawPair reports whether the raw query holds exactly key=value as one
// pair.
func hasRawPair(raw, pair string) bool {
	for _, p := range strings.Split(raw, "&") {
		if p == pair {
			return true
		}
	}
	return false
}

// redirectToPrimary answers 307 to the primary's advertised address for
// this caller, or 503 not_primary when it cannot be resolved.
func (c *call) redirectToPrimary(primary config.NodeConfig, known bool) {
	if known {
		reply, code := c.s.node.Execute(c.r.Context(), c.p, wire.CodeGetClusterMetadata, nil)
		if code == wire.OK {
			if md, err := wire.DecodeClusterMetadata(reply); err == nil {
				for _, n := range md.Nodes {
					if n.Name == primary.Name && n.Role == wire.RoleLeader && n.HTTP != 0 {
						scheme := "http"
						if c.s.tls != nil {
							scheme = "https"
						}
						c.w.Header().Set("Location", scheme+"://"+net.JoinHostPort(strings.Trim(n.IP, "[]"), strconv.Itoa(int(n.HTTP)))+c.r.URL.RequestURI())
						c.w.WriteHeader(http.StatusTemporaryRedirect)
						return
					}
				}
			}
		}
	}
	writeHTTPError(c.w, http.StatusServiceUnavailable, "not_primary", "This node is not the primary and the primary's address is unknown")
}

// relay forwards the request to the primary: retried every 50 ms for up to
// 30 s while the request provably never reached the primary's pipeline
// (no primary known, connect failure, 307, 503 with id 58); anything else
// is relayed as is.
func (f *forwarder) relay(c *call, local func(*call)) {
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		writeHTTPError(c.w, http.StatusServiceUnavailable, "forward_busy", "Too many forwarded requests in flight")
		return
	}
	body, err := io.ReadAll(c.r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			c.w.Header().Set("Connection", "close")
			writeHTTPError(c.w, http.StatusRequestEntityTooLarge, "payload_too_large", "Request body too large")
			return
		}
		writePlain(c.w, http.StatusBadRequest, "Failed to read the request body")
		return
	}
	deadline := time.Now().Add(forwardDeadline)
	for {
		primary, self, known := c.s.node.MetadataPrimary()
		if self {
			// Became the primary meanwhile: the request was never sent
			// anywhere, so it can be served here.
			c.r.Body = io.NopCloser(bytes.NewReader(body))
			local(c)
			return
		}
		if known && primary.Ports.HTTP != nil {
			resp, retry, err := f.attempt(c, primary, body, forwardAttemptBudget)
			switch {
			case err != nil && retry:
				// connect failure: not admitted anywhere
			case err != nil:
				if errors.Is(err, context.DeadlineExceeded) {
					writeHTTPError(c.w, http.StatusGatewayTimeout, "forward_timeout", "Forwarded request not answered in time (it may still commit)")
				} else {
					writeHTTPError(c.w, http.StatusBadGateway, "forward_failed", "Forwarded request failed after it was sent (it may still commit)")
				}
				return
			case !retry:
				relayReply(c.w, resp)
				return
			}
		}
		if time.Now().Add(forwardRetryPause).After(deadline) {
			writeHTTPError(c.w, http.StatusServiceUnavailable, "no_reachable_primary", "No reachable primary")
			return
		}
		select {
		case <-c.r.Context().Done():
			return
		case <-time.After(forwardRetryPause):
		}
	}
}

// forwardedReply is a primary's answer, read whole (bounded).
type forwardedReply struct {
	status int
	header http.Header
	body   []byte
}

// attempt sends the request once, bounded by budget. retry: it provably did not enter the
// primary's pipeline (connect failure, 307, 503 with id 58).
func (f *forwarder) attempt(c *call, primary config.NodeConfig, body []byte, budget time.Duration) (forwardedReply, bool, error) {
	ctx, cancel := context.WithTimeout(c.r.Context(), budget)
	defer cancel()
	url := f.scheme + "://" + net.JoinHostPort(strings.Trim(primary.IP, "[]"), strconv.Itoa(int(*primary.Ports.HTTP))) + c.r.URL.RequestURI()
	req, err := http.NewRequestWithContext(ctx, c.r.Method, url, bytes.NewReader(body))
	if err != nil {
		return forwardedReply{}, false, err
	}
	for _, h := range []string{"Authorization", "Content-Type"} {
		if v := c.r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set(forwardedHeader, "1")
	resp, err := f.client.Do(req)
	if err != nil {
		var op *net.OpError
		return forwardedReply{}, errors.As(err, &op) && op.Op == "dial", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, forwardReplyBytesMax+1))
	if err != nil {
		return forwardedReply{}, false, err
	}
	if len(b) > forwardReplyBytesMax {
		return forwardedReply{}, false, errors.New("forwarded reply above 64 MiB")
	}
	out := forwardedReply{status: resp.StatusCode, header: resp.Header, body: b}
	switch resp.StatusCode {
	case http.StatusTemporaryRedirect:
		return out, true, nil
	case http.StatusServiceUnavailable:
		var e errorBody
		if json.Unmarshal(b, &e) == nil && e.ID == uint32(wire.ErrTransientNotAccepted) {
			return out, true, nil
		}
	}
	return out, false, nil
}

func relayReply(w http.ResponseWriter, r forwardedReply) {
	for _, h := range []string{"Content-Type", "Retry-After", "iggy-view"} {
		if v := r.header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}
