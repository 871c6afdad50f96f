package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Validation bounds (upstream's, see spec/server-design.md §6).
const (
	repairChunkMax                = 1024
	superblockWedgedFatalMin      = 30 * time.Second
	heartbeatTimeoutMin           = 2 * time.Second
	heartbeatToCommitBroadcastMin = 4
	statusToRetransmitMin         = 4
	viewProbeAttemptsMax          = 100
	clusterNodesMax               = 32
	sharedSecretBytesMin          = 32
	advertisedSelectorsMax        = 16
	prepareQueueDepthMax          = 127
	metadataJournalSlotsMax       = 1 << 20
	metadataCheckpointMarginFloor = 64
	clientsTableMin               = 2
	clientsTableMax               = 1 << 16
	evictedRingCapacityMax        = 65536
	evictedRingBytesMax           = 256 * MiB
	transferBytesMax              = 64 * GiB
	segmentOvershootBytes         = 64 * MiB
	concurrentServedSegments      = 2
	walBytesMax                   = 64 * GiB
	messageBusBatchMax            = 512
	stateChunkHeaderBytes         = 256
	inboxCapacityMax              = 1 << 20
	shutdownDrainTimeoutMax       = 600 * time.Second
	shutdownPollIntervalMax       = 5 * time.Second
	shutdownJoinTimeoutMax        = 900 * time.Second
	reconcilePeriodicIntervalMax  = 30 * time.Second
	websocketWriteBufferDefault   = 128 * KiB
	tcpConnectionsMax             = 1 << 20
	// OpenFilesMaxMin and OpenFilesMaxMax bound system.open_files_max (the
	// minimum is partitions.OpenFilesMin).
	OpenFilesMaxMin        = 16
	OpenFilesMaxMax        = 1 << 30
	sendQueueBytesMin      = 64 * KiB
	loginTrackedEntriesMax = 1 << 20
)

// EncryptionKeyRule is the rule for system.encryption.key (upstream's
// Aes256GcmEncryptor::from_base64_key: standard base64 of a 32-byte key).
const EncryptionKeyRule = "must be the base64 (standard alphabet, padded) encoding of exactly 32 bytes (an AES-256 key), e.g. the output of `openssl rand -base64 32`"

// encryptionKeyBytes is the AES-256 key size.
const encryptionKeyBytes = 32

// checkEncryptionKey reports what is wrong with a key without quoting it.
func checkEncryptionKey(key Secret) error {
	raw, err := base64.StdEncoding.DecodeString(key.Reveal())
	if err != nil {
		return errors.New("is not valid base64")
	}
	if len(raw) != encryptionKeyBytes {
		return fmt.Errorf("decodes to %d bytes, not %d", len(raw), encryptionKeyBytes)
	}
	return nil
}

// violations collects every broken rule so Validate reports them all.
type violations struct{ errs []error }

func (v *violations) add(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *violations) err() error { return errors.Join(v.errs...) }

// Validate checks every rule of the configuration and returns all
// violations joined; each message names the key, its value and the rule.
func (c *Config) Validate() error {
	var v violations
	c.validateSystem(&v)
	c.validateTransports(&v)
	c.validateConnectionLimits(&v)
	c.validateClusterAlways(&v)
	if c.Cluster.Enabled {
		c.validateClusterTiming(&v)
		c.validateRoster(&v)
		c.validateClusterSecurity(&v)
	}
	c.validateMetadata(&v)
	c.validatePartition(&v)
	c.validateMessageBus(&v)
	c.validateSharding(&v)
	return v.err()
}

// Warnings returns non-fatal findings about a valid configuration.
func (c *Config) Warnings() []Warning {
	var warnings []Warning
	resident := max(c.Partition.TransferArtifactBytesMax.Bytes(), SegmentSizeMaxBytes+segmentOvershootBytes)
	slots := max(c.Partition.TransferServedCacheBytesMax.Bytes()/resident, 1)
	if slots < concurrentServedSegments {
		warnings = append(warnings, Warning{Message: fmt.Sprintf(
			"partition.transfer_served_cache_bytes_max = %s holds %d state-transfer slot(s) of %d B, below the %d served at once: rejoins serialise; raise it to %d B or lower transfer_artifact_bytes_max",
			c.Partition.TransferServedCacheBytesMax, slots, resident, concurrentServedSegments, resident*concurrentServedSegments)})
	}
	return warnings
}

func (c *Config) validateSystem(v *violations) {
	if strings.TrimSpace(c.System.Path) == "" {
		v.add("system.path is empty: must name the data directory")
	}
	if _, err := ParseLogLevel(c.System.Logging.Level); err != nil {
		v.add("%v", err)
	}
	if n := c.System.OpenFilesMax; n != 0 && (n < OpenFilesMaxMin || n > OpenFilesMaxMax) {
		v.add("system.open_files_max = %d: must be 0 (derived from the descriptor limit) or between %d and %d",
			n, OpenFilesMaxMin, OpenFilesMaxMax)
	}
	if c.ConsumerGroup.RebalancingTimeout.Duration != RebalancingTimeoutDefault {
		v.add("consumer_group.rebalancing_timeout = %s: only the default %s is accepted: this server rebalances a consumer group in the same committed operation as the membership change (no pending revocation waits for a previous owner's commit), so there is no deadline to configure; remove the key",
			c.ConsumerGroup.RebalancingTimeout, Dur(RebalancingTimeoutDefault))
	}
	if mp := c.System.MemoryPool; mp.Size.Bytes() != MemoryPoolSizeDefault || mp.BucketCapacity != MemoryPoolBucketCapacityDefault {
		v.add("system.memory_pool.size = %s, bucket_capacity = %d: only the defaults (%s, %d) are accepted: this server has no fixed-size arena; its frame buffers come from size-classed pools the Go runtime reclaims when idle, so there is nothing to size; remove the keys (system.memory_pool.enabled = false turns the pools off)",
			mp.Size, mp.BucketCapacity, ByteSize(MemoryPoolSizeDefault), MemoryPoolBucketCapacityDefault)
	}
	c.validateLogging(v)
	if c.Heartbeat.Enabled && c.Heartbeat.Interval.IsZero() {
		v.add("heartbeat.interval = 0: must be nonzero when heartbeat.enabled = true")
	}
	if c.System.Encryption.Enabled {
		if !c.System.Encryption.Key.IsSet() {
			v.add("system.encryption.enabled = true: system.encryption.key must be set; it %s", EncryptionKeyRule)
		} else if err := checkEncryptionKey(c.System.Encryption.Key); err != nil {
			// The key itself is never repeated.
			v.add("system.encryption.key (masked) %v: it %s", err, EncryptionKeyRule)
		}
	}
}

// Defaults of keys whose other values this server refuses (see Validate).
const (
	RebalancingTimeoutDefault       = 30 * time.Second
	MemoryPoolSizeDefault           = 4 * GiB
	MemoryPoolBucketCapacityDefault = 8192
	logRotationCheckIntervalMin     = time.Second
)

func (c *Config) validateLogging(v *violations) {
	l := c.System.Logging
	if !l.FileEnabled {
		return
	}
	if strings.TrimSpace(l.Path) == "" {
		v.add("system.logging.path is empty: must name the log directory (relative to system.path, or absolute) when system.logging.file_enabled = true")
	}
	if l.RotationCheckInterval.Duration < logRotationCheckIntervalMin {
		v.add("system.logging.rotation_check_interval = %s: must be at least 1s when system.logging.file_enabled = true", l.RotationCheckInterval)
	}
}

func (c *Config) validateTransports(v *violations) {
	for _, listener := range []struct {
		name    string
		enabled bool
		address string
	}{
		{"tcp", c.TCP.Enabled, c.TCP.Address}, {"quic", c.QUIC.Enabled, c.QUIC.Address},
		{"http", c.HTTP.Enabled, c.HTTP.Address}, {"websocket", c.WebSocket.Enabled, c.WebSocket.Address},
	} {
		if !listener.enabled {
			continue
		}
		if _, port, err := net.SplitHostPort(listener.address); err != nil {
			v.add("%s.address = %q: must be host:port (%v)", listener.name, listener.address, err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			v.add("%s.address = %q: port must be a number from 0 to 65535", listener.name, listener.address)
		}
	}
	if c.TCP.Enabled && c.TCP.TLS.Enabled && !c.TCP.TLS.SelfSigned && (c.TCP.TLS.CertFile == "" || c.TCP.TLS.KeyFile == "") {
		v.add("tcp.tls.enabled = true with self_signed = false: tcp.tls.cert_file and tcp.tls.key_file must be set")
	}
	if c.HTTP.Enabled {
		switch c.HTTP.JWT.Algorithm {
		case "HS256", "HS384", "HS512":
		default:
			v.add("http.jwt.algorithm = %q: must be HS256, HS384 or HS512 (the server signs with a shared secret)", c.HTTP.JWT.Algorithm)
		}
		if c.HTTP.TLS.Enabled && (c.HTTP.TLS.CertFile == "" || c.HTTP.TLS.KeyFile == "") {
			v.add("http.tls.enabled = true: http.tls.cert_file and http.tls.key_file must be set")
		}
		c.validateTrustedIssuers(v)
	}
	c.validateWebSocketSizes(v)
	c.validateQUIC(v)
	ws := c.WebSocket.TLS
	if c.WebSocket.Enabled && ws.Enabled && !ws.SelfSigned && (ws.CertFile == "" || ws.KeyFile == "") {
		v.add("websocket.tls.enabled = true with self_signed = false: websocket.tls.cert_file and websocket.tls.key_file must be set")
	}
}

// quicBidiStreamsMax bounds quic.max_concurrent_bidi_streams: requests one
// connection may have open (each holds a reply slot).
const quicBidiStreamsMax = 1024

// validateQUIC checks [quic] when it is enabled.
func (c *Config) validateQUIC(v *violations) {
	q := c.QUIC
	if !q.Enabled {
		return
	}
	if !q.Certificate.SelfSigned && (q.Certificate.CertFile == "" || q.Certificate.KeyFile == "") {
		v.add("quic.certificate.self_signed = false: quic.certificate.cert_file and quic.certificate.key_file must be set")
	}
	if q.MaxConcurrentBidiStreams < 1 || q.MaxConcurrentBidiStreams > quicBidiStreamsMax {
		v.add("quic.max_concurrent_bidi_streams = %d: must be between 1 and %d", q.MaxConcurrentBidiStreams, quicBidiStreamsMax)
	}
	if q.InitialMTU < 1200 || q.InitialMTU > 65527 {
		v.add("quic.initial_mtu = %s: must be between 1200 B (the QUIC minimum) and 65527 B", q.InitialMTU)
	}
	for _, w := range []struct {
		key   string
		value ByteSize
	}{{"send_window", q.SendWindow}, {"receive_window", q.ReceiveWindow}, {"stream_receive_window", q.StreamReceiveWindow}} {
		if w.value == 0 || w.value > 1<<32 {
			v.add("quic.%s = %s: must be between 1 B and 4 GiB", w.key, w.value)
		}
	}
	if q.MaxIdleTimeout.IsZero() {
		v.add("quic.max_idle_timeout = 0: must be nonzero (an idle connection must end)")
	}
	if !q.KeepAliveInterval.IsZero() && q.KeepAliveInterval.Duration >= q.MaxIdleTimeout.Duration {
		v.add("quic.keep_alive_interval = %s: must be below quic.max_idle_timeout = %s (or 0: no keep-alive)", q.KeepAliveInterval, q.MaxIdleTimeout)
	}
}

// validateConnectionLimits checks the [tcp] connection limits and [login]
// (both ours).
func (c *Config) validateConnectionLimits(v *violations) {
	t := c.TCP
	if t.ConnectionsMax < 1 || t.ConnectionsMax > tcpConnectionsMax {
		v.add("tcp.connections_max = %d: must be between 1 and %d", t.ConnectionsMax, tcpConnectionsMax)
	}
	if t.ConnectionsPerAddressMax < 1 || t.ConnectionsPerAddressMax > t.ConnectionsMax {
		v.add("tcp.connections_per_address_max = %d: must be between 1 and tcp.connections_max = %d", t.ConnectionsPerAddressMax, t.ConnectionsMax)
	}
	for _, timer := range []struct {
		key   string
		value Duration
	}{{"login_timeout", t.LoginTimeout}, {"frame_read_timeout", t.FrameReadTimeout}} {
		if timer.value.IsZero() {
			v.add("tcp.%s = 0: must be nonzero (a connection must not stay half-open forever)", timer.key)
		}
	}
	if t.SendQueueBytesMax.Bytes() < sendQueueBytesMin {
		v.add("tcp.send_queue_bytes_max = %s: must be at least 64 KiB", t.SendQueueBytesMax)
	}
	if t.OutboundBytesMax < t.SendQueueBytesMax {
		v.add("tcp.outbound_bytes_max = %s: must be at least tcp.send_queue_bytes_max = %s", t.OutboundBytesMax, t.SendQueueBytesMax)
	}
	l := c.Login
	if l.FailedAttemptsPerAddressMax < 1 {
		v.add("login.failed_attempts_per_address_max = 0: must be at least 1")
	}
	if l.FailedAttemptsPerUserMax < 1 {
		v.add("login.failed_attempts_per_user_max = 0: must be at least 1")
	}
	if l.FailedAttemptsRefillInterval.IsZero() {
		v.add("login.failed_attempts_refill_interval = 0: must be nonzero")
	}
	if l.TrackedEntriesMax < 1 || l.TrackedEntriesMax > loginTrackedEntriesMax {
		v.add("login.tracked_entries_max = %d: must be between 1 and %d", l.TrackedEntriesMax, loginTrackedEntriesMax)
	}
}

func (c *Config) validateWebSocketSizes(v *violations) {
	ws := c.WebSocket
	for _, size := range []struct {
		key   string
		value *ByteSize
	}{
		{"read_buffer_size", ws.ReadBufferSize}, {"write_buffer_size", ws.WriteBufferSize},
		{"max_write_buffer_size", ws.MaxWriteBufferSize}, {"max_message_size", ws.MaxMessageSize},
		{"max_frame_size", ws.MaxFrameSize},
	} {
		if size.value != nil && *size.value == 0 {
			v.add("websocket.%s = 0: must be nonzero when set (\"0\", \"none\" and \"unlimited\" all mean zero)", size.key)
		}
	}
	bus := c.MessageBus.MaxMessageSize
	if ws.MaxFrameSize != nil && ws.MaxMessageSize != nil && *ws.MaxFrameSize > *ws.MaxMessageSize {
		v.add("websocket.max_frame_size = %s: must not exceed websocket.max_message_size = %s", *ws.MaxFrameSize, *ws.MaxMessageSize)
	}
	if ws.MaxMessageSize != nil && *ws.MaxMessageSize > bus {
		v.add("websocket.max_message_size = %s: must not exceed message_bus.max_message_size = %s", *ws.MaxMessageSize, bus)
	}
	if ws.MaxFrameSize != nil && *ws.MaxFrameSize > bus {
		v.add("websocket.max_frame_size = %s: must not exceed message_bus.max_message_size = %s", *ws.MaxFrameSize, bus)
	}
	if ws.MaxWriteBufferSize != nil {
		write := ByteSize(websocketWriteBufferDefault)
		if ws.WriteBufferSize != nil {
			write = *ws.WriteBufferSize
		}
		if *ws.MaxWriteBufferSize <= write {
			v.add("websocket.max_write_buffer_size = %s: must exceed websocket.write_buffer_size = %s", *ws.MaxWriteBufferSize, write)
		}
	}
}

// validateClusterAlways holds the [cluster] rules upstream checks even when
// the cluster is disabled (a single node repairs and persists superblocks too).
func (c *Config) validateClusterAlways(v *violations) {
	cl := c.Cluster
	if cl.RepairChunkMax < 1 || cl.RepairChunkMax > repairChunkMax {
		v.add("cluster.repair_chunk_max = %d: must be between 1 and %d", cl.RepairChunkMax, repairChunkMax)
	}
	if cl.RepairChunkMax >= c.MessageBus.PeerQueueCapacity {
		v.add("cluster.repair_chunk_max = %d: must be less than message_bus.peer_queue_capacity = %d (a repair round rides the per-peer queue; a full round would drop frames)",
			cl.RepairChunkMax, c.MessageBus.PeerQueueCapacity)
	}
	if w := cl.SuperblockWedgedFatalTimeout; !w.IsZero() && w.Duration < superblockWedgedFatalMin {
		v.add("cluster.superblock_wedged_fatal_timeout = %s: must be 0 (disabled) or at least 30s", w)
	}
}

func (c *Config) validateClusterTiming(v *violations) {
	cl := c.Cluster
	if strings.TrimSpace(cl.Name) == "" {
		v.add("cluster.name is empty: must be non-empty when cluster.enabled = true")
	}
	for _, timer := range []struct {
		key   string
		value Duration
	}{
		{"commit_broadcast_interval", cl.CommitBroadcastInterval},
		{"prepare_retransmit_interval", cl.PrepareRetransmitInterval},
		{"view_change_retransmit_interval", cl.ViewChangeRetransmitInterval},
		{"view_change_status_timeout", cl.ViewChangeStatusTimeout},
		{"request_start_view_retransmit_interval", cl.RequestStartViewRetransmitInterval},
		{"repair_retry_interval", cl.RepairRetryInterval},
	} {
		if timer.value.IsZero() {
			v.add("cluster.%s = 0: must be nonzero", timer.key)
		}
	}
	if cl.HeartbeatTimeout.Duration < heartbeatTimeoutMin {
		v.add("cluster.heartbeat_timeout = %s: must be at least 2s", cl.HeartbeatTimeout)
	}
	if cl.HeartbeatTimeout.Duration < heartbeatToCommitBroadcastMin*cl.CommitBroadcastInterval.Duration {
		v.add("cluster.heartbeat_timeout = %s: must be at least 4 x cluster.commit_broadcast_interval = %s",
			cl.HeartbeatTimeout, Dur(heartbeatToCommitBroadcastMin*cl.CommitBroadcastInterval.Duration))
	}
	if !cl.ViewChangeStatusTimeout.IsZero() &&
		cl.ViewChangeStatusTimeout.Duration < statusToRetransmitMin*cl.ViewChangeRetransmitInterval.Duration {
		v.add("cluster.view_change_status_timeout = %s: must be at least 4 x cluster.view_change_retransmit_interval = %s",
			cl.ViewChangeStatusTimeout, Dur(statusToRetransmitMin*cl.ViewChangeRetransmitInterval.Duration))
	}
	if cl.ViewProbeAttemptsMax < 1 || cl.ViewProbeAttemptsMax > viewProbeAttemptsMax {
		v.add("cluster.view_probe_attempts_max = %d: must be between 1 and %d", cl.ViewProbeAttemptsMax, viewProbeAttemptsMax)
	}
}

func (c *Config) validateClusterSecurity(v *violations) {
	auth := c.Cluster.Auth
	if auth.Enabled && !auth.SharedSecret.IsSet() {
		v.add("cluster.auth.enabled = true: cluster.auth.shared_secret must be set")
	}
	if auth.SharedSecret.IsSet() && auth.SharedSecret.Len() < sharedSecretBytesMin {
		v.add("cluster.auth.shared_secret is %d bytes: must be at least %d bytes", auth.SharedSecret.Len(), sharedSecretBytesMin)
	}
	if auth.PreviousSharedSecret.IsSet() {
		if auth.PreviousSharedSecret.Len() < sharedSecretBytesMin {
			v.add("cluster.auth.previous_shared_secret is %d bytes: must be at least %d bytes", auth.PreviousSharedSecret.Len(), sharedSecretBytesMin)
		}
		if auth.PreviousSharedSecret == auth.SharedSecret {
			v.add("cluster.auth.previous_shared_secret equals cluster.auth.shared_secret: must differ (an identical key is a no-op rotation)")
		}
	}
	tls := c.Cluster.TLS
	if tls.Enabled {
		if !auth.Enabled {
			v.add("cluster.tls.enabled = true: requires cluster.auth.enabled = true (TLS authenticates only the acceptor; the PSK handshake authenticates the peer)")
		}
		if !tls.SelfSigned {
			for _, file := range []struct{ key, value string }{
				{"cert_file", tls.CertFile}, {"key_file", tls.KeyFile}, {"ca_file", tls.CAFile},
			} {
				if strings.TrimSpace(file.value) == "" {
					v.add("cluster.tls.%s is empty: must be set when cluster.tls.enabled = true and self_signed = false", file.key)
				}
			}
		}
	}
}

func (c *Config) validateMetadata(v *violations) {
	m := c.Metadata
	if m.PrepareQueueDepth < 1 || m.PrepareQueueDepth > prepareQueueDepthMax {
		v.add("metadata.prepare_queue_depth = %d: must be between 1 and %d", m.PrepareQueueDepth, prepareQueueDepthMax)
	}
	if m.JournalSlots > metadataJournalSlotsMax {
		v.add("metadata.journal_slots = %d: must be at most %d", m.JournalSlots, metadataJournalSlotsMax)
	}
	if floor := 4 * max(uint64(metadataCheckpointMarginFloor), m.PrepareQueueDepth); m.JournalSlots < floor {
		v.add("metadata.journal_slots = %d: must be at least 4 x max(64, metadata.prepare_queue_depth) = %d", m.JournalSlots, floor)
	}
	if m.ClientsTableMax < clientsTableMin || m.ClientsTableMax > clientsTableMax {
		v.add("metadata.clients_table_max = %d: must be between %d and %d", m.ClientsTableMax, clientsTableMin, clientsTableMax)
	}
}

func (c *Config) validatePartition(v *violations) {
	p := c.Partition
	if p.PrepareQueueDepth < 1 || p.PrepareQueueDepth > prepareQueueDepthMax {
		v.add("partition.prepare_queue_depth = %d: must be between 1 and %d", p.PrepareQueueDepth, prepareQueueDepthMax)
	}
	if p.EvictedRingCapacity < 1 || p.EvictedRingCapacity > evictedRingCapacityMax {
		v.add("partition.evicted_ring_capacity = %d: must be between 1 and %d", p.EvictedRingCapacity, evictedRingCapacityMax)
	}
	if p.EvictedRingBytesMax < 1 || p.EvictedRingBytesMax.Bytes() > evictedRingBytesMax {
		v.add("partition.evicted_ring_bytes_max = %s: must be between 1 B and 256 MiB", p.EvictedRingBytesMax)
	}
	if p.TransferServedCacheBytesMax < 1 || p.TransferServedCacheBytesMax.Bytes() > transferBytesMax {
		v.add("partition.transfer_served_cache_bytes_max = %s: must be between 1 B and 64 GiB", p.TransferServedCacheBytesMax)
	}
	if p.TransferArtifactBytesMax < 1 || p.TransferArtifactBytesMax.Bytes() > transferBytesMax {
		v.add("partition.transfer_artifact_bytes_max = %s: must be between 1 B and 64 GiB", p.TransferArtifactBytesMax)
	}
	if floor := SegmentSizeMaxBytes + c.MessageBus.MaxMessageSize.Bytes(); p.TransferArtifactBytesMax.Bytes() < floor {
		v.add("partition.transfer_artifact_bytes_max = %s: must be at least the largest segment (1 GiB) + message_bus.max_message_size = %s (%d B)",
			p.TransferArtifactBytesMax, ByteSize(floor), floor)
	}
	if p.WALBytesMax.Bytes() > walBytesMax {
		v.add("partition.wal_bytes_max = %s: must be at most 64 GiB", p.WALBytesMax)
	}
	if p.WALBytesMax < c.MessageBus.MaxMessageSize || p.WALBytesMax == 0 {
		v.add("partition.wal_bytes_max = %s: must be at least message_bus.max_message_size = %s (one whole prepare must fit)",
			p.WALBytesMax, c.MessageBus.MaxMessageSize)
	}
	if p.ScrubBytesPerSecond.Bytes() > GiB {
		v.add("partition.scrub_bytes_per_second = %s: must be at most 1 GiB (0 disables the scrubber)", p.ScrubBytesPerSecond)
	}
	for _, policy := range []struct{ key, value string }{
		{"durability", p.Durability}, {"consumer_offset_durability", p.ConsumerOffsetDurability},
	} {
		if policy.value != DurabilityReplicated && policy.value != DurabilityPersisted {
			v.add("partition.%s = %q: must be \"replicated\" or \"persisted\"", policy.key, policy.value)
		}
	}
}

func (c *Config) validateMessageBus(v *violations) {
	b := c.MessageBus
	if b.MaxBatch < 1 || b.MaxBatch > messageBusBatchMax {
		v.add("message_bus.max_batch = %d: must be between 1 and %d", b.MaxBatch, messageBusBatchMax)
	}
	if b.MaxMessageSize.Bytes() <= stateChunkHeaderBytes {
		v.add("message_bus.max_message_size = %s: must exceed the 256-byte state-chunk header", b.MaxMessageSize)
	}
	if b.PeerQueueCapacity == 0 {
		v.add("message_bus.peer_queue_capacity = 0: must be greater than 0")
	}
	if b.PeerQueueBytesMax.Bytes() == 0 {
		v.add("message_bus.peer_queue_bytes_max = 0: must be greater than 0")
	}
	for _, timer := range []struct {
		key   string
		value Duration
	}{
		{"reconnect_period", b.ReconnectPeriod}, {"close_peer_timeout", b.ClosePeerTimeout},
		{"close_grace", b.CloseGrace}, {"handshake_grace", b.HandshakeGrace},
	} {
		if timer.value.IsZero() {
			v.add("message_bus.%s = 0: must be nonzero", timer.key)
		}
	}
}

func (c *Config) validateSharding(v *violations) {
	s := c.System.Sharding
	for _, inbox := range []struct {
		key   string
		value uint64
	}{{"inbox_capacity", s.InboxCapacity}, {"reply_inbox_capacity", s.ReplyInboxCapacity}} {
		if inbox.value < 1 || inbox.value > inboxCapacityMax {
			v.add("system.sharding.%s = %d: must be between 1 and %d", inbox.key, inbox.value, inboxCapacityMax)
		}
	}
	drain, poll, join := s.ShutdownDrainTimeout.Duration, s.ShutdownPollInterval.Duration, s.ShutdownJoinTimeout.Duration
	if drain <= 0 || drain > shutdownDrainTimeoutMax {
		v.add("system.sharding.shutdown_drain_timeout = %s: must be greater than 0 and at most 600s", s.ShutdownDrainTimeout)
	}
	if poll <= 0 || poll > shutdownPollIntervalMax {
		v.add("system.sharding.shutdown_poll_interval = %s: must be greater than 0 and at most 5s", s.ShutdownPollInterval)
	} else if poll > drain {
		v.add("system.sharding.shutdown_poll_interval = %s: must not exceed system.sharding.shutdown_drain_timeout = %s", s.ShutdownPollInterval, s.ShutdownDrainTimeout)
	}
	if join < drain || join > shutdownJoinTimeoutMax {
		v.add("system.sharding.shutdown_join_timeout = %s: must be at least system.sharding.shutdown_drain_timeout = %s and at most 900s", s.ShutdownJoinTimeout, s.ShutdownDrainTimeout)
	}
	if s.ReconcilePeriodicInterval.Duration > reconcilePeriodicIntervalMax {
		v.add("system.sharding.reconcile_periodic_interval = %s: must be at most 30s", s.ReconcilePeriodicInterval)
	}
	if err := checkCPUAllocation(s.CPUAllocation); err != nil {
		v.add("system.sharding.cpu_allocation = %q: %v", s.CPUAllocation, err)
	}
}

// checkCPUAllocation accepts "all", a core count, a range "a..b" and
// "numa:<spec>", the shapes upstream documents.
func checkCPUAllocation(value string) error {
	switch {
	case value == "all":
		return nil
	case strings.HasPrefix(value, "numa:"):
		if strings.TrimPrefix(value, "numa:") == "" {
			return errors.New("numa: needs a spec such as numa:auto")
		}
		return nil
	case strings.Contains(value, ".."):
		low, high, _ := strings.Cut(value, "..")
		a, errLow := strconv.ParseUint(low, 10, 16)
		b, errHigh := strconv.ParseUint(high, 10, 16)
		if errLow != nil || errHigh != nil || a >= b {
			return errors.New("a range must be start..end with start < end")
		}
		return nil
	default:
		count, err := strconv.ParseUint(value, 10, 16)
		if err != nil || count == 0 {
			return errors.New(`must be "all", a core count > 0, a range "a..b" or "numa:<spec>"`)
		}
		return nil
	}
}

// validateTrustedIssuers checks [[http.jwt.trusted_issuers]] (http-api §2.4):
// an issuer and a JWKS URL (http or https) each, and a non-root user.
func (c *Config) validateTrustedIssuers(v *violations) {
	for i, ti := range c.HTTP.JWT.TrustedIssuers {
		name := fmt.Sprintf("http.jwt.trusted_issuers[%d]", i)
		if strings.TrimSpace(ti.Issuer) == "" {
			v.add("%s.issuer is empty: a trusted issuer needs the \"iss\" its tokens carry", name)
		}
		if ti.JWKSURL == "" {
			v.add("%s.jwks_url is empty: a trusted issuer needs the URL of its key set", name)
		} else if u, err := url.Parse(ti.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("%s.jwks_url = %q: must be an http(s) URL", name, ti.JWKSURL)
		}
		if ti.UserID == 0 {
			v.add("%s.user_id = 0: a trusted issuer's tokens must act as a non-root user (set a user id other than 0)", name)
		}
	}
}
