package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/node"
	"github.com/lodestream/lodestream/wire"
)

// Metrics is the Prometheus registry of one server: request counters and
// latency histograms for both transports (it is the node's
// RequestObserver), HTTP bytes and connections, and the node's state
// sampled at scrape time.
type Metrics struct {
	registry     *prometheus.Registry
	httpRequests prometheus.Counter
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	bytesIn      *prometheus.CounterVec
	bytesOut     *prometheus.CounterVec
	httpConns    prometheus.Gauge
	// partitionRetries counts partition writes sent to another node after
	// a local 58 (partition_retry.go), one per node tried.
	partitionRetries prometheus.Counter
	// fsync is the storage sync latency by kind (journal.ObserveSync).
	fsync *prometheus.HistogramVec
	// collectors are everything registered (the dashboard test reads their
	// descriptions).
	collectors  []prometheus.Collector
	node        atomic.Pointer[node.Node]
	binaryNames sync.Map // [operation, code] → label
}

// NewMetrics builds the registry (the node is attached when HTTP starts).
func NewMetrics() *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	m.httpRequests = prometheus.NewCounter(prometheus.CounterOpts{Name: "http_requests_total",
		Help: "HTTP requests received, CORS preflights included."})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggy_requests_total",
		Help: "Requests handled, by transport, command and outcome (HTTP status class, or ok/error for the binary protocol)."},
		[]string{"transport", "command", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "iggy_request_duration_seconds",
		Help:    "Time to handle a request, by transport and command.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
		[]string{"transport", "command"})
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggy_received_bytes_total",
		Help: "Request bytes received (binary: whole frames; HTTP: declared bodies)."}, []string{"transport"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggy_sent_bytes_total",
		Help: "Response body bytes sent (HTTP)."}, []string{"transport"})
	m.httpConns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "iggy_http_connections",
		Help: "Open HTTP connections."})
	m.partitionRetries = prometheus.NewCounter(prometheus.CounterOpts{Name: "iggy_http_partition_write_retries_total",
		Help: "HTTP partition writes sent to another node after this node refused them with TransientNotAccepted (one per node tried)."})
	m.fsync = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "iggy_fsync_duration_seconds",
		Help:    "Time of one durable sync, by what it made durable: metadata_wal (fdatasync of an append), superblock (file fsync, rename, directory fsync), snapshot, segment (log and index fdatasync).",
		Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}},
		[]string{"kind"})
	m.collectors = []prometheus.Collector{m.httpRequests, m.requests, m.latency, m.bytesIn, m.bytesOut, m.httpConns,
		m.partitionRetries, m.fsync, nodeCollector{m}}
	m.registry.MustRegister(m.collectors...)
	return m
}

// attach makes the node's state part of every scrape.
func (m *Metrics) attach(n *node.Node) {
	m.node.Store(n)
	journal.SetSyncObserver(func(kind string, d time.Duration) { m.fsync.WithLabelValues(kind).Observe(d.Seconds()) })
}

// ObserveBinaryRequest implements node.RequestObserver.
func (m *Metrics) ObserveBinaryRequest(op wire.Operation, code wire.CommandCode, frameBytes int, start time.Time) {
	key := [2]uint32{uint32(op), uint32(code)}
	name, ok := m.binaryNames.Load(key)
	if !ok {
		name = commandLabel(op, code)
		m.binaryNames.Store(key, name)
	}
	label := name.(string)
	m.requests.WithLabelValues("tcp", label, "handled").Inc()
	m.latency.WithLabelValues("tcp", label).Observe(time.Since(start).Seconds())
	m.bytesIn.WithLabelValues("tcp").Add(float64(frameBytes))
}

// commandLabel is a command's snake_case name: the code's, else the
// operation's (replicated frames may carry no code). Bounded label values:
// unknown ones share one.
func commandLabel(op wire.Operation, code wire.CommandCode) string {
	var name string
	switch {
	case code != 0 && code.Known():
		name = code.String()
	case op.Declared():
		name = op.String()
		if c, ok := wire.CodeForOperation(op); ok {
			name = c.String()
		}
	default:
		return "unknown"
	}
	out := make([]byte, 0, len(name)+4)
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if ch >= 'A' && ch <= 'Z' {
			if i > 0 {
				out = append(out, '_')
			}
			ch += 'a' - 'A'
		}
		out = append(out, ch)
	}
	return string(out)
}

func (m *Metrics) observeHTTP(route string, status int, sent, received int64, start time.Time) {
	m.requests.WithLabelValues("http", route, strconv.Itoa(status/100)+"xx").Inc()
	m.latency.WithLabelValues("http", route).Observe(time.Since(start).Seconds())
	m.bytesOut.WithLabelValues("http").Add(float64(sent))
	if received > 0 {
		m.bytesIn.WithLabelValues("http").Add(float64(received))
	}
}

func (m *Metrics) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.httpRequests.Inc()
		next.ServeHTTP(w, r)
	})
}

func (m *Metrics) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		m.httpConns.Inc()
	case http.StateClosed, http.StateHijacked:
		m.httpConns.Dec()
	}
}

// metricsText: GET <http.metrics.endpoint> (any authenticated user).
func (c *call) metricsText() {
	if c.s.metrics == nil {
		writeNotFound(c.w)
		return
	}
	promhttp.HandlerFor(c.s.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP(c.w, c.r)
}

// nodeCollector samples node.Observe at scrape time.
type nodeCollector struct{ m *Metrics }

var (
	descGroupPrimary = prometheus.NewDesc("iggy_consensus_primary", "1 when this node is the group's primary.", []string{"group"}, nil)
	descGroupNormal  = prometheus.NewDesc("iggy_consensus_status_normal", "1 when the group is in normal status (not in a view change).", []string{"group"}, nil)
	descGroupView    = prometheus.NewDesc("iggy_consensus_view", "The group's current view.", []string{"group"}, nil)
	descGroupCommit  = prometheus.NewDesc("iggy_consensus_commit_op", "Highest op this node applied (commit_min).", []string{"group"}, nil)
	descGroupKnown   = prometheus.NewDesc("iggy_consensus_commit_max_op", "Highest op known committed (commit_max).", []string{"group"}, nil)
	descGroupLag     = prometheus.NewDesc("iggy_consensus_commit_lag_ops", "Ops known committed but not applied here (commit_max - commit_min).", []string{"group"}, nil)
	descConnections  = prometheus.NewDesc("iggy_connections", "Open binary-protocol connections.", []string{"transport"}, nil)
	descSessions     = prometheus.NewDesc("iggy_sessions", "Client sessions, by kind (binary connections, HTTP credentials).", []string{"kind"}, nil)
	descRefused      = prometheus.NewDesc("iggy_partition_writes_refused_total", "Partition writes refused (58) because this node is a backup of the partition's group.", nil, nil)
	descPartGroups   = prometheus.NewDesc("iggy_partition_groups", "Partition consensus groups on this node, by its role in them.", []string{"role"}, nil)
	descUnrouted     = prometheus.NewDesc("iggy_replica_messages_unrouted_total", "Replica-bus messages for groups this node does not run on the bus.", nil, nil)
	descStreams      = prometheus.NewDesc("streams", "total count of streams", nil, nil)
	descTopics       = prometheus.NewDesc("topics", "total count of topics", nil, nil)
	descPartitions   = prometheus.NewDesc("partitions", "total count of partitions", nil, nil)
	descSegments     = prometheus.NewDesc("segments", "total count of segments", nil, nil)
	descMessages     = prometheus.NewDesc("messages", "total count of messages", nil, nil)
	descUsers        = prometheus.NewDesc("users", "total count of users", nil, nil)
	descClients      = prometheus.NewDesc("clients", "total count of clients", nil, nil)
	descGroups       = prometheus.NewDesc("consumer_groups", "total count of consumer groups", nil, nil)
	descMessageBytes = prometheus.NewDesc("iggy_messages_bytes", "Bytes of stored messages.", nil, nil)

	descPartViewChange = prometheus.NewDesc("iggy_partition_groups_view_change", "Partition groups on this node not in normal status (view change or recovery).", nil, nil)
	descPartViewMax    = prometheus.NewDesc("iggy_partition_view_max", "Highest view among this node's partition groups.", nil, nil)
	descPartLagSum     = prometheus.NewDesc("iggy_partition_commit_lag_ops_sum", "Ops known committed but not applied here, summed over partition groups.", nil, nil)
	descPartLagMax     = prometheus.NewDesc("iggy_partition_commit_lag_ops_max", "Largest commit lag of one partition group on this node.", nil, nil)
	descPartLagTop     = prometheus.NewDesc("iggy_partition_commit_lag_ops", "Commit lag of the partition groups that lag most on this node (at most 8 series; lag > 0 only).", []string{"stream", "topic", "partition", "role"}, nil)
	descWALBytes       = prometheus.NewDesc("iggy_metadata_wal_bytes", "Size of the metadata WAL on disk.", nil, nil)
	descBusQueue       = prometheus.NewDesc("iggy_replica_bus_queue_frames", "Frames waiting in the replica-bus send queue to a peer.", []string{"peer"}, nil)
	descBusDropped     = prometheus.NewDesc("iggy_replica_bus_frames_dropped_total", "Replica-bus frames dropped, by reason.", []string{"reason"}, nil)
	descBusSent        = prometheus.NewDesc("iggy_replica_bus_frames_sent_total", "Replica-bus frames written to peers.", nil, nil)
	descBusReceived    = prometheus.NewDesc("iggy_replica_bus_frames_received_total", "Replica-bus frames received and delivered.", nil, nil)
	descBusInvalid     = prometheus.NewDesc("iggy_replica_bus_frames_invalid_total", "Replica-bus frames received and dropped as invalid.", nil, nil)

	descOpenFiles         = prometheus.NewDesc("iggy_open_files", "Partition segment files the open-file cache holds open now.", nil, nil)
	descOpenFilesMax      = prometheus.NewDesc("iggy_open_files_max", "The open-file cache's bound (system.open_files_max, or derived from RLIMIT_NOFILE).", nil, nil)
	descOpenFileOpens     = prometheus.NewDesc("iggy_open_file_opens_total", "Segment files the open-file cache opened (first opens and reopens).", nil, nil)
	descOpenFileEvictions = prometheus.NewDesc("iggy_open_file_evictions_total", "Idle segment files the open-file cache closed to make room (synced first when their topic is persisted and they were written).", nil, nil)
	descOpenFileWaits     = prometheus.NewDesc("iggy_open_file_waits_total", "Times an open waited because every cached descriptor was in use.", nil, nil)
)

func (nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGroupPrimary, descGroupNormal, descGroupView, descGroupCommit, descGroupKnown,
		descGroupLag, descConnections, descSessions, descRefused, descUnrouted, descStreams, descTopics, descPartitions,
		descSegments, descMessages, descUsers, descClients, descGroups, descMessageBytes, descPartGroups,
		descPartViewChange, descPartViewMax, descPartLagSum, descPartLagMax, descPartLagTop, descWALBytes, descBusQueue,
		descBusDropped, descBusSent, descBusReceived, descBusInvalid, descOpenFiles, descOpenFilesMax, descOpenFileOpens,
		descOpenFileEvictions, descOpenFileWaits} {
		ch <- d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.m.node.Load()
	if n == nil {
		return
	}
	o := n.Observe()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, g := range o.Groups {
		gauge(descGroupPrimary, b2f(g.Primary), g.Group)
		gauge(descGroupNormal, b2f(g.Normal), g.Group)
		gauge(descGroupView, float64(g.View), g.Group)
		gauge(descGroupCommit, float64(g.CommitMin), g.Group)
		gauge(descGroupKnown, float64(g.CommitMax), g.Group)
		gauge(descGroupLag, float64(g.CommitMax-g.CommitMin), g.Group)
	}
	gauge(descPartGroups, float64(o.PartitionPrimaries), "primary")
	gauge(descPartGroups, float64(o.PartitionBackups), "backup")
	gauge(descConnections, float64(o.Connections), "tcp")
	gauge(descSessions, float64(o.Sessions), "binary")
	gauge(descSessions, float64(o.PrincipalSessions), "http")
	counter(descRefused, float64(o.PartitionWritesRefused))
	counter(descUnrouted, float64(o.UnroutedReplicaFrames))
	gauge(descStreams, float64(o.Streams))
	gauge(descTopics, float64(o.Topics))
	gauge(descPartitions, float64(o.Partitions))
	gauge(descSegments, float64(o.Segments))
	gauge(descMessages, float64(o.Messages))
	gauge(descUsers, float64(o.Users))
	gauge(descClients, float64(o.Sessions))
	gauge(descGroups, float64(o.ConsumerGroups))
	gauge(descMessageBytes, float64(o.MessagesBytes))
	gauge(descPartViewChange, float64(o.PartitionViewChanges))
	gauge(descPartViewMax, float64(o.PartitionViewMax))
	gauge(descPartLagSum, float64(o.PartitionLagSum))
	gauge(descPartLagMax, float64(o.PartitionLagMax))
	for _, p := range o.PartitionLagging {
		role := "backup"
		if p.Primary {
			role = "primary"
		}
		gauge(descPartLagTop, float64(p.LagOps), strconv.FormatUint(uint64(p.Stream), 10), strconv.FormatUint(uint64(p.Topic), 10),
			strconv.FormatUint(uint64(p.Partition), 10), role)
	}
	gauge(descWALBytes, float64(o.MetadataWALBytes))
	if f := o.OpenFiles; f != nil {
		gauge(descOpenFiles, float64(f.Open))
		gauge(descOpenFilesMax, float64(f.Max))
		counter(descOpenFileOpens, float64(f.Opens))
		counter(descOpenFileEvictions, float64(f.Evictions))
		counter(descOpenFileWaits, float64(f.Waits))
	}
	if b := o.Bus; b != nil {
		for peer, depth := range o.BusQueueDepths {
			gauge(descBusQueue, float64(depth), strconv.FormatUint(uint64(peer), 10))
		}
		counter(descBusDropped, float64(b.FramesDroppedQueueFull), "queue_full")
		counter(descBusDropped, float64(b.FramesDroppedNotConnected), "not_connected")
		counter(descBusDropped, float64(b.FramesDroppedOversize), "oversize")
		counter(descBusDropped, float64(b.FramesDroppedEncode), "encode")
		counter(descBusDropped, float64(b.FramesDroppedNoHandler), "no_handler")
		counter(descBusSent, float64(b.FramesSent))
		counter(descBusReceived, float64(b.FramesReceived))
		counter(descBusInvalid, float64(b.FramesInvalid))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
