package client

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// Defaults match the upstream SDKs (wire-protocol.md §2.9).
const (
	DefaultResponseTimeout   = 30 * time.Second
	DefaultReplayInterval    = 50 * time.Millisecond
	DefaultNotAcceptedWindow = 2 * time.Second
	DefaultDialTimeout       = 5 * time.Second
	DefaultSDKName           = "lodestream-go"
	DefaultSDKVersion        = "0.1.0"
)

type config struct {
	responseTimeout   time.Duration
	replayInterval    time.Duration
	notAcceptedWindow time.Duration
	dialTimeout       time.Duration
	frameSizeMax      uint32
	protocolVersion   uint32
	sdkName           string
	sdkVersion        string
	logger            *slog.Logger
	transport         Transport
	tls               *tls.Config // nil: no TLS on TCP and WebSocket; QUIC's default
	httpRetries       int         // TransportHTTP: re-sends of a request that could not be sent

	// DialCluster only (cluster.go).
	leaderPollInterval time.Duration
	leaderlessWindow   time.Duration
	maxRedirects       int
	credentials        *credentials
	sendAttemptTimeout time.Duration // exactly_once.go
}

// credentials given to DialCluster by WithCredentials; moved into the client's login record at
// sign-in and never logged.
type credentials struct{ username, password string }

func defaultConfig() config {
	return config{
		responseTimeout:   DefaultResponseTimeout,
		replayInterval:    DefaultReplayInterval,
		notAcceptedWindow: DefaultNotAcceptedWindow,
		dialTimeout:       DefaultDialTimeout,
		frameSizeMax:      wire.FrameSizeMax,
		protocolVersion:   wire.ProtocolVersion,
		sdkName:           DefaultSDKName,
		sdkVersion:        DefaultSDKVersion,
		logger:            slog.New(slog.DiscardHandler),
		transport:         TransportTCP,
		httpRetries:       DefaultHTTPRetries,

		leaderPollInterval: DefaultLeaderPollInterval,
		leaderlessWindow:   DefaultLeaderlessWindow,
		maxRedirects:       DefaultMaxRedirects,
		sendAttemptTimeout: DefaultSendAttemptTimeout,
	}
}

// Option configures a Client.
type Option func(*config)

// WithResponseTimeout sets the budget of one request across all transient replays (default 30 s).
func WithResponseTimeout(d time.Duration) Option { return func(c *config) { c.responseTimeout = d } }

// WithReplayInterval sets the pause between transient replays (default 50 ms).
func WithReplayInterval(d time.Duration) Option { return func(c *config) { c.replayInterval = d } }

// WithNotAcceptedWindow sets how long TransientNotAccepted (58) is replayed before it is returned
// (default 2 s).
func WithNotAcceptedWindow(d time.Duration) Option {
	return func(c *config) { c.notAcceptedWindow = d }
}

// WithDialTimeout bounds the TCP dial (default 5 s) in addition to the Dial context.
func WithDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

// WithProtocolVersion overrides the packed protocol version sent at login (tests of the version gate).
func WithProtocolVersion(v uint32) Option { return func(c *config) { c.protocolVersion = v } }

// WithSDK sets the sdk_name / sdk_version sent at login.
func WithSDK(name, version string) Option {
	return func(c *config) { c.sdkName, c.sdkVersion = name, version }
}

// WithLogger sets the structured logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithLeaderPolling sets how often a DialCluster client polls cluster metadata while no leader is
// named, and for how long before it continues on the contacted node (defaults 250 ms and 5 s).
func WithLeaderPolling(interval, window time.Duration) Option {
	return func(c *config) { c.leaderPollInterval, c.leaderlessWindow = interval, window }
}

// WithMaxRedirects caps the leader redirects of one settlement (DialCluster; default 3).
func WithMaxRedirects(n int) Option { return func(c *config) { c.maxRedirects = n } }

// WithCredentials makes DialCluster sign in with username and password and settle on the leader
// before it returns. The credentials stay in memory for re-logins after redirects and reconnects;
// they are never logged. Dial ignores this option.
func WithCredentials(username, password string) Option {
	return func(c *config) { c.credentials = &credentials{username: username, password: password} }
}
