package wire

// Response bodies of §4.3.10 (Stats), §4.3.11 (DescribeOptions) and §5.1 (GetClusterMetadata).

// CacheMetric is one 32-byte cache entry of Stats.
type CacheMetric struct {
	StreamID, TopicID, PartitionID uint32
	Hits, Misses                   uint64
	HitRatio                       float32
}

// Stats is §4.3.10: a 108-byte fixed part, five Str32 strings, semver, cache entries and a tail.
type Stats struct {
	ProcessID           uint32
	CPUUsage            float32
	TotalCPUUsage       float32
	MemoryUsage         uint64
	TotalMemory         uint64
	AvailableMemory     uint64
	RunTime             uint64 // µs
	StartTime           uint64 // µs since epoch
	ReadBytes           uint64
	WrittenBytes        uint64
	MessagesSizeBytes   uint64
	StreamsCount        uint32
	TopicsCount         uint32
	PartitionsCount     uint32
	SegmentsCount       uint32
	MessagesCount       uint64
	ClientsCount        uint32
	ConsumerGroupsCount uint32
	Hostname            string
	OSName              string
	OSVersion           string
	KernelVersion       string
	ServerVersion       string
	ServerSemver        uint32 // packed semver; 0 = absent
	CacheMetrics        []CacheMetric
	ThreadsCount        uint32
	FreeDiskSpace       uint64
	TotalDiskSpace      uint64
}

// StatsFixedSize is the byte length of the fixed numeric prefix of Stats.
const StatsFixedSize = 108

const cacheMetricSize = 32

func (s *Stats) Append(b []byte) []byte {
	b = appendU32(b, s.ProcessID)
	b = appendF32(b, s.CPUUsage)
	b = appendF32(b, s.TotalCPUUsage)
	for _, v := range []uint64{s.MemoryUsage, s.TotalMemory, s.AvailableMemory, s.RunTime, s.StartTime,
		s.ReadBytes, s.WrittenBytes, s.MessagesSizeBytes} {
		b = appendU64(b, v)
	}
	for _, v := range []uint32{s.StreamsCount, s.TopicsCount, s.PartitionsCount, s.SegmentsCount} {
		b = appendU32(b, v)
	}
	b = appendU64(b, s.MessagesCount)
	b = appendU32(b, s.ClientsCount)
	b = appendU32(b, s.ConsumerGroupsCount)
	for _, v := range []string{s.Hostname, s.OSName, s.OSVersion, s.KernelVersion, s.ServerVersion} {
		b = appendStr32(b, v)
	}
	b = appendU32(b, s.ServerSemver)
	b = appendU32(b, uint32(len(s.CacheMetrics)))
	for _, c := range s.CacheMetrics {
		b = appendU32(appendU32(appendU32(b, c.StreamID), c.TopicID), c.PartitionID)
		b = appendF32(appendU64(appendU64(b, c.Hits), c.Misses), c.HitRatio)
	}
	b = appendU32(b, s.ThreadsCount)
	b = appendU64(b, s.FreeDiskSpace)
	return appendU64(b, s.TotalDiskSpace)
}

// DecodeStats decodes a GetStats payload.
func DecodeStats(b []byte) (Stats, error) {
	d := newDecoder("Stats", b)
	if len(b) < StatsFixedSize {
		d.fail("fixed", "stats need at least %d bytes, got %d", StatsFixedSize, len(b))
	}
	s := Stats{ProcessID: d.u32("process_id"), CPUUsage: d.f32("cpu_usage"), TotalCPUUsage: d.f32("total_cpu_usage")}
	for _, dst := range []*uint64{&s.MemoryUsage, &s.TotalMemory, &s.AvailableMemory, &s.RunTime, &s.StartTime,
		&s.ReadBytes, &s.WrittenBytes, &s.MessagesSizeBytes} {
		*dst = d.u64("memory_and_io")
	}
	s.StreamsCount = d.u32("streams_count")
	s.TopicsCount = d.u32("topics_count")
	s.PartitionsCount = d.u32("partitions_count")
	s.SegmentsCount = d.u32("segments_count")
	s.MessagesCount = d.u64("messages_count")
	s.ClientsCount = d.u32("clients_count")
	s.ConsumerGroupsCount = d.u32("consumer_groups_count")
	s.Hostname = d.str32("hostname")
	s.OSName = d.str32("os_name")
	s.OSVersion = d.str32("os_version")
	s.KernelVersion = d.str32("kernel_version")
	s.ServerVersion = d.str32("iggy_server_version")
	s.ServerSemver = d.u32("iggy_server_semver")
	n := d.count("cache_count", cacheMetricSize)
	if !d.failed() && n > 0 {
		s.CacheMetrics = make([]CacheMetric, 0, n)
		for i := 0; i < n; i++ {
			s.CacheMetrics = append(s.CacheMetrics, CacheMetric{
				StreamID: d.u32("cache.stream_id"), TopicID: d.u32("cache.topic_id"), PartitionID: d.u32("cache.partition_id"),
				Hits: d.u64("cache.hits"), Misses: d.u64("cache.misses"), HitRatio: d.f32("cache.hit_ratio")})
		}
	}
	s.ThreadsCount = d.u32("threads_count")
	s.FreeDiskSpace = d.u64("free_disk_space")
	s.TotalDiskSpace = d.u64("total_disk_space")
	d.end()
	return s, d.err()
}

// OptionSpec is one DescribeOptions entry: [Name8 key][kind u8][default Str32][description Str32]. The
// default is the raw value bytes of its kind (e.g. 8 LE bytes for Uint64, UTF-8 for String).
type OptionSpec struct {
	Key         string
	Kind        ValueKind
	Default     []byte
	Description string
}

// AppendOptionSpecs encodes a DescribeOptions payload: [count u32] + specs.
func AppendOptionSpecs(b []byte, specs []OptionSpec) []byte {
	b = appendU32(b, uint32(len(specs)))
	for _, s := range specs {
		b = appendName8(b, s.Key)
		b = appendU8(b, uint8(s.Kind))
		b = appendU32(b, uint32(len(s.Default)))
		b = append(b, s.Default...)
		b = appendStr32(b, s.Description)
	}
	return b
}

const optionSpecMinSize = 1 + 1 + 1 + 4 + 4

// DecodeOptionSpecs decodes a DescribeOptions payload.
func DecodeOptionSpecs(b []byte) ([]OptionSpec, error) {
	d := newDecoder("DescribeOptions", b)
	n := d.count("count", optionSpecMinSize)
	out := make([]OptionSpec, 0, n)
	for i := 0; i < n && !d.failed(); i++ {
		s := OptionSpec{Key: d.name8("option.key"), Kind: ValueKind(d.u8("option.kind"))}
		dl := d.u32("option.default.length")
		if !d.failed() && uint64(dl) > uint64(d.remaining()) {
			d.fail("option.default", "length %d exceeds the %d bytes left", dl, d.remaining())
		}
		s.Default = d.take("option.default", int(dl))
		s.Description = d.str32("option.description")
		out = append(out, s)
	}
	d.end()
	return out, d.err()
}

// Cluster node role and status bytes (§5.1). The SDKs only decode roles 0..1 and statuses 0..4.
const (
	RoleLeader   uint8 = 0
	RoleFollower uint8 = 1

	NodeHealthy     uint8 = 0
	NodeStarting    uint8 = 1
	NodeStopping    uint8 = 2
	NodeUnreachable uint8 = 3
	NodeMaintenance uint8 = 4

	// ClusterNodesMax is the node count the Go SDK accepts; this decoder applies the same limit.
	ClusterNodesMax = 64
)

// ClusterNode is one node of ClusterMetadata.
type ClusterNode struct {
	Name                       string
	IP                         string
	TCP, QUIC, HTTP, WebSocket uint16 // 0 = transport not enabled
	Role                       uint8
	Status                     uint8
}

// ClusterMetadata is the GetClusterMetadata payload (§5.1).
type ClusterMetadata struct {
	Name  string
	Nodes []ClusterNode
}

func (m *ClusterMetadata) Append(b []byte) []byte {
	b = appendStr32(b, m.Name)
	b = appendU32(b, uint32(len(m.Nodes)))
	for _, n := range m.Nodes {
		b = appendStr32(appendStr32(b, n.Name), n.IP)
		b = appendU16(appendU16(appendU16(appendU16(b, n.TCP), n.QUIC), n.HTTP), n.WebSocket)
		b = appendU8(appendU8(b, n.Role), n.Status)
	}
	return b
}

// Leader returns the first node with role Leader and status Healthy.
func (m *ClusterMetadata) Leader() (ClusterNode, bool) {
	for _, n := range m.Nodes {
		if n.Role == RoleLeader && n.Status == NodeHealthy {
			return n, true
		}
	}
	return ClusterNode{}, false
}

// DecodeClusterMetadata decodes a GetClusterMetadata payload with the SDKs' limits (≤ 64 nodes, role
// 0..1, status 0..4).
func DecodeClusterMetadata(b []byte) (ClusterMetadata, error) {
	d := newDecoder("ClusterMetadata", b)
	m := ClusterMetadata{Name: d.str32("name")}
	n := d.count("nodes_count", 4+4+8+2)
	if !d.failed() && n > ClusterNodesMax {
		d.fail("nodes_count", "%d nodes exceeds %d", n, ClusterNodesMax)
	}
	for i := 0; i < n && !d.failed(); i++ {
		node := ClusterNode{Name: d.str32("node.name"), IP: d.str32("node.ip")}
		node.TCP, node.QUIC, node.HTTP, node.WebSocket = d.u16("node.tcp"), d.u16("node.quic"), d.u16("node.http"), d.u16("node.websocket")
		node.Role = d.u8("node.role")
		node.Status = d.u8("node.status")
		if !d.failed() && node.Role > RoleFollower {
			d.fail("node.role", "role %d is not 0 (leader) or 1 (follower)", node.Role)
		}
		if !d.failed() && node.Status > NodeMaintenance {
			d.fail("node.status", "status %d is not 0..4", node.Status)
		}
		m.Nodes = append(m.Nodes, node)
	}
	d.end()
	return m, d.err()
}
