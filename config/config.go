// Package config loads, layers and validates the server configuration:
// embedded defaults (defaults.toml) < the TOML file named by IGGY_CONFIG_PATH
// < IGGY_* environment variables. Key names follow upstream Apache Iggy's
// core/server/config.toml; keys this project adds are marked "ours" in
// config.toml.
package config

// Config is the whole server configuration. Field tags are the TOML key
// names; env names derive from them (path upper-cased, "." → "_").
type Config struct {
	ConsumerGroup       ConsumerGroupConfig       `toml:"consumer_group"`
	DataMaintenance     DataMaintenanceConfig     `toml:"data_maintenance"`
	PersonalAccessToken PersonalAccessTokenConfig `toml:"personal_access_token"`
	Heartbeat           HeartbeatConfig           `toml:"heartbeat"`
	Login               LoginConfig               `toml:"login"`
	System              SystemConfig              `toml:"system"`
	QUIC                QUICConfig                `toml:"quic"`
	TCP                 TCPConfig                 `toml:"tcp"`
	HTTP                HTTPConfig                `toml:"http"`
	WebSocket           WebSocketConfig           `toml:"websocket"`
	Telemetry           TelemetryConfig           `toml:"telemetry"`
	Cluster             ClusterConfig             `toml:"cluster"`
	Metadata            MetadataConfig            `toml:"metadata"`
	Partition           PartitionConfig           `toml:"partition"`
	MessageBus          MessageBusConfig          `toml:"message_bus"`
}

// ConsumerGroupConfig is [consumer_group].
type ConsumerGroupConfig struct {
	RebalancingTimeout Duration `toml:"rebalancing_timeout"`
}

// DataMaintenanceConfig is [data_maintenance].
type DataMaintenanceConfig struct {
	Messages MessagesMaintenanceConfig `toml:"messages"`
}

// MessagesMaintenanceConfig is [data_maintenance.messages].
type MessagesMaintenanceConfig struct {
	CleanerEnabled bool     `toml:"cleaner_enabled"`
	Interval       Duration `toml:"interval"`
}

// PersonalAccessTokenConfig is [personal_access_token].
type PersonalAccessTokenConfig struct {
	MaxTokensPerUser uint32                `toml:"max_tokens_per_user"`
	Cleaner          PeriodicCleanerConfig `toml:"cleaner"`
}

// PeriodicCleanerConfig is an enabled/interval pair for a background sweep.
type PeriodicCleanerConfig struct {
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
}

// LoginConfig is [login] (ours): failed-login limiting. Failures are
// counted per source IP address and per username in token buckets of
// FailedAttemptsPer*Max tokens, one token returning every
// FailedAttemptsRefillInterval; a login whose address or username has no
// token left is refused without hashing. TrackedEntriesMax bounds each of
// the two tables.
type LoginConfig struct {
	FailedAttemptsPerAddressMax  uint64   `toml:"failed_attempts_per_address_max"`
	FailedAttemptsPerUserMax     uint64   `toml:"failed_attempts_per_user_max"`
	FailedAttemptsRefillInterval Duration `toml:"failed_attempts_refill_interval"`
	TrackedEntriesMax            uint64   `toml:"tracked_entries_max"`
}

// HeartbeatConfig is [heartbeat]: how often clients must ping.
type HeartbeatConfig struct {
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
}

// SystemConfig is [system].
type SystemConfig struct {
	Path string `toml:"path"`
	// OpenFilesMax bounds the partition segment files held open at once
	// (the open-file cache, issue 15 point 8); 0 derives it from
	// RLIMIT_NOFILE (partitions.AutoOpenFilesMax).
	OpenFilesMax uint64           `toml:"open_files_max"`
	Runtime      PathConfig       `toml:"runtime"`
	Logging      LoggingConfig    `toml:"logging"`
	Encryption   EncryptionConfig `toml:"encryption"`
	Stream       PathConfig       `toml:"stream"`
	Topic        PathConfig       `toml:"topic"`
	Partition    SystemPartition  `toml:"partition"`
	Segment      SegmentConfig    `toml:"segment"`
	Recovery     RecoveryConfig   `toml:"recovery"`
	MemoryPool   MemoryPoolConfig `toml:"memory_pool"`
	Sharding     ShardingConfig   `toml:"sharding"`
}

// PathConfig is a section holding one relative directory name.
type PathConfig struct {
	Path string `toml:"path"`
}

// LoggingConfig is [system.logging].
type LoggingConfig struct {
	Path                  string   `toml:"path"`
	Level                 string   `toml:"level"`
	FileEnabled           bool     `toml:"file_enabled"`
	MaxFileSize           ByteSize `toml:"max_file_size"`
	MaxTotalSize          ByteSize `toml:"max_total_size"`
	RotationCheckInterval Duration `toml:"rotation_check_interval"`
	Retention             Duration `toml:"retention"`
}

// EncryptionConfig is [system.encryption].
type EncryptionConfig struct {
	Enabled bool   `toml:"enabled"`
	Key     Secret `toml:"key"`
}

// SystemPartition is [system.partition].
type SystemPartition struct {
	Path             string `toml:"path"`
	ValidateChecksum bool   `toml:"validate_checksum"`
}

// SegmentConfig is [system.segment]. Segment size is a per-topic option
// upstream; see SegmentSizeDefaultBytes.
type SegmentConfig struct {
	ArchiveExpired bool `toml:"archive_expired"`
}

// RecoveryConfig is [system.recovery].
type RecoveryConfig struct {
	RecreateMissingState bool `toml:"recreate_missing_state"`
}

// MemoryPoolConfig is [system.memory_pool].
type MemoryPoolConfig struct {
	Enabled        bool     `toml:"enabled"`
	Size           ByteSize `toml:"size"`
	BucketCapacity uint32   `toml:"bucket_capacity"`
}

// ShardingConfig is [system.sharding]. This server does not shard; the
// keys are accepted and validated so upstream configs load unchanged.
type ShardingConfig struct {
	CPUAllocation             string   `toml:"cpu_allocation"`
	PinCores                  bool     `toml:"pin_cores"`
	InboxCapacity             uint64   `toml:"inbox_capacity"`
	ReplyInboxCapacity        uint64   `toml:"reply_inbox_capacity"`
	ShutdownDrainTimeout      Duration `toml:"shutdown_drain_timeout"`
	ShutdownPollInterval      Duration `toml:"shutdown_poll_interval"`
	ShutdownJoinTimeout       Duration `toml:"shutdown_join_timeout"`
	ReconcilePeriodicInterval Duration `toml:"reconcile_periodic_interval"`
}

// QUICConfig is [quic].
type QUICConfig struct {
	Enabled                  bool                  `toml:"enabled"`
	Address                  string                `toml:"address"`
	MaxConcurrentBidiStreams uint64                `toml:"max_concurrent_bidi_streams"`
	InitialMTU               ByteSize              `toml:"initial_mtu"`
	SendWindow               ByteSize              `toml:"send_window"`
	ReceiveWindow            ByteSize              `toml:"receive_window"`
	StreamReceiveWindow      ByteSize              `toml:"stream_receive_window"`
	KeepAliveInterval        Duration              `toml:"keep_alive_interval"`
	MaxIdleTimeout           Duration              `toml:"max_idle_timeout"`
	Certificate              QUICCertificateConfig `toml:"certificate"`
}

// QUICCertificateConfig is [quic.certificate].
type QUICCertificateConfig struct {
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
}

// TCPConfig is [tcp]. The connection limits (connections_max and below)
// are ours.
type TCPConfig struct {
	Enabled                  bool      `toml:"enabled"`
	Address                  string    `toml:"address"`
	ConnectionsMax           uint64    `toml:"connections_max"`
	ConnectionsPerAddressMax uint64    `toml:"connections_per_address_max"`
	LoginTimeout             Duration  `toml:"login_timeout"`
	FrameReadTimeout         Duration  `toml:"frame_read_timeout"`
	SendQueueBytesMax        ByteSize  `toml:"send_queue_bytes_max"`
	OutboundBytesMax         ByteSize  `toml:"outbound_bytes_max"`
	TLS                      TLSConfig `toml:"tls"`
}

// TLSConfig is a listener's [*.tls] table.
type TLSConfig struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
}

// HTTPConfig is [http].
type HTTPConfig struct {
	Enabled        bool              `toml:"enabled"`
	Address        string            `toml:"address"`
	MaxRequestSize ByteSize          `toml:"max_request_size"`
	WebUI          bool              `toml:"web_ui"`
	WebUIDir       string            `toml:"web_ui_dir"`
	CORS           HTTPCORSConfig    `toml:"cors"`
	JWT            HTTPJWTConfig     `toml:"jwt"`
	Metrics        HTTPMetricsConfig `toml:"metrics"`
	TLS            HTTPTLSConfig     `toml:"tls"`
}

// HTTPCORSConfig is [http.cors].
type HTTPCORSConfig struct {
	Enabled             bool     `toml:"enabled"`
	AllowedMethods      []string `toml:"allowed_methods"`
	AllowedOrigins      []string `toml:"allowed_origins"`
	AllowedHeaders      []string `toml:"allowed_headers"`
	ExposedHeaders      []string `toml:"exposed_headers"`
	AllowCredentials    bool     `toml:"allow_credentials"`
	AllowPrivateNetwork bool     `toml:"allow_private_network"`
}

// HTTPJWTConfig is [http.jwt]. AccessTokenExpiry zero means tokens never
// expire ("none"/"unlimited").
type HTTPJWTConfig struct {
	Algorithm         string          `toml:"algorithm"`
	Issuer            string          `toml:"issuer"`
	Audience          string          `toml:"audience"`
	ValidIssuers      []string        `toml:"valid_issuers"`
	ValidAudiences    []string        `toml:"valid_audiences"`
	AccessTokenExpiry Duration        `toml:"access_token_expiry"`
	ClockSkew         Duration        `toml:"clock_skew"`
	NotBefore         Duration        `toml:"not_before"`
	EncodingSecret    Secret          `toml:"encoding_secret"`
	DecodingSecret    Secret          `toml:"decoding_secret"`
	UseBase64Secret   bool            `toml:"use_base64_secret"`
	TrustedIssuers    []TrustedIssuer `toml:"trusted_issuers"`
}

// TrustedIssuer is one [[http.jwt.trusted_issuers]] entry.
type TrustedIssuer struct {
	Issuer   string `toml:"issuer"`
	Audience string `toml:"audience"`
	JWKSURL  string `toml:"jwks_url"`
	UserID   uint32 `toml:"user_id"`
}

// HTTPMetricsConfig is [http.metrics].
type HTTPMetricsConfig struct {
	Enabled  bool   `toml:"enabled"`
	Endpoint string `toml:"endpoint"`
}

// HTTPTLSConfig is [http.tls].
type HTTPTLSConfig struct {
	Enabled  bool   `toml:"enabled"`
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
}

// WebSocketConfig is [websocket]. Unset optional sizes (nil) use the
// transport's built-in defaults.
type WebSocketConfig struct {
	Enabled              bool      `toml:"enabled"`
	Address              string    `toml:"address"`
	ReadBufferSize       *ByteSize `toml:"read_buffer_size"`
	WriteBufferSize      *ByteSize `toml:"write_buffer_size"`
	MaxWriteBufferSize   *ByteSize `toml:"max_write_buffer_size"`
	MaxMessageSize       *ByteSize `toml:"max_message_size"`
	MaxFrameSize         *ByteSize `toml:"max_frame_size"`
	AcceptUnmaskedFrames bool      `toml:"accept_unmasked_frames"`
	TLS                  TLSConfig `toml:"tls"`
}

// TelemetryConfig is [telemetry].
type TelemetryConfig struct {
	Enabled     bool              `toml:"enabled"`
	ServiceName string            `toml:"service_name"`
	Logs        TelemetryEndpoint `toml:"logs"`
	Traces      TelemetryEndpoint `toml:"traces"`
}

// TelemetryEndpoint is [telemetry.logs] / [telemetry.traces].
type TelemetryEndpoint struct {
	Transport string `toml:"transport"`
	Endpoint  string `toml:"endpoint"`
}

// MetadataConfig is [metadata]: the metadata consensus plane.
type MetadataConfig struct {
	PrepareQueueDepth uint64 `toml:"prepare_queue_depth"`
	JournalSlots      uint64 `toml:"journal_slots"`
	ClientsTableMax   uint64 `toml:"clients_table_max"`
}

// Durability policies a topic may choose at creation.
const (
	DurabilityReplicated = "replicated"
	DurabilityPersisted  = "persisted"
)

// PartitionConfig is [partition]: the per-partition consensus plane.
// WALBytesMax, Durability and ConsumerOffsetDurability are ours.
type PartitionConfig struct {
	PrepareQueueDepth           uint64   `toml:"prepare_queue_depth"`
	EvictedRingCapacity         uint64   `toml:"evicted_ring_capacity"`
	EvictedRingBytesMax         ByteSize `toml:"evicted_ring_bytes_max"`
	TransferServedCacheBytesMax ByteSize `toml:"transfer_served_cache_bytes_max"`
	TransferArtifactBytesMax    ByteSize `toml:"transfer_artifact_bytes_max"`
	WALBytesMax                 ByteSize `toml:"wal_bytes_max"`
	Durability                  string   `toml:"durability"`
	ConsumerOffsetDurability    string   `toml:"consumer_offset_durability"`
	// ScrubBytesPerSecond paces the background scrubber that re-verifies
	// stored batches (issue 15); 0 disables it. Ours.
	ScrubBytesPerSecond ByteSize `toml:"scrub_bytes_per_second"`
}

// MessageBusConfig is [message_bus]: the replica-to-replica transport.
type MessageBusConfig struct {
	MaxBatch          uint64   `toml:"max_batch"`
	MaxMessageSize    ByteSize `toml:"max_message_size"`
	PeerQueueCapacity uint64   `toml:"peer_queue_capacity"`
	// PeerQueueBytesMax bounds the bytes queued to one peer (frames whose
	// bodies are larger than the budget still go alone). Ours.
	PeerQueueBytesMax ByteSize `toml:"peer_queue_bytes_max"`
	ReconnectPeriod   Duration `toml:"reconnect_period"`
	ClosePeerTimeout  Duration `toml:"close_peer_timeout"`
	CloseGrace        Duration `toml:"close_grace"`
	HandshakeGrace    Duration `toml:"handshake_grace"`
}

// SegmentSizeDefaultBytes is the segment size of a topic that does not set
// the per-topic segment_size option (upstream moved system.segment.size to
// a topic option; it is no longer a server key).
const SegmentSizeDefaultBytes = GiB

// SegmentSizeMaxBytes is the largest per-topic segment_size upstream allows.
const SegmentSizeMaxBytes = GiB
